"""Distribution-free confidence intervals of the median from order statistics.

The interval [x(l), x(u)] between two order statistics covers the true median with a
probability that depends only on n (a binomial count), whatever the distribution of the values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
# scipy.special only: scipy.stats costs 0.3-0.6 s of import time in every command that analyses.
from scipy import special

from benchsage.stats._grouped import check_grouped, grouped_sort

CI_METHODS: tuple[str, ...] = ("exact-binomial", "le-boudec")


@dataclass(frozen=True, eq=False)
class MedianCI:
    """Per group: the sample median, the interval bounds, and the number of values.

    low and high are NaN where n is too small for the level (see min_sample_size); median is
    NaN only for an empty group.
    """

    median: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: np.ndarray


def _check_level(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must lie strictly between 0 and 1, got {level}")
    return level


def _check_method(method: str) -> None:
    if method not in CI_METHODS:
        raise ValueError(f"unknown median CI method {method!r}: expected one of {', '.join(CI_METHODS)}")


def exact_binomial_coverage(n: np.ndarray | int, l: np.ndarray | int) -> np.ndarray:
    """P(l <= B <= n - l) for B ~ Binomial(n, 1/2): the coverage of [x(l), x(n-l+1)].

    B counts the values below the true median; the interval misses it when B < l or B > n - l.
    """
    n = np.asarray(n, dtype=np.int64)
    l = np.asarray(l, dtype=np.int64)
    # By symmetry P(B > n - l) = P(B < l) = P(B <= l - 1); no value is below x(0).
    return np.where(l >= 1, 1.0 - 2.0 * special.bdtr(np.maximum(l - 1, 0), n, 0.5), 1.0)


def exact_binomial_rank(n: np.ndarray | int, level: float = 0.95) -> np.ndarray:
    """The largest l with P(l <= B <= n - l) >= level, B ~ Binomial(n, 1/2); 0 if there is none.

    The interval [x(l), x(n-l+1)] (1-based order statistics) is then the narrowest symmetric
    pair of order statistics whose coverage of the median is at least `level`: the classical
    sign-test interval (Thompson 1936; Hollander, Wolfe & Chicken, Nonparametric Statistical
    Methods, 3rd ed., Section 3.6; Le Boudec, Performance Evaluation of Computer and
    Communication Systems, 2010, Theorem 2.1 and Table A.1). For 95%, n must be at least 6.

    Coverage is 1 - 2 P(B <= l - 1) >= level, i.e. P(B <= l - 1) <= (1 - level) / 2: l - 1 is
    the largest k whose binomial CDF stays at or below (1 - level) / 2.
    """
    level = _check_level(level)
    n_arr = np.asarray(n, dtype=np.int64)
    if np.any(n_arr < 0):
        raise ValueError("n must be >= 0")
    q = (1.0 - level) / 2.0

    # A relative slack of 1e-12 keeps an exact equality (CDF(k) == q in real numbers) on the
    # accepting side despite rounding; coverage is then short of `level` by at most 1e-12.
    limit = q * (1.0 + 1e-12)
    # l - 1 is the largest k in -1..n with CDF(k) <= limit (CDF(-1) = 0, CDF(n) = 1): bisection
    # over k, once per distinct n, with the CDF as an incomplete beta function (special.bdtr).
    sizes, where = np.unique(n_arr.ravel(), return_inverse=True)
    lo = np.full(len(sizes), -1, dtype=np.int64)  # CDF(lo) <= limit
    hi = sizes.copy()  # CDF(hi) > limit
    while True:
        open_ = hi - lo > 1
        if not open_.any():
            break
        mid = (lo + hi) // 2
        at_or_below = special.bdtr(np.maximum(mid, 0), sizes, 0.5) <= limit
        lo = np.where(open_ & at_or_below, mid, lo)
        hi = np.where(open_ & ~at_or_below, mid, hi)
    k = lo[where].reshape(n_arr.shape)
    l = np.where(n_arr > 0, np.maximum(k + 1, 0), 0)
    return l if l.ndim else l.reshape(())


def le_boudec_ranks(n: np.ndarray | int, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Normal-approximation ranks (j, k), 1-based, of the median's interval [x(j), x(k)].

    Le Boudec (2010), Performance Evaluation of Computer and Communication Systems, Theorem 2.1
    with the normal approximation of the binomial: j = floor(0.5 n - z sqrt(n) / 2),
    k = ceil(0.5 n + 1 + z sqrt(n) / 2), z = Φ⁻¹((1 + level) / 2); for 95% z/2 = 0.98. The
    book recommends it for n >= 71, where it matches the exact interval. OrderSage used these
    ranks as 0-based indices (each bound one order statistic higher than here), and at a
    Bonferroni-adjusted level in its npbench results. Ranks outside 1..n mean "n too small"
    (0 is returned for j, n + 1 for k in that case so callers can test 1 <= j, k <= n).
    """
    level = _check_level(level)
    n_arr = np.asarray(n, dtype=np.int64)
    half_width = special.ndtri((1.0 + level) / 2.0) * np.sqrt(n_arr) / 2.0  # the normal quantile, as norm.ppf
    j = np.floor(0.5 * n_arr - half_width).astype(np.int64)
    k = np.ceil(0.5 * n_arr + 1.0 + half_width).astype(np.int64)
    return np.maximum(j, 0), np.minimum(k, n_arr + 1)


