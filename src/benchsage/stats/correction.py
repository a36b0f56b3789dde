"""Family-wise error correction of many p-values: Bonferroni and Holm.

Missing p-values (NaN: a comparison that could not be tested) are not part of the family:
they do not count in m and are never rejected.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

METHODS: tuple[str, ...] = ("bonferroni", "holm")


@dataclass(frozen=True, eq=False)
class Correction:
    """Adjusted p-values and decisions for one family.

    p_adjusted: same shape as the input, NaN where the input was NaN.
    reject: p_adjusted <= alpha (False where the input was NaN).
    alpha_corrected: alpha / m, the strictest per-comparison threshold (Bonferroni's only
        one; Holm's first step); None when the family is empty.
    m: the number of p-values in the family (NaNs excluded).
    """

    p_adjusted: np.ndarray
    reject: np.ndarray
    alpha_corrected: float | None
    m: int


def adjust(p: np.ndarray, method: str = "bonferroni", alpha: float = 0.05) -> Correction:
    """Adjust p-values for a family of m tests so the family-wise error rate is at most alpha.

    bonferroni: p_adj = min(1, m p); reject when p <= alpha / m (Dunn 1961).
    holm: sort ascending, p_adj(i) = max_{j <= i} min(1, (m - j + 1) p(j)) (1-based); reject when
        p_adj <= alpha, which is Holm's step-down procedure: reject p(1), p(2), ... while
        p(j) <= alpha / (m - j + 1), stop at the first that fails (Holm 1979, "A simple
        sequentially rejective multiple test procedure", Scand. J. Statistics 6(2)). Holm
        rejects every hypothesis Bonferroni rejects, and possibly more.
    """
    if method not in METHODS:
        raise ValueError(f"unknown correction {method!r}: expected one of {', '.join(METHODS)}")
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    p = np.asarray(p, dtype=np.float64)
    if np.any(p[~np.isnan(p)] < 0) or np.any(p[~np.isnan(p)] > 1):
        raise ValueError("p-values must lie in [0, 1]")
    flat = p.ravel()
    ok = np.flatnonzero(~np.isnan(flat))
    m = len(ok)
    adjusted = np.full(flat.shape, np.nan)
    if m:
        q = flat[ok]
        if method == "bonferroni":
            adjusted[ok] = np.minimum(1.0, q * m)
        else:
            order = np.argsort(q, kind="stable")
            factors = m - np.arange(m, dtype=np.float64)  # m, m-1, ..., 1
            stepped = np.maximum.accumulate(np.minimum(1.0, q[order] * factors))
            out = np.empty(m)
            out[order] = stepped
            adjusted[ok] = out
    adjusted = adjusted.reshape(p.shape)
    with np.errstate(invalid="ignore"):
        reject = adjusted <= alpha  # NaN compares False
    return Correction(
        p_adjusted=adjusted,
        reject=reject,
        alpha_corrected=alpha / m if m else None,
        m=m,
    )
