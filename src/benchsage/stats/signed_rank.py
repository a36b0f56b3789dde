"""The Wilcoxon signed-rank test, one-sided, with its exact null distribution.

Used on paired differences whose sign is a fair coin under the null (two builds measured in
the same run, in randomized positions): the test then holds its level whatever the shape of the
noise, ties and small samples included.
"""

from __future__ import annotations

import functools

import numpy as np

# Exact distributions are computed up to this many non-zero differences; beyond, the normal
# approximation with continuity and tie corrections (its error is below 1e-3 relative there).
EXACT_MAX = 400


def signed_rank_p(d: np.ndarray) -> float:
    """One-sided p-value of H0 "the differences are symmetric about 0" against "shifted above 0".

    Zeros are dropped (Wilcoxon 1945's original treatment, scipy's zero_method="wilcox"); ties
    get mid-ranks. The statistic is W+ = the sum of the ranks of |d| over the positive d; its
    null distribution is that of sum_i s_i r_i with independent fair signs s_i in {0, 1}, computed
    exactly on doubled ranks (integers even with mid-ranks), as scipy.stats.wilcoxon(d,
    alternative="greater", method="exact") does without ties (Hollander, Wolfe & Chicken,
    Nonparametric Statistical Methods, 3rd ed., Section 3.1). p = P(W+ >= observed).
    """
    d = np.asarray(d, dtype=np.float64)
    d = d[np.isfinite(d) & (d != 0.0)]
    n = d.size
    if n == 0:
        return 1.0
    doubled = _doubled_ranks(np.abs(d))
    w2 = int(doubled[d > 0].sum())
    if n > EXACT_MAX:
        return _normal_p(doubled, w2)
    if np.all(doubled == 2 * np.arange(1, n + 1)):
        tail = _untied_tail(n)
    else:
        tail = _tail(tuple(int(r) for r in doubled))
    return float(tail[w2]) if w2 < tail.size else 0.0


def _doubled_ranks(a: np.ndarray) -> np.ndarray:
    """2 x the mid-ranks of `a` (1-based), as integers, in the order of `a`."""
    order = np.argsort(a, kind="stable")
    s = a[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    ends = np.r_[starts[1:], s.size]
    doubled_of_group = starts + ends + 1  # 2 x the mean of the 1-based ranks starts+1 .. ends
    out = np.empty(a.size, dtype=np.int64)
    out[order] = np.repeat(doubled_of_group, ends - starts)
    return out


@functools.lru_cache(maxsize=512)
def _untied_tail(n: int) -> np.ndarray:
    return _tail(tuple(2 * i for i in range(1, n + 1)))


@functools.lru_cache(maxsize=64)
def _tail(doubled: tuple[int, ...]) -> np.ndarray:
    """P(sum_i s_i r_i >= w) for every w, fair independent s_i in {0, 1}."""
    total = sum(doubled)
    pmf = np.zeros(total + 1)
    pmf[0] = 1.0
    top = 0
    for r in doubled:
        pmf[r:top + r + 1] += pmf[:top + 1].copy()
        pmf[:top + r + 1] *= 0.5
        top += r
    tail = np.cumsum(pmf[::-1])[::-1]
    return np.minimum(tail, 1.0)


def _normal_p(doubled: np.ndarray, w2: int) -> float:
    from math import erfc, sqrt

    mean = doubled.sum() / 2.0
    var = float((doubled.astype(np.float64) ** 2).sum()) / 4.0
    z = (w2 - 1.0 - mean) / sqrt(var)  # continuity correction of one doubled-rank unit
    return 0.5 * erfc(z / sqrt(2.0))
