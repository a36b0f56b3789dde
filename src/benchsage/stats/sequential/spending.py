"""Alpha spending: how much of a test's type I error the looks up to each information fraction
may use (Lan & DeMets 1983).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

SPENDINGS: tuple[str, ...] = ("obrien-fleming", "pocock")


def alpha_spending(t: np.ndarray | float, alpha: float, spending: str = "obrien-fleming") -> np.ndarray:
    """Cumulative two-sided type I error spent by information fraction t (Lan & DeMets 1983).

    The two-sided test is two one-sided tests at alpha / 2 each, and the spending function is
    applied to each side, as in Lan & DeMets' and Reboussin et al.'s ld98 program, R's
    ldbounds and gsDesign (test.type = 2) and Jennison & Turnbull's tables. With a = alpha / 2:

    obrien-fleming: per side a(t) = 2 - 2 Phi(z_{1-a/2} / sqrt(t)), close to O'Brien & Fleming's
        (1979) boundaries: almost nothing is spent early, and the last boundary is near the
        fixed-sample one. Two-sided: 2 a(t).
    pocock: per side a(t) = a ln(1 + (e - 1) t), close to Pocock's (1977) constant boundaries.
        Two-sided: alpha ln(1 + (e - 1) t).

    Both are 0 at t = 0 and alpha at t = 1 (Lan & DeMets, "Discrete sequential boundaries for
    clinical trials", Biometrika 70(3), 1983; Jennison & Turnbull 2000, section 7.2).
    """
    check_alpha(alpha)
    check_spending(spending)
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
    if spending == "pocock":
        return alpha * np.log1p((math.e - 1.0) * t)
    side = alpha / 2.0
    z = -special.ndtri(side / 2.0)  # z_{1-a/2}, accurate for tiny alpha
    with np.errstate(divide="ignore"):
        return np.where(t > 0, 2.0 * 2.0 * special.ndtr(-z / np.sqrt(np.where(t > 0, t, 1.0))), 0.0)


def check_alpha(alpha: float) -> None:
    if not isinstance(alpha, (int, float, np.floating)) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")


def check_spending(spending: str) -> None:
    if spending not in SPENDINGS:
        raise ValueError(f"unknown spending function {spending!r}: expected one of {', '.join(SPENDINGS)}")
