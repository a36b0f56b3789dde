"""The words of response curves (report/words/curves.py) and their terminal section: a table of
median [CI] per level and series, and one sentence per pair of series."""

from __future__ import annotations

import dataclasses
import io
import sys
from pathlib import Path

import numpy as np
from rich.console import Console

from benchsage.analyze.curves import CurveComparison, curve_analysis
from benchsage.analyze.pipeline import analyze_loaded
from benchsage.report.quantity import interval
from benchsage.report.terminal import render_analysis
from benchsage.report.words.curves import curve_pair_sentence, pairs, series_name
from benchsage.stats.compare import compare

sys.path.insert(0, str(Path(__file__).parents[2] / "analyze"))
from curves_data import swept_columns, swept_table  # noqa: E402


def _row(level: int, ratio: float, better: str | None, p_adjusted: float | None, unit: str = "s",
         simultaneous: tuple[float, float] | None = None) -> CurveComparison:
    """A comparison at one level with the given outcome (the samples only give compare its shape);
    its simultaneous interval ratio x [0.9, 1.1] unless given."""
    c = dataclasses.replace(compare(np.arange(1.0, 9.0), np.arange(1.0, 9.0)), ratio=ratio, ci=(ratio * 0.95, ratio * 1.05),
                            p=0.0 if p_adjusted is None else p_adjusted / 4)
    return CurveComparison("wrk", "p99", "conns", level, {}, {"governor": "schedutil"}, {"governor": "performance"}, c,
                           p_adjusted, better, True, unit, False, simultaneous or (ratio * 0.9, ratio * 1.1))


def test_the_sentence_says_where_the_series_match_and_where_they_differ() -> None:
    rows = [_row(2, 1.01, None, 1.0), _row(8, 0.99, None, 1.0), _row(32, 1.41, "b", 0.002)]
    assert curve_pair_sentence(rows) == (
        "p99 of wrk: schedutil matches performance up to conns=8 and is 1.41× slower at 32 "
        "(ratio 1.41 [1.27, 1.55] simultaneous, p_adj 0.002)")


def test_the_sentence_of_curves_that_match_everywhere_or_differ_in_stretches() -> None:
    same = [_row(2, 1.0, None, 1.0), _row(8, 1.0, None, 0.5)]
    assert curve_pair_sentence(same) == "p99 of wrk: schedutil matches performance at every level"
    rows = [_row(2, 0.8, "a", 0.01), _row(8, 0.7, "a", 0.001), _row(16, 1.0, None, 1.0), _row(32, 1.2, "b", 0.03),
            _row(64, 1.3, "b", 0.02)]
    assert curve_pair_sentence(rows) == (
        "p99 of wrk: schedutil is 1.43× faster up to conns=8 (ratio 0.700 [0.630, 0.770] simultaneous, p_adj 0.001, most at 8), "
        "matches performance at 16 and is 1.30× slower from 32 on (ratio 1.30 [1.17, 1.43] simultaneous, p_adj 0.02, most at 64)")
    rps = [dataclasses.replace(_row(2, 0.5, "b", 0.001, unit="1/s"), metric="rps", higher_is_better=True)]
    assert curve_pair_sentence(rps) == "rps of wrk: schedutil is 2.00× lower at conns=2 (ratio 0.500 [0.450, 0.550] simultaneous, p_adj 0.001)"


def test_a_corrected_test_and_an_interval_that_disagree_are_undecided_never_matching() -> None:
    """The words never contradict the interval printed beside them: a ratio of 62 whose
    simultaneous interval excludes 1 is not "matches" because the corrected test missed it."""
    far = _row(8, 62.0, None, 0.08, simultaneous=(58.0, 67.0))
    sentence = curve_pair_sentence([far])
    assert "matches" not in sentence
    assert sentence == ("p99 of wrk: schedutil is undecided against performance at conns=8: the corrected test and the "
                        "simultaneous interval disagree (ratio 62.0 [58.0, 67.0] simultaneous, p_adj 0.08)")
    # A significant test whose simultaneous interval still holds 1 is not called a winner either.
    assert "undecided" in curve_pair_sentence([_row(8, 1.05, "b", 0.01, simultaneous=(0.98, 1.12))])
    # Without an interval nothing is called matching.
    assert "matches" not in curve_pair_sentence([dataclasses.replace(_row(8, 1.0, None, 1.0), ci_adjusted=None)])


def test_series_names() -> None:
    assert series_name({}) == "all"
    assert series_name({"governor": "schedutil"}) == "schedutil"
    assert series_name({"governor": "schedutil", "smt": "on"}) == "governor=schedutil, smt=on"


def test_the_terminal_shows_a_table_per_curve_and_the_sentences() -> None:
    table = swept_table(swept_columns(seed=3))
    analysis = analyze_loaded(table)
    console = Console(file=io.StringIO(), width=140)
    render_analysis(analysis, console)
    text = console.file.getvalue()
    assert "Response curves: median [95% CI] per level and series" in text
    assert "p99 (s) of wrk along conns" in text and "rps (1/s) of wrk along conns" in text
    found = analysis.curves
    first = found.curves[0]
    for p in first.points:
        assert interval(p.median, *p.ci, first.unit) in text  # "1.20 ms [1.15, 1.26]": each point in a readable unit
    for rows in pairs(found.comparisons):
        assert curve_pair_sentence(rows) in text
    assert "p99 of wrk: schedutil matches performance up to conns=8 and is 1.4" in text
    assert "\x1b[" not in text
    assert curve_analysis(table) == found
