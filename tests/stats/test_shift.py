"""The Hodges-Lehmann shift and its interval: the ranks of the bounds (exact and normal), the
order statistics of the pairwise differences against brute force, and the interval as the shifts
scipy's Mann-Whitney test does not reject."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from benchsage.stats.ranksum import u_cdf_exact
from benchsage.stats.shift import ci_rank, pairwise_order_statistics, shift_ci, shift_rank


def test_shift_ci_is_the_order_statistics_of_pairwise_differences():
    rng = np.random.default_rng(4)
    f, r = rng.lognormal(size=(5, 13)), rng.lognormal(size=(5, 11))
    ci = shift_ci(f, r, 1.96, chunk_elements=300)  # chunks of 2 rows
    c = shift_rank(13, 11, 1.96)
    assert c == math.floor(13 * 11 / 2 - 1.96 * math.sqrt(13 * 11 * 25 / 12) + 0.5)
    for i in range(5):
        d = np.sort(np.subtract.outer(f[i], r[i]).ravel())
        assert ci.estimate[i] == pytest.approx(np.median(d))
        assert (ci.low[i], ci.high[i]) == (d[c - 1], d[len(d) - c])


def test_shift_ci_inverts_the_mann_whitney_test():
    """A shift inside the CI is not rejected by the (continuity-corrected) Mann-Whitney test of
    fixed - shift against random; just outside it, it is."""
    rng = np.random.default_rng(5)
    f, r = rng.normal(10, 1, 20), rng.normal(10.5, 1, 17)
    ci = shift_ci(f, r, 1.96)
    for delta, rejected in ((ci.low + 1e-9, False), (ci.high - 1e-9, False), (ci.low - 1e-9, True), (ci.high + 1e-9, True)):
        p = stats.mannwhitneyu(f - delta, r, use_continuity=True, method="asymptotic").pvalue
        assert (p <= 0.05) == rejected


def test_shift_ci_of_tiny_arms_is_the_whole_line():
    ci = shift_ci(np.array([1.0, 2.0]), np.array([1.5, 2.5]), 4.0)
    assert ci.low == -np.inf and ci.high == np.inf and ci.rank == 0


@pytest.mark.parametrize("m,n", [(4, 4), (5, 7), (10, 10), (20, 31), (49, 49)])
def test_exact_ci_rank_is_the_largest_with_the_coverage(m, n):
    k, method = ci_rank(m, n, 0.95)
    assert method == "bauer-exact"
    coverage = 1.0 - 2.0 * u_cdf_exact(k - 1, m, n)
    assert coverage >= 0.95
    assert 1.0 - 2.0 * u_cdf_exact(k, m, n) < 0.95  # one rank further in falls short


def test_ci_rank_published_and_degenerate_values():
    # Critical values of the two-sided 5% rank-sum test (Hollander, Wolfe & Chicken, Table A.6):
    # m = n = 10 rejects at U <= 23, so the interval runs from the 24th difference.
    assert ci_rank(10, 10)[0] == 24
    assert ci_rank(4, 4)[0] == 1  # P(U = 0) = 1/70 <= 2.5%
    assert ci_rank(3, 3)[0] == 0  # P(U = 0) = 1/20 > 2.5%: no 95% interval
    k, method = ci_rank(60, 80)
    sigma = math.sqrt(60 * 80 * 141 / 12)
    assert method == "bauer-normal"
    assert k == math.floor(60 * 80 / 2 - 0.5 - stats.norm.ppf(0.975) * sigma) + 1
    assert ci_rank(20, 20, tie_term=6.0)[1] == "bauer-normal"  # ties: normal with tie correction


def test_large_samples_select_without_all_differences():
    rng = np.random.default_rng(5)
    xs, ys = np.sort(rng.normal(size=400)), np.sort(rng.normal(size=300))
    ranks = [1, 2, 1000, 60000, 119999, 120000]
    assert pairwise_order_statistics(xs[None], ys[None], ranks, max_pairs=50).tolist() == pairwise_order_statistics(xs[None], ys[None], ranks).tolist()
    # many equal differences: integer data
    xi, yi = np.sort(rng.integers(0, 5, 300).astype(float)), np.sort(rng.integers(0, 5, 200).astype(float))
    ranks = [1, 777, 30000, 60000]
    assert pairwise_order_statistics(xi[None], yi[None], ranks, max_pairs=50).tolist() == pairwise_order_statistics(xi[None], yi[None], ranks).tolist()
