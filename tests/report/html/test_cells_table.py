"""With treatment cells, the report's tests tables are followed by each cell's own arms, in the
metric's unit, beside the rows tested cell by cell."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

from benchsage.analyze.pipeline import analyze_loaded
from benchsage.report.html import render_report
from benchsage.report.quantity import quantity

sys.path.insert(0, str(Path(__file__).parents[2] / "analyze"))
from cells_data import factor_table  # noqa: E402


def test_each_cell_has_its_own_row_with_its_medians() -> None:
    table = factor_table(runs_per_arm=12)
    analysis = analyze_loaded(table)
    page = render_report(analysis, table)
    rows = re.findall(r'<tr><td class="name">([^<]*)</td><td class="text">([^<]*)</td><td data-v="[^"]*">([^<]*)</td>'
                      r'<td data-v="[^"]*">([^<]*)', page)
    shown = {(test, cell): (n, median) for test, cell, n, median in rows}
    for v in analysis.tests:
        assert v.cells is not None and len(v.cells) == 2
        for c in v.cells:
            n, median = shown[(v.test, ", ".join(f"{d}={lv}" for d, lv in c.cell))]
            assert n == f"{c.n_fixed} / {c.n_random}" == "6 / 6"
            assert html.unescape(median) == quantity(c.median_fixed, v.unit)
    # The cells of a factor 5x apart are 5x apart; the rows above describe neither alone.
    t0 = next(v for v in analysis.tests if v.test == "t0")
    python, nginx = (c.median_random for c in t0.cells)
    assert 4 < nginx / python < 6 and python < t0.median_random < nginx
