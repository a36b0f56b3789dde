"""The least p-value a rank test of samples of these sizes can give (one over the ways to deal
the values into them), for comparing benchsage's floored p-values with scipy's asymptotic ones."""

from __future__ import annotations

import math


def least(*sizes: int) -> float:
    """1 / (N! / prod n_i!) for samples of these sizes."""
    return 1.0 / (math.factorial(sum(sizes)) / math.prod(math.factorial(n) for n in sizes))


def floored(p: float, *sizes: int) -> float:
    """scipy's asymptotic p as benchsage gives it: never below least(*sizes)."""
    return max(float(p), least(*sizes))
