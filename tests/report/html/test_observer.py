"""The observer effect (report/html/observer.py): each instrumentation level against the lightest."""

from __future__ import annotations

import re
from pathlib import Path

from benchsage.analyze.verdict import Analysis
from benchsage.report.html.numbers import fmt, fmt_pct
from benchsage.store.table import TrialTable

from reports import CLAIM_A, row_text, section_of


def test_observer_effect_table_and_figure(treated: tuple[Analysis, TrialTable, Path]) -> None:
    analysis, _, path = treated
    section = section_of(path.read_text(encoding="utf-8"), "observer")
    assert len(analysis.observer) == 2
    for effect in analysis.observer:
        (row,) = row_text(section, effect.test)
        assert row[1:5] == ["wall_time", "strace", "none", f"{effect.n_level} / {effect.n_baseline}"]
        assert row[7] == fmt_pct(effect.effect_pct) and 30 < effect.effect_pct < 40
        assert row[8] == f"{fmt(effect.ratio)}[{fmt(effect.ci[0])}, {fmt(effect.ci[1])}]"
        assert row[11] == "yes"
    assert '<figure id="fig-observer">' in section
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", section)
    assert f"{CLAIM_A} [strace]".replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in labels and "o2 [strace]" in labels
