"""The summary figures (report/html/figures.py): inline SVG, at the confidence level of the analysis."""

from __future__ import annotations

import re
from pathlib import Path

from benchsage.analyze.verdict import Analysis
from benchsage.report.html import render_report

from reports import Page, section_of


def test_figures_and_detail_are_inline_svg(small_report: Path, small_analysis: Analysis) -> None:
    text = small_report.read_text(encoding="utf-8")
    figures = section_of(text, "figures")
    for key in ("fig-pvalues", "fig-eta2", "fig-delta", "fig-ci-cases", "fig-median-ci"):
        assert f'<figure id="{key}">' in figures
    assert figures.count("<svg") == 5
    detail = section_of(text, "detail")
    # Few tests: every test gets its detail, most significant first, linked from the table.
    assert detail.count('<article class="detail"') == detail.count("<svg") == len(small_analysis.tests)
    first = min(small_analysis.tests, key=lambda v: v.kw_p)
    assert detail.index(first.test) < detail.index("<svg")
    assert text.count('href="#d-') == len(small_analysis.tests)
    ids = re.findall(r'\bid="([^"]*)"', text)
    assert len(ids) == len(set(ids))  # inlined figures do not collide
    assert '<figure id="fig-timeline">' in text  # runs have start times


def test_the_confidence_level_of_the_analysis_is_the_one_shown(make_table, analyze) -> None:  # type: ignore[no-untyped-def]
    table = make_table(3, 12, seed=8)
    text = render_report(analyze(table, ci_level=0.9), table)
    assert "median fixed [90% CI]" in text and "Median and 90% CI per test" in text
    assert "by arm (black: median, 90% CI)" in text
    assert "95%" not in Page(text).all_text
