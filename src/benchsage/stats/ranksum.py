"""The two-sample rank-sum test: Wilcoxon-Mann-Whitney, which is also the Kruskal-Wallis test of
two samples.

One implementation of the statistic, rank_sum_test, works from each comparison's rank sum; a
front end serves each layout the package meets:

- kruskal_2: many comparisons of any sizes at once, each value with a comparison code and a 0/1
  label (the order analysis: fixed vs random arm of every test and metric);
- mann_whitney_z: rows of equal sizes (the looks of a sequential experiment, the advice's
  simulations of them);
- mann_whitney: one pair of samples, with the exact null distribution of U while both are
  small and untied (declared comparisons, as R's wilcox.test).

The diagnostics (one category of a test's values against the rest) and van Elteren's stratified
test (stats/stratified.py) start from the same rank sums and variance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy import special

from benchsage.stats._grouped import GroupedRanks, check_grouped, grouped_ranks, row_ranks
from benchsage.stats.permutation import floor_p, log_assignments

# Exact null distribution of U below this size on both sides and without ties, as R's
# wilcox.test; the normal approximation is accurate beyond it.
EXACT_BELOW = 50


# --- the statistic --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RankSumResult:
    """Per comparison: H (the tie-corrected Kruskal-Wallis statistic, chi-squared with 1 df),
    z = S / sd(S) (positive when sample 1's values tend to be the larger) and the two-sided p.
    NaN where the test is undefined: a sample is empty, or every value is equal."""

    statistic: np.ndarray
    z: np.ndarray
    pvalue: np.ndarray


def rank_sum_variance(n0: np.ndarray, n1: np.ndarray, tie_term: np.ndarray) -> np.ndarray:
    """Var(S) under the null hypothesis, tie-corrected, for samples of n0 and n1 values:

        Var(S) = n0 n1 (N**3 - N - T) / (12 N (N - 1)),   N = n0 + n1,

    T the sum over runs of equal values of t**3 - t (Lehmann, Nonparametrics, 1975, eq. 1.74;
    Kruskal & Wallis 1952, eq. 1.2). N**3 - N - T is an integer, exact in float64, so however
    many ties there are the variance carries one rounding. NaN where N < 2.
    """
    n0 = np.asarray(n0, dtype=np.float64)
    n1 = np.asarray(n1, dtype=np.float64)
    n = n0 + n1
    with np.errstate(divide="ignore", invalid="ignore"):
        return n0 * n1 * (n * n * n - n - tie_term) / (12.0 * n * (n - 1.0))


def rank_sum_test(rank_sum: np.ndarray, n0: np.ndarray, n1: np.ndarray, tie_term: np.ndarray, *, continuity: bool = False) -> RankSumResult:
    """The two-sample rank-sum test of many comparisons from their rank sums.

    Wilcoxon (1945); Mann & Whitney (1947), Ann. Math. Statist. 18(1); Kruskal & Wallis (1952),
    JASA 47(260). With the N = n0 + n1 values of a comparison ranked together (ties get their
    average rank) and S the sum over sample 1 of (rank - (N + 1) / 2), which is U_1 - n0 n1 / 2
    for the Mann-Whitney U of sample 1:

        H = S**2 / Var(S) = 12 S**2 N (N - 1) / (n0 n1 (N**3 - N - T)),   z = S / sqrt(Var(S))

    (Var(S) from rank_sum_variance); p = P(chi2_1 >= H) = 2 (1 - Phi(|z|)). H is the
    tie-corrected Kruskal-Wallis H of the two samples, computed in the second form, whose
    integer factors are exact. With continuity, p = 2 (1 - Phi((|S| - 1/2) / sqrt(Var(S))))
    (at most 1), the continuity-corrected normal approximation of scipy.stats.mannwhitneyu.
    p is floored at 1 / C(N, n1) (permutation.least_p), where the tail underflows.

    rank_sum: S per comparison (half-integers: exact in float64); n0, n1: the sample sizes;
    tie_term: T per comparison (the tie term of all N values).
    """
    s = np.asarray(rank_sum, dtype=np.float64)
    f0, f1, t = (np.broadcast_to(np.asarray(x, dtype=np.float64), s.shape) for x in (n0, n1, tie_term))
    n = f0 + f1
    untied = n * n * n - n - t  # 0 exactly when all N values are tied (one run of length N)
    defined = (f0 > 0) & (f1 > 0) & (untied > 0)
    h = np.full(s.shape, np.nan)
    z = np.full(s.shape, np.nan)
    p = np.full(s.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        num = 12.0 * s * s * n * (n - 1.0)
        den = f0 * f1 * untied
        h[defined] = num[defined] / den[defined]
        sd = np.sqrt(rank_sum_variance(f0, f1, t))
        z[defined] = s[defined] / sd[defined]
    if continuity:
        p[defined] = np.minimum(1.0, 2.0 * special.ndtr(-(np.abs(s[defined]) - 0.5) / sd[defined]))
    else:
        p[defined] = special.chdtrc(1.0, h[defined])
    # never below 1 / C(N, n1), one of the equally likely splits (a far tail underflows to 0)
    split = special.gammaln(f0 + 1.0) + special.gammaln(f1 + 1.0)
    p[defined] = floor_p(p[defined], log_assignments(n[defined], split[defined]))
    return RankSumResult(statistic=h, z=z, pvalue=p)


def centred_ranks(ranks: GroupedRanks) -> np.ndarray:
    """rank - (N + 1) / 2 of each value in sorted order, N the size of its group: the terms of S."""
    return ranks.ranks_sorted - (ranks.counts.astype(np.float64)[ranks.sorted_group] + 1.0) / 2.0


def label_rank_sums(ranks: GroupedRanks, label: np.ndarray, n_groups: int) -> np.ndarray:
    """S of every group: the sum of centred_ranks over its values labelled 1 (label: 0/1 per
    value, in the values' own order)."""
    if len(ranks.order) == 0:
        return np.zeros(n_groups)
    return np.bincount(ranks.sorted_group, weights=centred_ranks(ranks) * label[ranks.order], minlength=n_groups)


# --- many comparisons of any sizes ----------------------------------------------------------


@dataclass(frozen=True, eq=False)
class KruskalResult:
    """Per comparison: H (tie-corrected), its p-value, and the sizes of samples 0 and 1.

    statistic and pvalue are NaN where the test is undefined: a sample is empty, or every
    value of the comparison is equal.
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    n0: np.ndarray
    n1: np.ndarray


def kruskal_2(values: np.ndarray, group: np.ndarray, label: np.ndarray, n_groups: int, *, ranks: GroupedRanks | None = None) -> KruskalResult:
    """Kruskal-Wallis H with the tie correction, for n_groups two-sample comparisons.

    Kruskal & Wallis (1952), "Use of ranks in one-criterion variance analysis", JASA 47(260).
    With N values ranked together (ties get their average rank), n_i values and rank sum R_i
    in sample i:

        H = 12 / (N (N + 1)) * sum_i R_i**2 / n_i - 3 (N + 1)
        H_corrected = H / (1 - sum_runs (t**3 - t) / (N**3 - N))

    and p = P(chi2_1 >= H_corrected), chi-squared with k - 1 = 1 degree of freedom. For two
    samples the sum collapses to rank_sum_test's 12 S**2 N (N - 1) / (n0 n1 (N**3 - N - T)),
    S the sum over sample 1 of (rank - (N + 1) / 2); ranks are half-integers, so S is exact and
    H keeps full relative precision even when it is tiny (the textbook form subtracts two large
    numbers). Agrees with scipy.stats.kruskal(sample0, sample1) to 1e-9 relative; where H is
    within rounding of 0, scipy's H carries an error of ~1e-14 that moves its p by up to ~1e-7
    (the chi-squared tail is infinitely steep at 0), and the value here is the exact one.

    values: float array; group: int codes 0..n_groups-1, which comparison each value is in;
    label: 0/1 (or bool), which of the comparison's two samples the value belongs to.
    ranks: grouped_ranks(values, group, n_groups) when the caller has it already (to reuse its
    sort for other statistics).
    """
    v, g = check_grouped(values, group, n_groups)
    lab = np.asarray(label)
    if lab.shape != v.shape:
        raise ValueError(f"label must have the shape of values {v.shape}, got {lab.shape}")
    if lab.dtype != bool:
        if len(lab) and not np.isin(lab, (0, 1)).all():
            raise ValueError("label must hold only 0 and 1 (which of the two samples)")
        lab = lab.astype(bool)
    gr = ranks if ranks is not None else grouped_ranks(v, g, n_groups)
    n1 = np.bincount(g, weights=lab, minlength=n_groups).astype(np.int64) if len(g) else np.zeros(n_groups, np.int64)
    n0 = gr.counts - n1
    test = rank_sum_test(label_rank_sums(gr, lab, n_groups), n0, n1, gr.tie_term)
    return KruskalResult(statistic=test.statistic, pvalue=test.pvalue, n0=n0, n1=n1)


# --- rows of equal sizes --------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MannWhitneyZ:
    """Per comparison: the fixed arm's U (pairs fixed > random, ties counting 1/2), and
    z = (U - n0 n1 / 2) / sd with the tie-corrected sd; NaN where every value is equal."""

    u: np.ndarray
    z: np.ndarray
    n_fixed: int
    n_random: int


def mann_whitney_z(fixed: np.ndarray, random: np.ndarray) -> MannWhitneyZ:
    """Standardized Mann-Whitney statistic of the fixed arm against the random arm.

    Mann & Whitney (1947); with N = n0 + n1 values ranked together (ties get their average
    rank), R0 the fixed arm's rank sum and t the sizes of the runs of tied values:

        U = R0 - n0 (n0 + 1) / 2,    z = (U - n0 n1 / 2) / sd

    with sd from rank_sum_test (U - n0 n1 / 2 is the fixed arm's S). Positive z: the fixed
    arm's values tend to be larger. z^2 is the tie-corrected Kruskal-Wallis H of the two arms,
    so 2 (1 - Phi(|z|)) equals benchsage's fixed-sample p-value and
    scipy.stats.mannwhitneyu(..., use_continuity=False, method="asymptotic").

    fixed: (..., n0) and random: (..., n1) arrays with equal leading shapes; each row along the
    leading axes is one comparison.
    """
    x0 = np.asarray(fixed, dtype=np.float64)
    x1 = np.asarray(random, dtype=np.float64)
    if x0.shape[:-1] != x1.shape[:-1]:
        raise ValueError(f"fixed and random must have the same leading shape, got {x0.shape} and {x1.shape}")
    if np.isnan(x0).any() or np.isnan(x1).any():
        raise ValueError("values contain NaN; drop them before testing")
    lead = x0.shape[:-1]
    n0, n1 = x0.shape[-1], x1.shape[-1]
    rows = int(np.prod(lead)) if lead else 1
    if n0 == 0 or n1 == 0 or rows == 0:
        nan = np.full(lead, np.nan)
        return MannWhitneyZ(u=nan, z=nan.copy(), n_fixed=n0, n_random=n1)
    ranked = row_ranks(np.concatenate([x0.reshape(rows, n0), x1.reshape(rows, n1)], axis=1))
    r0 = np.where(ranked.order < n0, ranked.ranks_sorted, 0.0).sum(axis=1)
    u = r0 - n0 * (n0 + 1) / 2.0
    z = rank_sum_test(u - n0 * n1 / 2.0, n0, n1, ranked.tie_term).z
    return MannWhitneyZ(u=u.reshape(lead), z=z.reshape(lead), n_fixed=n0, n_random=n1)


# --- one pair, exact for small samples ------------------------------------------------------


class MannWhitneyResult(NamedTuple):
    """U of sample a, the two-sided p-value, and how p was found: "exact" or "normal"."""

    statistic: float
    pvalue: float
    method: str


@lru_cache(maxsize=64)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """Number of arrangements of m + n distinct values giving U = 0, 1, ..., m n: the
    coefficients of the Gaussian binomial [m + n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) /
    (1 - q^i) (Harding 1984, "An efficient, minimal-storage procedure for calculating the
    Mann-Whitney U, generalized U and similar distributions", Applied Statistics 33(1)).

    In Python integers, so exact: they reach C(98, 49) ~ 2.5e28 at the largest size used.
    """
    m, n = min(m, n), max(m, n)
    size = m * n + 1
    f = np.zeros(size, dtype=object)
    f[0] = 1
    for i in range(1, m + 1):
        # Divide by (1 - q^i): a running sum with stride i, truncated at degree m n (the
        # product is a polynomial of degree i n <= m n after each step, so truncation is exact).
        pad = (-size) % i
        g = np.concatenate([f, np.zeros(pad, dtype=object)]).reshape(-1, i)
        f = np.cumsum(g, axis=0).ravel()[:size]
        # Multiply by (1 - q^(n+i)).
        s = n + i
        if s < size:
            f[s:] = f[s:] - f[: size - s]
    return tuple(int(c) for c in f)


def u_cdf_exact(u: int, m: int, n: int) -> float:
    """P(U <= u) under the null hypothesis (no ties), from the exact counts of _u_counts."""
    if u < 0:
        return 0.0
    counts = _u_counts(m, n)
    if u >= len(counts) - 1:
        return 1.0
    return sum(counts[: u + 1]) / math.comb(m + n, m)


def use_exact(m: int, n: int, ties: bool) -> bool:
    """Whether the exact null distribution of U applies: no ties and both samples under 50."""
    return not ties and m < EXACT_BELOW and n < EXACT_BELOW


def mann_whitney(a: np.ndarray, b: np.ndarray) -> MannWhitneyResult:
    """The two-sided Mann-Whitney U test of a against b.

    Mann & Whitney (1947), Ann. Math. Statist. 18(1). U_a = #{(i, j): a_i > b_j} + 1/2
    #{a_i = b_j}. "exact" (no ties and both samples under 50, as R's wilcox.test): p =
    min(1, 2 P(U >= max(U_a, U_b))) from the exact null distribution. "normal" otherwise:
    rank_sum_test with the continuity correction, p = 2 (1 - Phi((|U_a - m n / 2| - 1/2) /
    sd)), sd tie-corrected. Each agrees with scipy.stats.mannwhitneyu(a, b, method="exact" or
    "asymptotic").
    """
    m, n = len(a), len(b)
    ranked = row_ranks(np.concatenate([a, b])[None, :])
    u_a = float(np.where(ranked.order < m, ranked.ranks_sorted, 0.0).sum() - m * (m + 1) / 2.0)
    tie_term = float(ranked.tie_term[0])
    if use_exact(m, n, tie_term > 0):
        # P(U >= u_max) = P(U <= m n - u_max) by symmetry; u_max is an integer without ties.
        u_max = max(u_a, m * n - u_a)
        p = 2.0 * u_cdf_exact(int(round(m * n - u_max)), m, n)
        return MannWhitneyResult(u_a, min(1.0, p), "exact")
    test = rank_sum_test(np.array([u_a - m * n / 2.0]), m, n, np.array([tie_term]), continuity=True)
    return MannWhitneyResult(u_a, float(test.pvalue[0]), "normal")
