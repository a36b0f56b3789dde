"""Factorial designs (report/html/factorial.py): each term's effect and its share of the variation."""

from __future__ import annotations

import re
from pathlib import Path

from benchsage.analyze.verdict import Analysis
from benchsage.report.html.numbers import fmt
from benchsage.report.quantity import interval
from benchsage.store.table import TrialTable
from benchsage.report.treatments_json import factorial_json

from reports import Page, row_text, section_of


def test_factorial_terms_and_allocation_of_variation(treated: tuple[Analysis, TrialTable, Path]) -> None:
    analysis, _, path = treated
    section = section_of(path.read_text(encoding="utf-8"), "factorial")
    assert "Levels (low → high): smt: off → on; governor: powersave → performance" in Page(section).all_text
    for row in analysis.factorial:
        lines = row_text(section, row.test)
        terms = factorial_json(row)["terms"]
        assert [cells[2] for cells in lines] == ["smt", "governor", "smt:governor", "error"] == [t["term"] for t in terms]
        for cells, term in zip(lines, terms):
            assert cells[4] == fmt(term["variation_pct"], 3)
            if term["term"] != "error":
                # In the metric's unit, through the one formatter of quantities: "-42.1 ms[-43.0, -41.2]".
                assert cells[3] == interval(term["effect"], *term["ci"], "s").replace(" [", "[")
        assert [cells[5] for cells in lines[:2]] == ["yes", "yes"]  # smt and governor matter
        assert lines[3][3] == "—" and lines[3][5] == "—"
    figure = re.search(r'<figure id="fig-allocation">.*?</figure>', section, re.S).group(0)
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", figure)
    assert {"smt", "governor", "smt:governor", "error", "o2"} <= set(labels)
