"""Exact permutation p-values of rank statistics, for a handful of values per row.

With n values (n <= 8: at most 40,320 assignments), the p-value of a rank test is computed by
enumerating every assignment of the values to the settings instead of from the statistic's
asymptotic distribution, which is poor at such n (e.g. the medians of a few measurement
contexts against their environment sizes, Mytkowicz et al. 2009). Ties get their average rank.
"""

from __future__ import annotations

import itertools

import numpy as np

from benchsage.stats._grouped import row_ranks

MAX_EXACT = 8  # values per row up to which the n! assignments are enumerated


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


def _permutations(n: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)
