"""Spearman's rank correlation for many groups at once (e.g. value against time per test and arm).

Used to find trends within an arm: a value that drifts with time is a design problem that an
order comparison alone would not reveal.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special

from benchsage.stats._grouped import check_grouped, grouped_ranks
from benchsage.stats.permutation import MAX_EXACT, exact_correlation_p, floor_p, log_assignments


class SpearmanResult(NamedTuple):
    """Per group: Spearman's rho and its two-sided p-value (a tuple, so `rho, p = ...` works)."""

    rho: np.ndarray
    pvalue: np.ndarray


def spearman_grouped(
    x: np.ndarray,
    y: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    *,
    x_in_order: bool = False,
    y_order: np.ndarray | None = None,
) -> SpearmanResult:
    """Spearman's rho of (x, y) within each group, and the two-sided p-value of rho = 0.

    Spearman (1904): the Pearson correlation of the ranks (ties get their average rank). The
    p-value is exact up to MAX_EXACT pairs (permutation.exact_correlation_p: the share of the n!
    assignments of y to x with a rho as far from 0; the t approximation is poor there, and gives
    p = 0 at rho = +-1), and beyond uses the t approximation t = rho sqrt((n - 2) / (1 - rho**2))
    with n - 2 degrees of freedom, as scipy.stats.spearmanr (which it then agrees with), floored
    at 1 / n! (permutation.least_p): never 0. rho is NaN when a group has fewer than 2 pairs or x
    or y is constant in it; the p-value is NaN also when n < 3.

    x_in_order: x is probably ascending within each group already (times of rows stored in
    time order), which saves its sort when true (checked; any x is accepted).
    y_order: indices that order rows by (group, y), when the caller has them.
    """
    xv, g = check_grouped(x, group, n_groups, what="x")
    yv, _ = check_grouped(y, group, n_groups, what="y")
    n = np.bincount(g, minlength=n_groups).astype(np.float64)
    # Average ranks within a group always have mean (n + 1) / 2, ties or not.
    mid = (n + 1.0) / 2.0
    # One ranking at a time: each is several arrays as long as the data.
    cx = grouped_ranks(xv, g, n_groups, try_row_order=x_in_order).ranks() - mid[g] if len(g) else np.zeros(0)
    cy = grouped_ranks(yv, g, n_groups, y_order).ranks() - mid[g] if len(g) else np.zeros(0)
    sxy = np.bincount(g, weights=cx * cy, minlength=n_groups)
    sxx = np.bincount(g, weights=cx * cx, minlength=n_groups)
    syy = np.bincount(g, weights=cy * cy, minlength=n_groups)
    defined = (n >= 2) & (sxx > 0) & (syy > 0)
    rho = np.full(n_groups, np.nan)
    rho[defined] = np.clip(sxy[defined] / np.sqrt(sxx[defined] * syy[defined]), -1.0, 1.0)
    p = np.full(n_groups, np.nan)
    testable = defined & (n >= 3)
    if testable.any():
        r = rho[testable]
        dof = n[testable] - 2.0
        with np.errstate(divide="ignore"):
            t = r * np.sqrt(np.clip(dof / ((r + 1.0) * (1.0 - r)), 0.0, None))
        p[testable] = floor_p(2.0 * special.stdtr(dof, -np.abs(t)), log_assignments(n[testable]))
    _exact_small(xv, yv, g, n, testable, p)
    return SpearmanResult(rho=rho, pvalue=p)


def _exact_small(x: np.ndarray, y: np.ndarray, g: np.ndarray, n: np.ndarray, testable: np.ndarray, p: np.ndarray) -> None:
    """p of the testable groups of at most MAX_EXACT pairs replaced by the exact one, one batch
    per group size."""
    small = testable & (n <= MAX_EXACT)
    if not small.any():
        return
    rows = np.flatnonzero(small[g])
    rows = rows[np.argsort(g[rows], kind="stable")]  # each group's rows together
    sizes = n.astype(np.int64)[g[rows]]
    for size in np.unique(sizes).tolist():
        mine = rows[sizes == size]
        groups = g[mine[::size]]
        p[groups] = exact_correlation_p(x[mine].reshape(-1, size), y[mine].reshape(-1, size))
