"""Median CIs: exact ranks against brute force over scipy's binomial, coverage by simulation,
Le Boudec's ranks, and the intervals of the paper's Table 3."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from benchsage.stats import (
    exact_binomial_coverage,
    exact_binomial_rank,
    grouped_median_ci,
    le_boudec_ranks,
    min_sample_size,
)

ARTIFACT = Path(os.environ.get("BENCHSAGE_TEST_ARTIFACT") or "/nonexistent")  # the OrderSage artifact data; .ci/run sets it


def _brute_rank(n: int, level: float) -> int:
    """Try every l: the coverage P(l <= B <= n - l) straight from scipy's binomial CDF."""
    l = np.arange(1, n + 1)
    coverage = stats.binom.cdf(n - l, n, 0.5) - stats.binom.cdf(l - 1, n, 0.5)
    ok = np.flatnonzero(coverage >= level)
    return int(l[ok[-1]]) if len(ok) else 0


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99, 1 - 0.05 / 3])
def test_exact_rank_matches_brute_force(level):
    ns = np.arange(0, 301)
    ranks = exact_binomial_rank(ns, level)
    assert [int(r) for r in ranks] == [_brute_rank(int(n), level) for n in ns]


def test_exact_rank_known_values():
    # Le Boudec (2010) Table A.1 / Hollander-Wolfe: n = 6 -> [x(1), x(6)], n = 50 -> [x(18), x(33)].
    assert int(exact_binomial_rank(5)) == 0
    assert int(exact_binomial_rank(6)) == 1
    assert int(exact_binomial_rank(50)) == 18
    assert int(exact_binomial_rank(100)) == 40
    assert min_sample_size(0.95) == 6
    assert min_sample_size(0.99) == 8
    assert exact_binomial_coverage(50, 18)[()] >= 0.95 > exact_binomial_coverage(50, 19)[()]


def test_exact_rank_scales_to_large_n():
    n = np.array([10_000, 1_000_000])
    l = exact_binomial_rank(n)
    cov = exact_binomial_coverage(n, l)
    assert np.all(cov >= 0.95) and np.all(exact_binomial_coverage(n, l + 1) < 0.95)


def test_le_boudec_ranks():
    # 95%: j = floor(0.5 n - 0.98 sqrt(n)), k = ceil(0.5 n + 1 + 0.98 sqrt(n)).
    for n in (71, 100, 250, 1000):
        j, k = le_boudec_ranks(n)
        assert int(j) == int(np.floor(0.5 * n - 0.98 * np.sqrt(n)))
        assert int(k) == int(np.ceil(0.5 * n + 1 + 0.98 * np.sqrt(n)))
    # For large n the normal approximation meets the exact interval.
    assert int(le_boudec_ranks(100)[0]) == int(exact_binomial_rank(100))
    assert min_sample_size(0.95, "le-boudec") == 8


def test_grouped_median_ci_against_direct_order_statistics():
    rng = np.random.default_rng(8)
    values = np.round(rng.gamma(2, 10, 4000), 1)
    group = rng.integers(0, 60, 4000)
    sizes = np.bincount(group, minlength=62)
    ci = grouped_median_ci(values, group, 62)
    for i in range(60):
        x = np.sort(values[group == i])
        n = len(x)
        l = _brute_rank(n, 0.95)
        assert ci.n[i] == n == sizes[i]
        assert ci.median[i] == np.median(x)
        assert (ci.low[i], ci.high[i]) == (x[l - 1], x[n - l])
    assert np.isnan(ci.median[60]) and np.isnan(ci.low[61])
    lb = grouped_median_ci(values, group, 62, method="le-boudec")
    for i in range(60):
        x = np.sort(values[group == i])
        j, k = le_boudec_ranks(len(x))
        assert (lb.low[i], lb.high[i]) == (x[j - 1], x[k - 1])


