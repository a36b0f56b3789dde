"""Response curves in the HTML report (report/html/curves.py, report/curveplots.py): a figure per
test, sweep and fixed levels of the other sweeps, with a panel per primary or energy metric, the
sentences comparing the series, and the page drawn in Chromium without console errors."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.pipeline import analyze_loaded
from benchsage.report.curveplots import geometric
from benchsage.report.html import write_report
from benchsage.report.words.curves import curve_pair_sentence, pairs
from benchsage.store.table import MetricInfo, TrialTable, concat

import browser
from reports import Page, needs_chromium, section_of

sys.path.insert(0, str(Path(__file__).parents[2] / "analyze"))
from curves_data import swept_columns, swept_table  # noqa: E402


def _with_energy(table: TrialTable) -> TrialTable:
    """The table plus a server_energy metric (J) per trial, as a collector records it, not primary."""
    rows = table.metric == table.metric_names.index("p99")
    energy = table.select(rows)
    energy = dataclasses.replace(energy, metric_names=("server_energy",), metric=np.zeros(int(rows.sum()), dtype=np.int32),
                                 value=50.0 * energy.value / energy.value.min(), primary=np.zeros(int(rows.sum()), dtype=bool),
                                 metrics_info={"server_energy": MetricInfo("server_energy", "J", "lower")})
    both = concat([table, energy])
    return dataclasses.replace(both, metrics_info={**table.metrics_info, **energy.metrics_info})


@pytest.fixture(scope="module")
def swept_report(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    table = _with_energy(swept_table(swept_columns(seed=8, sizes=("1k", "64k"), runs=6)))
    analysis = analyze_loaded(table)
    path = tmp_path_factory.mktemp("curves") / "report.html"
    write_report(analysis, table, path)
    return analysis, path


def test_levels_in_geometric_steps_get_a_log_axis() -> None:
    assert geometric(np.array([2.0, 8.0, 32.0])) and geometric(np.array([1.0, 10.0, 100.0, 1000.0]))
    assert not geometric(np.array([1.0, 2.0, 3.0, 4.0]))  # linear
    assert not geometric(np.array([1.0, 2.0, 64.0]))  # steps of 2 then 32: not steady
    assert not geometric(np.array([0.0, 8.0, 32.0])) and not geometric(None)


def test_the_report_draws_a_figure_per_curve_with_a_panel_per_metric(swept_report) -> None:  # type: ignore[no-untyped-def]
    analysis, path = swept_report
    section = section_of(path.read_text(encoding="utf-8"), "curves")
    figures = re.findall(r'<figure id="(fig-curve-\d+)"><h3>([^<]*)</h3>\s*<svg\b(.*?)</figure>', section, re.S)
    # Along conns one figure per size, along size one per conns.
    assert [title for _, title, _ in figures] == [
        "wrk along conns (size=1k)", "wrk along conns (size=64k)",
        "wrk along size (conns=2)", "wrk along size (conns=8)", "wrk along size (conns=32)"]
    for _, _, svg in figures:
        labels = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
        # p99 and rps (primary), server_energy (energy-like) side by side; the series in the legend.
        assert {"p99", "rps", "server_energy", "performance", "schedutil"} <= set(labels)
    shown = Page(section).all_text
    for rows in pairs(r for r in analysis.curves.comparisons if r.primary):
        assert curve_pair_sentence(rows) in shown


@pytest.mark.browser
@needs_chromium
def test_browser_draws_the_curves_without_console_errors(swept_report) -> None:  # type: ignore[no-untyped-def]
    analysis, path = swept_report
    done = browser._run(["--enable-logging=stderr", "--v=0", "--dump-dom"], path.resolve().as_uri())
    assert [line for line in done.stderr.decode(errors="replace").splitlines() if ":CONSOLE" in line] == []
    dom = done.stdout.decode("utf-8")
    section = section_of(dom, "curves")
    assert len(re.findall(r'<figure id="fig-curve-\d+"><h3>[^<]*</h3>\s*<svg\b', section)) == 5
    sortable = path.read_text(encoding="utf-8").count('<table class="sortable">')
    assert re.search(rf'<html[^>]* data-sortable="{sortable}"', dom)  # the sorter ran to its end
