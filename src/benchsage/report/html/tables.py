"""The tests: a table of rows per metric (the primary ones first), sorted by p, each row linked
to its detail when it has one. A fleet's workers show their rows the same way (workers.py)."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from benchsage.analyze.verdict import TestVerdict
from benchsage.report import plots
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import counted, finite

KEY = "tables"
TITLE = "Tests"
HEADING = "Tests: fixed order vs random order"
OPEN = True  # the primary metrics' rows; the other metrics fold inside (templates/tables.html)
TALL_ROWS = 30  # a longer table scrolls inside its own box, so the figures stay in reach

_TEST_COLUMNS = (
    ("test", "text"),
    ("n fixed / random", ""),
    ("KW H", ""),
    ("p", ""),
    ("p adjusted", ""),
    ("significant", "text"),
    ("order effect: fixed vs random", ""),
    ("median fixed [{ci} CI]", ""),
    ("median random [{ci} CI]", ""),
    ("eta²_H", ""),
    ("Δ% means", ""),
    ("CV fixed", ""),
    ("CV random", ""),
    ("CI case", ""),
)


def sort_key_p(v: TestVerdict) -> tuple[float, float, str]:
    """Smallest (adjusted) p first; ties: the largest |Δ%| first, then by name."""
    p = v.p_adjusted if finite(v.p_adjusted) else v.kw_p
    return (float(p) if finite(p) else math.inf, -abs(v.delta_pct) if finite(v.delta_pct) else 0.0, v.test)


def verdict_table(verdicts: Sequence[TestVerdict], detail_ids: Mapping[tuple[str, str], str], ci_level: float,
                  stratified: bool = False) -> dict[str, Any]:
    """One table of test rows, sorted by p. stratified: the rows combine workers or treatment
    cells with van Elteren's test, whose statistic is a chi-square with one degree of freedom,
    not Kruskal-Wallis H."""
    notes = any(v.notes for v in verdicts)
    titles = [t.format(ci=f"{ci_level:.0%}") for t, _ in _TEST_COLUMNS]
    if stratified:
        titles[titles.index("KW H")] = "van Elteren χ²"
    columns = list(zip(titles, (c for _, c in _TEST_COLUMNS))) + ([("notes", "text")] if notes else [])
    rows = [(v, detail_ids.get((v.test, v.metric))) for v in sorted(verdicts, key=sort_key_p)]
    return {"columns": columns, "rows": rows, "notes": notes, "tall": len(verdicts) > TALL_ROWS}


def gist(shown: dict[str, Any]) -> str:
    """'4 tests, 2 where the order matters; 6 other metrics'."""
    groups = [g for g in shown["groups"] if g["primary"]]
    primary = [v for g in groups for v, _ in g["table"]["rows"]]
    others = len(shown["groups"]) - len(groups)
    what = "test" if len(groups) <= 1 else "comparison"
    text = f"{counted(len(primary), what)}, {sum(1 for v in primary if v.significant):,} where the order matters"
    return text + (f"; {counted(others, 'other metric')}" if others else "")


def view(material: Material) -> dict[str, Any]:
    analysis, detail_ids = material.analysis, material.detail_ids
    groups: dict[tuple[bool, str], list[TestVerdict]] = {}
    for v in analysis.tests:
        groups.setdefault((not v.primary, v.metric), []).append(v)
    out = []
    for (secondary, metric), vs in sorted(groups.items(), key=lambda kv: kv[0]):
        out.append({
            "metric": metric,
            "label": plots.axis_label(metric, vs[0].unit, vs[0].better),
            "family": "not in the correction family" if secondary else "primary",
            "primary": not secondary,
            "count": len(vs),
            "table": verdict_table(vs, detail_ids, analysis.ci_level, stratified=analysis.combined is not None),
            "cells": cell_rows(vs),
        })
    return {"groups": out, "ci": f"{analysis.ci_level:.0%}"}


def cell_rows(verdicts: Sequence[TestVerdict]) -> list[tuple[TestVerdict, str, Any]]:
    """Each test's treatment cells, in test order: (row, the cell's name, its arms); empty
    without cells. The tests' own rows describe the values with each cell's level removed;
    these are each cell's values as measured."""
    return [(v, ", ".join(f"{dim}={level}" for dim, level in c.cell), c) for v in verdicts for c in v.cells or ()]
