"""The observer effect: each instrumentation level (strace, perf, ...) against the lightest."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchsage.report import plots
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import counted, finite
from benchsage.report.html.rows import FIGURE_ROWS, TREATMENT_ROWS, floats, notable_first

KEY = "observer"
TITLE = "Observer effect"
HEADING = "Observer effect"
OPEN = True  # the instrumentation levels the spec varied on purpose: a question the experiment asked


def gist(shown: dict[str, Any]) -> str:
    """'instrumentation changed 2 of 4 tests and levels'."""
    return f"instrumentation changed {shown['changed']:,} of {counted(shown['total'], 'test and level', 'tests and levels')}"


def view(material: Material) -> dict[str, Any] | None:
    """Each instrumentation level against the lightest, per test, the significant first, and a
    figure of each level's effect % with its interval; None without levels."""
    rows = material.doc.get("observer")
    if rows is None:
        return None
    notable = notable_first(rows, TREATMENT_ROWS, "rows")
    figure_rows = [r for r in notable["rows"] if r.get("primary", True)][:FIGURE_ROWS]
    several = len({r["metric"] for r in figure_rows}) > 1

    def pct(ci: Any, i: int) -> float:
        return (float(ci[i]) - 1.0) * 100.0 if ci and finite(ci[i]) else math.nan

    figure = plots.observer_effects(
        [f"{r['test']} [{r['metric']}, {r['level']}]" if several else f"{r['test']} [{r['level']}]" for r in figure_rows],
        floats(r.get("effect_pct") for r in figure_rows),
        np.array([pct(r.get("ci"), 0) for r in figure_rows]),
        np.array([pct(r.get("ci"), 1) for r in figure_rows]),
        [r.get("significant") for r in figure_rows],
    ) if figure_rows else None
    return {**notable, "figure": figure, "total": len(rows), "changed": sum(1 for r in rows if r.get("significant"))}
