"""Diagnostics: whether the arms were interleaved in time, when the runs started, and the
position, carry-over and trend effects, the significant first."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from benchsage.analyze.diagnostics import run_starts
from benchsage.report import plots
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import finite
from benchsage.report.html.rows import DIAGNOSTIC_ROWS
from benchsage.report.html.values import node
from benchsage.report.words import say
from benchsage.store.table import TrialTable

KEY = "diagnostics"
TITLE = "Diagnostics"


def _run_starts(table: TrialTable) -> tuple[np.ndarray, np.ndarray]:
    """Each run's start (as the diagnostics see it) and its arm; runs without a time are left out."""
    starts = run_starts(table)
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int8)
    known = table.run >= 0
    arm = np.full(len(starts), -1, dtype=np.int8)
    arm[table.run[known]] = table.arm[known]
    keep = np.isfinite(starts) & (arm >= 0)
    return starts[keep], arm[keep]


def _diag_order(items: Sequence[Any]) -> list[Any]:
    """Significant rows first, then by p; at most DIAGNOSTIC_ROWS."""

    def key(d: Any) -> tuple[int, float]:
        p = d.p_adjusted if finite(d.p_adjusted) else d.p
        return (0 if d.significant else 1, float(p) if finite(p) else math.inf)

    return sorted(items, key=key)[:DIAGNOSTIC_ROWS]


def _diag_rows(items: Sequence[Any], what: str) -> dict[str, Any]:
    rows = _diag_order(items)
    total = len(items)
    shown = f"showing {len(rows):,} of {total:,} {what}, significant first" if total > len(rows) else f"{total:,} {what}"
    return {"rows": rows, "shown": shown}


def view(material: Material) -> dict[str, Any]:
    diag = material.analysis.diagnostics
    il = diag.interleaving if diag is not None else None
    starts, arms = _run_starts(material.table)
    shown: dict[str, Any] = {
        "interleaving": il,
        "interleaving_state": None if il is None else {True: "interleaved", False: "not interleaved", None: "unknown"}[il.interleaved],
        "interleaving_detail": None if il is None else say(il.detail),
        "timeline": plots.run_timeline(starts, arms) if len(starts) else None,
        "computed": diag is not None,
    }
    if diag is None:
        return shown
    shown.update(
        position_effects=_diag_rows(diag.position_effects, "position effects") if diag.position_effects else None,
        carryover=_diag_rows(diag.carryover, "predecessor effects") if diag.carryover else None,
        balance=say(diag.carryover_balance.detail) if diag.carryover_balance is not None else None,
        trends=_diag_rows(diag.trends, "trends") if diag.trends else None,
        software=node(diag.workers) if diag.workers else None,
    )
    return shown
