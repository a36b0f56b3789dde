"""The columns every diagnostic's rows share: numbers as JSON-ready values, p-values corrected over
the diagnostic's family, and effect sizes in percent.
"""

from __future__ import annotations

import math

import numpy as np

from benchsage.stats.correction import adjust


def nums(a: np.ndarray) -> list[float | None]:
    """Every element as a float, None where it is not finite: one conversion for tens of
    thousands of rows."""
    isfinite = math.isfinite
    return [x if isfinite(x) else None for x in np.asarray(a, dtype=np.float64).tolist()]


def corrected(p: np.ndarray, correction: str, alpha: float) -> dict[str, list]:
    """The columns "p", "p_adjusted" and "significant" of a family of p-values (NaN: no p-value,
    and no decision), corrected as one family."""
    corr = adjust(p, correction, alpha)
    values = nums(p)
    return {
        "p": values,
        "p_adjusted": nums(corr.p_adjusted),
        "significant": [r if pv is not None else None for r, pv in zip(corr.reject.tolist(), values)],
    }


def effect_pct(at: np.ndarray, other: np.ndarray) -> np.ndarray:
    """(at - other) / other x 100; NaN where other is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(other != 0, (at - other) / other * 100.0, np.nan)
