"""What the validation scripts share: a Monte-Carlo proportion with its uncertainty.

Each script runs as `python validation/NAME.py` (this folder first on sys.path) or is loaded
by its test from its file; both find this module beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps


@dataclass(frozen=True)
class Rate:
    """A Monte-Carlo proportion: hits out of n, its standard error and a 95% Clopper-Pearson interval."""

    hits: int
    n: int
    rate: float
    se: float
    ci: tuple[float, float]


def rate(hits: np.ndarray | int, n: int | None = None) -> Rate:
    """The rate of `hits` out of `n`, or of the true values of the array `hits`."""
    if n is None:
        arr = np.asarray(hits, dtype=bool)
        hits, n = int(arr.sum()), int(arr.size)
    hits = int(hits)
    p = hits / n if n else math.nan
    se = math.sqrt(p * (1 - p) / n) if n else math.nan
    lo = float(sps.beta.ppf(0.025, hits, n - hits + 1)) if hits > 0 else 0.0
    hi = float(sps.beta.ppf(0.975, hits + 1, n - hits)) if hits < n else 1.0
    return Rate(hits, n, p, se, (lo, hi))