def test_too_few_values_give_nan_bounds():
    values = np.arange(1.0, 12.0)
    group = np.r_[np.zeros(5, int), np.ones(6, int)]
    ci = grouped_median_ci(values, group, 2)
    assert ci.median[0] == 3.0 and np.isnan(ci.low[0]) and np.isnan(ci.high[0])
    assert (ci.low[1], ci.median[1], ci.high[1]) == (6.0, 8.5, 11.0)
    lb = grouped_median_ci(values, group, 2, method="le-boudec")
    assert np.isnan(lb.low).all()


@pytest.mark.parametrize("method", ["exact-binomial", "le-boudec"])
def test_coverage_by_simulation(method):
    """Both intervals cover the true median of a skewed distribution about 95% of the time."""
    rng = np.random.default_rng(12)
    n, reps = 30, 4000
    values = rng.exponential(1.0, n * reps)
    group = np.repeat(np.arange(reps), n)
    ci = grouped_median_ci(values, group, reps, method=method)
    covered = np.mean((ci.low <= np.log(2)) & (np.log(2) <= ci.high))
    expected = exact_binomial_coverage(n, exact_binomial_rank(n) if method == "exact-binomial" else le_boudec_ranks(n)[0])[()]
    assert expected >= 0.94
    se = np.sqrt(expected * (1 - expected) / reps)
    assert abs(covered - expected) < 4 * se


@pytest.mark.artifact
def test_paper_table3_intervals():
    """The 95% exact intervals of get_hits are the paper's Table 3 intervals."""
    arms = {"fixed": [], "random": []}
    with open(ARTIFACT / "memcached-table3" / "all_exp_results.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["exp_command"] == "./get_hits_test.sh":
                arms[row["order_type"]].append(float(row["result"]))
    values = np.r_[arms["fixed"], arms["random"]]
    group = np.r_[np.zeros(50, int), np.ones(50, int)]
    ci = grouped_median_ci(values, group, 2)
    assert ci.median[0] == pytest.approx(70154.6, abs=0.1) and ci.median[1] == pytest.approx(67697.8, abs=0.1)
    assert ci.low[0] == pytest.approx(68758.2, abs=0.1) and ci.high[0] == pytest.approx(73462.2, abs=0.1)
    assert ci.low[1] == pytest.approx(65817.7, abs=0.1) and ci.high[1] == pytest.approx(68776.9, abs=0.1)


@pytest.mark.artifact
def test_ordersage_intervals_are_le_boudec_shifted_by_one():
    """node_stats.csv used Le Boudec's ranks as 0-based indices: one order statistic higher."""
    arms = {"fixed": [], "random": []}
    with open(ARTIFACT / "memcached-table3" / "all_exp_results.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["exp_command"] == "./get_hits_test.sh":
                arms[row["order_type"]].append(float(row["result"]))
    x = np.sort(arms["fixed"])
    j, k = le_boudec_ranks(50)
    assert (x[j], x[k]) == (69112.8680419548, 73827.2065634988)


def test_bad_names():
    with pytest.raises(ValueError, match="unknown median CI method 'bootstrap'"):
        grouped_median_ci(np.ones(3), np.zeros(3, int), 1, method="bootstrap")
    with pytest.raises(ValueError, match="level"):
        exact_binomial_rank(10, 1.0)


@pytest.mark.parametrize("level", [0.01, 0.5, 0.95, 0.999])
def test_exact_rank_meets_its_definition_at_huge_n(level):
    # l - 1 is the largest k with P(B <= k) <= (1 - level) / 2; scipy's binom.ppf drifts by
    # several steps at n = 10**7, the bisection over the CDF does not.
    from scipy import special

    n = np.array([65_432, 1_000_000, 10**7])
    l = exact_binomial_rank(n, level)
    limit = (1 - level) / 2 * (1 + 1e-12)
    assert np.all(special.bdtr(l - 1, n, 0.5) <= limit)
    assert np.all(special.bdtr(l, n, 0.5) > limit)


def test_analysis_path_does_not_import_scipy_stats():
    # scipy.stats costs 0.3-0.6 s of import time; `benchsage analyze` needs scipy.special only.
    import subprocess
    import sys

    code = (
        "import sys, benchsage.cli, benchsage.analyze.pipeline, benchsage.stats;"
        "sys.exit(1 if 'scipy.stats' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
