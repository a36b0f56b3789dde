"""How the report writes a number: significant digits, p-values, percentages, the sort keys of
numeric cells, and a dash for what is unknown. The templates use these as filters."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchsage.report.quantity import interval, quantity

DASH = "—"  # an unknown value: not computed, or nothing to compute it from


def finite(x: Any) -> bool:
    return x is not None and isinstance(x, (int, float, np.floating, np.integer)) and math.isfinite(float(x))


def fmt(x: Any, digits: int = 4) -> str:
    """A number with `digits` significant digits, plainly written when that is readable."""
    if not finite(x):
        return DASH
    x = float(x)
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    if mag >= 7 or mag < -3:
        return f"{x:.{digits - 1}e}"
    return f"{x:,.{max(0, digits - 1 - mag)}f}"


def fmt_p(p: Any) -> str:
    if not finite(p):
        return DASH
    p = float(p)
    return f"{p:.2e}" if p < 1e-3 else f"{p:.4f}"


def fmt_pct(x: Any) -> str:
    return f"{float(x):+.2f}" if finite(x) else DASH


def sortkey(x: Any) -> str:
    """A numeric cell's data-v for the sorter: empty when unknown (sorted last)."""
    return repr(float(x)) if finite(x) else ""


def yes_no(flag: bool | None) -> str:
    return DASH if flag is None else ("yes" if flag else "no")


def commas(n: Any) -> str:
    return f"{n:,}"


def counted(n: int, word: str, plural: str | None = None) -> str:
    """'1 test', '1,880 tests', '2 analyses' (plural given)."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def in_unit(x: Any, unit: str) -> str:
    """A value with its unit, three significant digits in a readable unit (report/quantity.py)."""
    return quantity(float(x), unit) if finite(x) else DASH


def ci_in_unit(x: Any, ci: Any, unit: str) -> str:
    """The interval of x in x's readable unit, '[41.2, 47.9]' under '44.0 ms'; '' without one."""
    if not finite(x) or ci is None or not all(finite(c) for c in ci):
        return ""
    whole = interval(float(x), float(ci[0]), float(ci[1]), unit)
    return whole[len(quantity(float(x), unit)):].strip()