def min_sample_size(level: float = 0.95, method: str = "exact-binomial") -> int:
    """The smallest n for which `method` gives an interval at `level` (6 for exact 95%)."""
    level = _check_level(level)
    _check_method(method)
    if method == "exact-binomial":
        # l = 1 is possible when 1 - 2 (1/2)**n >= level, i.e. n >= log2(2 / (1 - level)).
        n = max(1, math.ceil(math.log2(2.0 / (1.0 - level))) - 1)
        while exact_binomial_rank(n, level) < 1:
            n += 1
        return n
    n = 1
    while True:
        j, k = le_boudec_ranks(n, level)
        if j >= 1 and k <= n:
            return n
        n += 1


def grouped_median_ci(
    values: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    level: float = 0.95,
    method: str = "exact-binomial",
    *,
    order: np.ndarray | None = None,
) -> MedianCI:
    """Median and distribution-free CI of the median of every group, from one sort.

    method "exact-binomial": [x(l), x(n-l+1)] with l = exact_binomial_rank(n, level).
    method "le-boudec": [x(j), x(k)] with (j, k) = le_boudec_ranks(n, level).
    The median is the usual one (mean of the two middle values when n is even), as np.median.
    order: indices that order the rows by (group, value) when the caller has them (see
    _grouped.refine_order); otherwise they are computed here.
    """
    level = _check_level(level)
    _check_method(method)
    v, g = check_grouped(values, group, n_groups)
    _, sv, _, counts, starts = grouped_sort(v, g, n_groups, order)
    median = np.full(n_groups, np.nan)
    low = np.full(n_groups, np.nan)
    high = np.full(n_groups, np.nan)
    has = counts > 0
    if has.any():
        s, c = starts[has], counts[has]
        median[has] = (sv[s + (c - 1) // 2] + sv[s + c // 2]) / 2.0
    if method == "exact-binomial":
        l = exact_binomial_rank(counts, level)
        lo_rank, hi_rank = l, counts - l + 1
        ok = l >= 1
    else:
        lo_rank, hi_rank = le_boudec_ranks(counts, level)
        ok = (lo_rank >= 1) & (hi_rank <= counts)
    ok = ok & has
    low[ok] = sv[starts[ok] + lo_rank[ok] - 1]
    high[ok] = sv[starts[ok] + hi_rank[ok] - 1]
    return MedianCI(median=median, low=low, high=high, n=counts)
