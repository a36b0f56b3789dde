"""Diagnostics (report/html/diagnostics.py): every computed row, the significant first when a table
is cut."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from benchsage.analyze.verdict import Analysis
from benchsage.report.html import render_report
from benchsage.report.html.rows import DIAGNOSTIC_ROWS
from benchsage.report.words import say
from benchsage.store.table import TrialTable

from reports import Page, section_of


def test_diagnostics_are_shown(small_report: Path, small_analysis: Analysis) -> None:
    text = small_report.read_text(encoding="utf-8")
    section = section_of(text, "diagnostics")
    diag = small_analysis.diagnostics
    assert diag is not None and diag.interleaving is not None
    shown = Page(section).all_text
    assert say(diag.interleaving.detail) in shown
    assert '<figure id="fig-timeline">' in section
    # Position bins print as ranges; every computed row is listed (fewer than the cap).
    rows = re.findall(r"<tr[^>]*><td class=\"name\">", section)
    assert len(rows) == len(diag.position_effects) + len(diag.carryover) + len(diag.trends)
    binned = [d for d in diag.position_effects if d.position_last not in (None, d.position)]
    assert binned and all(f"{d.position}–{d.position_last}" in shown for d in binned)


def test_long_diagnostics_tables_show_the_significant_rows_first(tiny: tuple[Analysis, TrialTable], make_diagnostics) -> None:  # type: ignore[no-untyped-def]
    analysis, table = tiny
    names = [f"./t{i}.sh" for i in range(DIAGNOSTIC_ROWS + 10)]
    diag = make_diagnostics(names)
    effects = tuple(dataclasses.replace(d, significant=i % 7 == 0, p_adjusted=0.5 if i % 7 else 0.01) for i, d in enumerate(diag.position_effects))
    text = render_report(dataclasses.replace(analysis, diagnostics=dataclasses.replace(diag, position_effects=effects)), table)
    shown = Page(text).all_text
    assert f"showing {DIAGNOSTIC_ROWS} of {len(names)} position effects, significant first." in shown
    section = text[text.index("<h3>Position effects</h3>"): text.index("<h3>Carry-over")]
    flags = re.findall(r'<td class="text(?: yes)?">(yes|no)</td></tr>', section)
    n_sig = sum(1 for d in effects if d.significant)
    assert flags[:n_sig] == ["yes"] * n_sig and set(flags[n_sig:]) == {"no"}
