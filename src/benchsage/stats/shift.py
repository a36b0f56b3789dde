"""The shift between two samples: the Hodges-Lehmann estimate and its distribution-free interval.

With the m n pairwise differences d_ij = x_i - y_j sorted, the estimate is their median (Hodges &
Lehmann 1963, "Estimates of location based on rank tests", Ann. Math. Statist. 34(2)) and the
interval is [d_(k), d_(mn+1-k)] (Moses 1953; Bauer 1972, "Constructing confidence sets using
rank statistics", JASA 67(339); Hollander, Wolfe & Chicken, Nonparametric Statistical Methods,
3rd ed., Section 4.3): the shifts that the two-sided rank-sum test (stats/ranksum.py) of
x - shift against y does not reject. For continuous values it covers the shift between the
distributions (y + shift distributed as x) with the stated probability, whatever their shape.

One implementation serves the comparisons (the interval of the ratio of two tests' values, on
logs: stats/compare.py) and the sequential looks (many comparisons of equal sizes at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import special

from benchsage.stats.ranksum import _u_counts, rank_sum_variance, use_exact

# Pairwise differences of one comparison are materialised up to this many; beyond it the order
# statistics are found by bisection on their value (memory stays O(m + n)).
MAX_PAIRS_IN_MEMORY = 1 << 22
# Pairwise differences formed at once when many comparisons are worked through in chunks.
CHUNK_ELEMENTS = 20_000_000


# --- the ranks of the interval's bounds -----------------------------------------------------


def shift_rank(m: int, n: int, critical: float, tie_term: float = 0.0) -> int:
    """k of the interval [d_(k), d_(mn+1-k)] from the normal approximation of U:

        k = floor(m n / 2 - c sd + 1/2),   sd = sqrt(Var(U)) (rank_sum_variance; tie-corrected)

    (Hollander & Wolfe, "Nonparametric Statistical Methods", 2nd ed., eq. 4.41, rounded to the
    nearest integer, i.e. the continuity-corrected approximation), c the two-sided critical
    value of the standard normal. 0 when no finite interval has the level: the interval is then
    the whole line."""
    if not math.isfinite(critical) or m == 0 or n == 0:
        return 0
    sd = math.sqrt(float(rank_sum_variance(m, n, tie_term)))
    return max(math.floor(m * n / 2.0 - critical * sd + 0.5), 0)


def dual_rank(m: np.ndarray, n: np.ndarray, critical: np.ndarray, tie_term: np.ndarray | float = 0.0) -> np.ndarray:
    """k of the interval [d_(k), d_(mn+1-k)] that is dual to the two-sided rank-sum z test
    without continuity correction (stats/ranksum.py rank_sum_test: |z| >= critical rejects,
    z = (U - m n / 2) / sd, sd tie-corrected):

        k = floor(m n / 2 - critical sd) + 1

    With U(d) = #{(i, j): x_i - y_j > d} and no ties, d_(k) > 0 iff at most k - 1 differences
    are <= 0, i.e. U(0) >= m n + 1 - k = ceil(m n / 2 + critical sd), which for an integer U is
    U(0) - m n / 2 >= critical sd; and d_(mn+1-k) < 0 iff U(0) <= k - 1 = floor(m n / 2 -
    critical sd), i.e. m n / 2 - U(0) >= critical sd. So the interval excludes 0 exactly when
    the test rejects no shift. With ties the test counts a tied pair 1/2 and the interval only
    the pairs strictly above: an interval that excludes 0 still means a rejection, but the test
    may reject where the interval touches 0 (tie_term: the pooled values' sum of t**3 - t,
    whose correction makes sd what the test uses).

    Vectorised; 0 where no finite interval is dual to the test (it can never reject), and never
    above (m n + 1) // 2, where the two bounds meet."""
    m = np.asarray(m, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        sd = np.sqrt(rank_sum_variance(m, n, tie_term))
        k = np.floor(m * n / 2.0 - np.asarray(critical, dtype=np.float64) * sd) + 1.0
    k = np.where(np.isfinite(k), k, 0.0)
    return np.clip(k, 0.0, np.floor((m * n + 1.0) / 2.0)).astype(np.int64)


def ci_rank(m: int, n: int, level: float = 0.95, tie_term: float = 0.0) -> tuple[int, str]:
    """(k, method): the 1-based rank k of the lower bound among the m n pairwise differences
    of the interval at `level`; the upper bound has rank m n + 1 - k.

    With U(d) = #{(i, j): x_i - y_j > d}, the interval [D(k), D(mn+1-k)] covers the shift d
    with probability 1 - 2 P(U <= k - 1) for continuous data (Bauer 1972).
    "bauer-exact" (no ties, m and n < 50): k - 1 is the largest u with P(U <= u) <= (1 -
    level) / 2 under the exact null distribution, so the coverage is at least `level`.
    "bauer-normal" otherwise: shift_rank at z = Phi^-1((1 + level) / 2) with the tie-corrected
    variance. k = 0 means no interval reaches the level (m = n = 3 at 95%, for example).
    """
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must lie strictly between 0 and 1, got {level}")
    q = (1.0 - level) / 2.0
    if use_exact(m, n, tie_term > 0):
        counts = _u_counts(m, n)
        total = math.comb(m + n, m)
        limit = q * (1.0 + 1e-12)  # an exact equality stays on the accepting side
        cum = 0
        u = -1
        for c in counts[: len(counts) // 2 + 1]:
            if (cum + c) / total > limit:
                break
            cum += c
            u += 1
        return u + 1, "bauer-exact"
    return shift_rank(m, n, float(special.ndtri(1.0 - q)), tie_term), "bauer-normal"


# --- order statistics of the pairwise differences -------------------------------------------


def pairwise_order_statistics(
    x: np.ndarray, y: np.ndarray, ranks: Sequence[int] | np.ndarray, *, max_pairs: int = MAX_PAIRS_IN_MEMORY,
    chunk_elements: int = CHUNK_ELEMENTS
) -> np.ndarray:
    """The order statistics of the given 1-based ranks among the m n differences x_i - y_j of
    each row: x (rows, m) and y (rows, n) give (rows, len(ranks)). ranks: the same for every
    row, or a (rows, r) array of each row's own.

    Rows whose m n differences fit max_pairs are worked through in chunks of about
    chunk_elements differences (a partial sort each); larger ones one row at a time by
    bisection on the value, without forming all differences.
    """
    rows, m = x.shape
    n = y.shape[1]
    pairs = m * n
    per_row = np.broadcast_to(np.asarray(ranks, dtype=np.int64), (rows, np.shape(ranks)[-1]))
    out = np.empty(per_row.shape)
    if pairs > max_pairs:
        for i in range(rows):
            xs, ys = np.sort(x[i]), np.sort(y[i])
            out[i] = [_kth_difference_bisect(xs, ys, int(r), max_pairs) for r in per_row[i]]
        return out
    per = max(1, chunk_elements // max(pairs, 1))
    for start in range(0, rows, per):
        stop = min(rows, start + per)
        at = per_row[start:stop] - 1
        d = (x[start:stop, :, None] - y[start:stop, None, :]).reshape(stop - start, pairs)
        d.partition(np.unique(at), axis=1)
        out[start:stop] = np.take_along_axis(d, at, axis=1)
    return out


def _kth_difference_bisect(xs: np.ndarray, ys: np.ndarray, k: int, cap: int) -> float:
    """The k-th smallest xs[i] - ys[j] (xs, ys sorted) without forming all differences:
    bisection on the value t, counting #{(i, j): ys[j] >= xs[i] - t} with searchsorted, until
    at most `cap` differences lie in (lo, hi]; those are formed and the one of the right rank
    selected."""
    n = len(ys)

    def count_le(t: float) -> int:
        return int(np.sum(n - np.searchsorted(ys, xs - t, side="left")))

    # Start well outside the range of the differences, so that count_le(lo) = 0 < k <= m n =
    # count_le(hi) holds despite rounding in xs - t.
    lo_d, hi_d = float(xs[0] - ys[-1]), float(xs[-1] - ys[0])
    lo, hi = lo_d - (abs(lo_d) + 1.0), hi_d + (abs(hi_d) + 1.0)
    c_lo, c_hi = 0, len(xs) * n
    for _ in range(200):
        if c_hi - c_lo <= cap:
            break
        mid = (lo + hi) / 2.0
        if not lo < mid < hi:  # the window is one float wide: its differences are all equal
            break
        c_mid = count_le(mid)
        if c_mid >= k:
            hi, c_hi = mid, c_mid
        else:
            lo, c_lo = mid, c_mid
    start = np.searchsorted(ys, xs - hi, side="left")
    end = np.searchsorted(ys, xs - lo, side="left")
    lens = end - start
    total = int(lens.sum())
    if total == 0:
        return hi
    if total > cap:  # many equal differences (tied data): the smallest in the window is the one
        rows = lens > 0
        return float(np.min(xs[rows] - ys[end[rows] - 1]))
    row = np.repeat(np.arange(len(xs)), lens)
    offset = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
    d = xs[row] - ys[start[row] + offset]
    below = int(np.sum(n - end))
    r = min(max(k - below, 1), total) - 1
    return float(np.partition(d, r)[r])


# --- the estimate and its interval, for many comparisons at once ----------------------------


@dataclass(frozen=True, eq=False)
class ShiftCI:
    """Per comparison: the Hodges-Lehmann shift (x minus y) and its distribution-free CI
    [low, high]; low = -inf and high = inf when the samples are too small for the level."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    rank: int  # k: the CI is the k-th smallest and k-th largest pairwise difference


def shift_ci(x: np.ndarray, y: np.ndarray, critical: float, *, chunk_elements: int = CHUNK_ELEMENTS) -> ShiftCI:
    """Hodges-Lehmann estimate of the shift of x against y and its distribution-free CI.

    With the m n pairwise differences d_ij = x_i - y_j sorted, the estimate is their median and
    the CI is [d_(k), d_(mn + 1 - k)] with k from shift_rank at the two-sided critical value
    `critical` of the standard normal, without the tie correction: for continuous values its
    coverage is 1 - 2 (1 - Phi(critical)) up to the normal approximation, whatever the
    distribution.

    x: (..., m), y: (..., n), equal leading shapes; each row along the leading axes is one
    comparison. Work is done in chunks of about `chunk_elements` pairwise differences.
    """
    x0 = np.asarray(x, dtype=np.float64)
    x1 = np.asarray(y, dtype=np.float64)
    if x0.shape[:-1] != x1.shape[:-1]:
        raise ValueError(f"x and y must have the same leading shape, got {x0.shape} and {x1.shape}")
    lead = x0.shape[:-1]
    m, n = x0.shape[-1], x1.shape[-1]
    rows = int(np.prod(lead)) if lead else 1
    est = np.full(rows, np.nan)
    low = np.full(rows, -np.inf)
    high = np.full(rows, np.inf)
    pairs = m * n
    k = shift_rank(m, n, critical)
    if pairs and rows:
        ranks = [(pairs + 1) // 2, pairs // 2 + 1] + ([k, pairs + 1 - k] if k >= 1 else [])
        d = pairwise_order_statistics(x0.reshape(rows, m), x1.reshape(rows, n), ranks, chunk_elements=chunk_elements)
        est = (d[:, 0] + d[:, 1]) / 2.0
        if k >= 1:
            low, high = d[:, 2], d[:, 3]
    return ShiftCI(estimate=est.reshape(lead), low=low.reshape(lead), high=high.reshape(lead), rank=k)
