"""Exact permutation p-values of rank statistics, for a handful of values per row, and the
least p-value a rank test can give.

With n values (n <= 8: at most 40,320 assignments), the p-value of a rank test is computed by
enumerating every assignment of the values to the settings instead of from the statistic's
asymptotic distribution, which is poor at such n (e.g. the medians of a few measurement
contexts against their environment sizes, Mytkowicz et al. 2009; a trend over 6 runs, where
the t approximation of Spearman's rho gives p = 0 at rho = 1 and the exact p is 2/720). Ties get
their average rank. Beyond n = 8 the asymptotic p-values stand, floored by least_p: the observed
assignment is one of the equally likely ones, so no rank test can give less than one over their
number.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np
from scipy import special

from benchsage.stats._grouped import row_ranks

MAX_EXACT = 8  # values per row up to which the n! assignments are enumerated
# The least positive p-value a float holds in full precision: the floor of least_p where one over
# the number of assignments underflows (more than about 170 values).
SMALLEST_P = float(np.finfo(np.float64).tiny)


def least_p(log_assignments: np.ndarray | float) -> np.ndarray:
    """1 / A for A = exp(log_assignments) equally likely assignments under the null (no less than
    SMALLEST_P): the smallest p-value a permutation test over them can give, since the observed
    assignment counts itself. log_assignments from log_assignments()."""
    with np.errstate(over="ignore", under="ignore"):
        return np.maximum(np.exp(-np.asarray(log_assignments, dtype=np.float64)), SMALLEST_P)


def log_assignments(total: np.ndarray | float, sizes_log_factorials: np.ndarray | float = 0.0) -> np.ndarray:
    """log(N! / prod n_i!): the number of ways to deal N values into samples of sizes n_i, given
    N and sum_i log(n_i!) (0 for a correlation, where each of the N values has its own setting)."""
    return special.gammaln(np.asarray(total, dtype=np.float64) + 1.0) - np.asarray(sizes_log_factorials, dtype=np.float64)


def floor_p(p: np.ndarray, log_assign: np.ndarray | float) -> np.ndarray:
    """p raised to least_p where an asymptotic tail fell below it (NaN stays NaN)."""
    p = np.asarray(p, dtype=np.float64)
    return np.where(np.isnan(p), p, np.maximum(p, least_p(log_assign)))


def exact_rank_p(values: np.ndarray, setting: np.ndarray, *, numeric: bool) -> np.ndarray:
    """P(T >= T observed) over the n! assignments of each row's n values to the n settings.

    values: (rows, n); setting: (n,), the setting of each column. numeric: the settings are
    magnitudes, and T is the two-sided Spearman statistic (T = const x rho^2); otherwise they
    are categories, and T is the Kruskal-Wallis H across them.

    Both tests are functions of the centred midranks r of a row's values through
    T = ||D' r||^2 for a design D fixed by the settings: D = the centred midranks of the
    settings for Spearman, D = the one-hot columns of the levels scaled by 1 / sqrt(n_level)
    for Kruskal-Wallis (H = 12 / (n (n + 1)) x sum over levels of n_level x mean rank^2,
    centred). Permuting the rows of D gives every assignment; the observed one is among
    them, so p >= 1 / n!.
    """
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    n = values.shape[1]
    if not 1 <= n <= MAX_EXACT or len(setting) != n:
        raise ValueError(f"need 1 to {MAX_EXACT} values per row and one setting for each, got {n} values and {len(setting)} settings")
    ranks = row_ranks(values).ranks()
    ranks -= ranks.mean(axis=1, keepdims=True)
    if numeric:
        xr = row_ranks(np.asarray(setting, dtype=np.float64)[None, :]).ranks()[0]
        design = (xr - xr.mean())[:, None]
    else:
        levels, code = np.unique(np.asarray(setting), return_inverse=True)
        onehot = np.eye(len(levels))[code.ravel()]
        design = onehot / np.sqrt(onehot.sum(axis=0))[None, :]
    permuted = design[_permutations(n)]  # (n!, n, L)
    observed = ((ranks @ design) ** 2).sum(axis=1)
    out = np.empty(len(ranks))
    step = max(1, (1 << 22) // (permuted.shape[0] * design.shape[1]))
    for start in range(0, len(ranks), step):
        part = slice(start, start + step)
        stat = (np.einsum("pnl,gn->pgl", permuted, ranks[part]) ** 2).sum(axis=2)  # (n!, rows)
        # a relative tolerance: the observed assignment must count itself despite rounding
        out[part] = np.mean(stat >= observed[part][None, :] * (1.0 - 1e-9) - 1e-12, axis=0)
    return out


def exact_correlation_p(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Two-sided exact p of Spearman's rho for rows each with its own x and y: P(rho^2 >= rho
    observed^2) over the n! assignments of a row's y values to its x values (n <= MAX_EXACT).

    x, y: (rows, n). Ties get their average rank, as in spearman_grouped; rho^2 is const x
    (sum of the products of the centred ranks)^2, so that sum is what is enumerated.
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    y = np.atleast_2d(np.asarray(y, dtype=np.float64))
    n = x.shape[1]
    if x.shape != y.shape or not 1 <= n <= MAX_EXACT:
        raise ValueError(f"need x and y of one shape with 1 to {MAX_EXACT} values per row, got {x.shape} and {y.shape}")
    rx = row_ranks(x).ranks()
    ry = row_ranks(y).ranks()
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    perms = _permutations(n)
    observed = (rx * ry).sum(axis=1) ** 2
    out = np.empty(len(rx))
    step = max(1, (1 << 22) // (len(perms) * n))
    for start in range(0, len(rx), step):
        part = slice(start, start + step)
        stat = np.einsum("gpn,gn->gp", ry[part][:, perms], rx[part]) ** 2  # (rows, n!)
        out[part] = np.mean(stat >= observed[part][:, None] * (1.0 - 1e-9) - 1e-12, axis=1)
    return out


@lru_cache(maxsize=MAX_EXACT)
def _permutations(n: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)
