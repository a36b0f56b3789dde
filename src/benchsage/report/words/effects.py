"""The words of an order effect's size and of where it comes from: "3.94× slower in the fixed
order than in random orders [2.10, 5.71]", "first in its run, right after the reset: 4.35×
slower".

A ratio is always said as a factor of at least 1 with its direction (1.88× faster, never
"46.9% faster" or 0.53×), a difference in the metric's unit, both through the one formatter of
quantities (report/quantity.py).
"""

from __future__ import annotations

import math
from typing import Sequence

from benchsage.analyze.verdict import Carryover, Diagnostics, PositionEffect, TestVerdict, Trend
from benchsage.parsers.units import UNITS
from benchsage.report.quantity import quantity, ratio, sig3

FIRST = "(reset)"  # the carry-over diagnostic's predecessor of a run's first trial
MAX_SOURCES = 3  # where an effect comes from: at most this many positions and predecessors named


def is_time(unit: str) -> bool:
    known = UNITS.get(unit)
    return known is not None and known.dimension == "time"


def direction(r: float, unit: str) -> str:
    """The word for a ratio above or below 1 of a metric in `unit`: slower/faster for times,
    higher/lower otherwise."""
    if is_time(unit):
        return "slower" if r > 1 else "faster"
    return "higher" if r > 1 else "lower"


def factor(r: float, ci: tuple[float, float] | None, unit: str) -> str:
    """A ratio as a factor of at least 1 with its direction and interval: 0.25 [0.2, 0.3] ->
    "4.00× faster [3.33, 5.00]" (the interval turned with it)."""
    word = direction(r, unit) if sig3(max(r, 1.0 / r)) != "1.00" else ""
    if r < 1:
        r, ci = 1.0 / r, (1.0 / ci[1], 1.0 / ci[0]) if ci is not None and ci[0] > 0 and ci[1] > 0 else None
    interval = f" [{sig3(ci[0])}, {sig3(ci[1])}]" if ci is not None and all(math.isfinite(x) for x in ci) else ""
    return f"{ratio(r)}{' ' + word if word else ''}{interval}"


def _difference(d: float, ci: tuple[float, float] | None, unit: str) -> str:
    word = "" if d == 0 else ((" slower" if d > 0 else " faster") if is_time(unit) else (" higher" if d > 0 else " lower"))
    interval = f" [{quantity(ci[0], unit)}, {quantity(ci[1], unit)}]" if ci is not None else ""
    return f"{quantity(abs(d), unit)}{word}{interval}"


def shift_text(v: TestVerdict, with_interval: bool = True) -> str | None:
    """The size of a row's order effect: "3.94× slower [2.10, 5.71]" (the fixed arm against the
    random arm, the interval at the row's shift_level), from the ratio of medians when the
    row has no shift; None when neither is known."""
    ci = v.shift_ci if with_interval else None
    if v.shift is not None and v.shift_kind == "ratio" and v.shift > 0:
        return factor(v.shift, ci, v.unit)
    if v.shift is not None and v.shift_kind == "difference":
        return _difference(v.shift, ci, v.unit)
    if v.median_fixed and v.median_random and v.median_fixed > 0 and v.median_random > 0:
        return factor(v.median_fixed / v.median_random, None, v.unit)
    return None


def effect_text(v: TestVerdict) -> str | None:
    """"3.94× slower in the fixed order than in random orders [2.10, 5.71]"."""
    size = shift_text(v)
    if size is None:
        return None
    word, _, interval = size.partition(" [")
    return f"{word} in the fixed order than in random orders" + (f" [{interval}" if interval else "")


def _pct_factor(effect_pct: float | None, unit: str) -> str | None:
    if effect_pct is None or effect_pct <= -100:
        return None
    return factor(1.0 + effect_pct / 100.0, None, unit)


def sources(v: TestVerdict, d: Diagnostics | None) -> list[str]:
    """Where a row's order effect comes from, from the significant diagnostics of its test and
    metric: "first in its run, right after the reset: 4.35× slower", "after compress: 1.20×
    faster", "drifts over time in the fixed arm (Spearman ρ 0.61)"."""
    if d is None:
        return []
    out: list[str] = []
    positions: Sequence[PositionEffect] = [e for e in d.position_effects if e.test == v.test and e.metric == v.metric and e.significant]
    carry: Sequence[Carryover] = [c for c in d.carryover if c.test == v.test and c.metric == v.metric and c.significant]
    first_said = False
    for e in positions[:MAX_SOURCES]:
        size = _pct_factor(e.effect_pct, v.unit)
        if e.position == 0 and e.position_last in (None, 0):
            first_said = True
            where = "first in its run, right after the reset"
        elif e.position_last not in (None, e.position):
            where = f"at positions {e.position + 1}-{e.position_last + 1} of its run"
        else:
            where = f"at position {e.position + 1} of its run"
        out.append(f"{where}: {size}" if size else where)
    for c in carry[:MAX_SOURCES]:
        if c.after == FIRST and first_said:
            continue
        size = _pct_factor(c.effect_pct, v.unit)
        where = "right after the reset" if c.after == FIRST else f"right after {c.after}"
        out.append(f"{where}: {size}" if size else where)
    trends: Sequence[Trend] = [t for t in d.trends if t.test == v.test and t.metric == v.metric and t.significant]
    for t in trends:
        rho = f" (Spearman ρ {t.spearman_rho:.2f})" if t.spearman_rho is not None else ""
        out.append(f"drifts over time in the {t.arm} arm{rho}")
    return out
