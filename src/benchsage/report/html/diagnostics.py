"""Diagnostics: whether the arms were interleaved in time, when the runs started, and the
position, carry-over and trend effects, the significant first."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from benchsage.analyze.diagnostics import run_starts
from benchsage.report import plots
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import counted, finite
from benchsage.report.html.rows import DIAGNOSTIC_ROWS
from benchsage.report.html.values import node
from benchsage.report.words import say
from benchsage.store.table import TrialTable

KEY = "diagnostics"
TITLE = "Diagnostics"
HEADING = "Where the effect comes from"
OPEN = False


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
    return {"rows": rows, "shown": shown, "all": items}


def gist(shown: dict[str, Any]) -> str:
    """'1 position effect, 1 carry-over, no trend; the arms not interleaved'."""
    text = "not computed" if not shown["computed"] else ", ".join(
        _significant(shown.get(key), word, plural) for key, word, plural in
        (("position_effects", "position effect", None), ("carryover", "carry-over", None), ("trends", "trend", None)))
    if shown["interleaving"] is not None and shown["interleaving"].interleaved is False:
        text += "; the arms not interleaved in time"
    return text


def _significant(rows: dict[str, Any] | None, word: str, plural: str | None) -> str:
    n = sum(1 for d in rows["all"] if d.significant) if rows else 0
    return f"no {word}" if n == 0 else counted(n, word, plural)


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
        "units": {m: material.table.metric_info(m).unit for m in material.table.metric_names},
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
