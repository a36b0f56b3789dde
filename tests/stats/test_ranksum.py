"""The two-sample rank-sum test against scipy: rank_sum_test itself, kruskal_2 against
scipy.stats.kruskal one comparison at a time on many random tables, mann_whitney_z and
mann_whitney against scipy.stats.mannwhitneyu, and the exact null distribution of U."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.stats import kruskal_2

sys.path.insert(0, str(Path(__file__).parent))
from floors import floored, least  # noqa: E402
from benchsage.stats.ranksum import _u_counts, mann_whitney, mann_whitney_z, rank_sum_test, u_cdf_exact


def _reference(values, group, label, n_groups):
    """scipy, looping over the comparisons; NaN where the test is undefined."""
    h = np.full(n_groups, np.nan)
    p = np.full(n_groups, np.nan)
    for i in range(n_groups):
        a = values[(group == i) & (label == 0)]
        b = values[(group == i) & (label == 1)]
        if len(a) == 0 or len(b) == 0 or np.all(np.r_[a, b] == a[0]):
            continue  # scipy gives NaN or inf here, or raises
        res = stats.kruskal(a, b)
        h[i], p[i] = res.statistic, floored(res.pvalue, len(a), len(b))
    return h, p


def _assert_matches(values, group, label, n_groups):
    res = kruskal_2(values, group, label, n_groups)
    h, p = _reference(values, group, label, n_groups)
    np.testing.assert_array_equal(np.isnan(res.statistic), np.isnan(h))
    np.testing.assert_array_equal(np.isnan(res.pvalue), np.isnan(p))
    # scipy's H subtracts two numbers near 3(N + 1): its own absolute error is ~1e-14.
    np.testing.assert_allclose(res.statistic, h, rtol=1e-9, atol=1e-11)
    # The chi-squared tail is infinitely steep at 0 (1 - p ~ sqrt(2H / pi)), so scipy's 1e-14
    # error in a vanishing H moves its p by up to 1e-7; kruskal_2's H is exact there. Compare
    # p with scipy where H is clear of that rounding, and with chi2 of the exact H everywhere.
    clear = ~np.isnan(h) & (h > 1e-8)
    np.testing.assert_allclose(res.pvalue[clear], p[clear], rtol=1e-9, atol=0)
    floor = np.array([least(int(a), int(b)) if a and b else np.nan for a, b in zip(res.n0, res.n1)])
    np.testing.assert_allclose(res.pvalue, np.where(np.isnan(res.statistic), np.nan, np.fmax(stats.chi2.sf(res.statistic, 1), floor)), rtol=1e-12, atol=0)
    assert np.array_equal(res.n0, np.bincount(group[label == 0], minlength=n_groups))
    assert np.array_equal(res.n1, np.bincount(group[label == 1], minlength=n_groups))



@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=30),
    st.lists(st.integers(0, 6), min_size=1, max_size=30),
    st.sampled_from([1.0, 0.37, 1e6]),
)
def test_rank_sum_test_from_rank_sums_matches_scipy(a, b, scale):
    """The one implementation, fed rank sums computed by scipy: H is scipy's Kruskal-Wallis H,
    p is its chi-squared p and mannwhitneyu's p without the continuity correction, and with
    the correction mannwhitneyu's p with it; z is signed by sample 1 (b)."""
    x, y = np.array(a) * scale, np.array(b) * scale
    pooled = np.concatenate([x, y])
    ranks = stats.rankdata(pooled)
    s = float(np.sum(ranks[len(x):] - (len(pooled) + 1) / 2))
    _, t = np.unique(pooled, return_counts=True)
    tie = float(np.sum(t.astype(float) ** 3 - t))
    res = rank_sum_test(np.array([s]), len(x), len(y), np.array([tie]))
    corrected = rank_sum_test(np.array([s]), len(x), len(y), np.array([tie]), continuity=True)
    if len(set(a) | set(b)) == 1:
        assert np.isnan(res.statistic[0]) and np.isnan(res.pvalue[0]) and np.isnan(corrected.pvalue[0])
        return
    h = stats.kruskal(x, y)
    assert res.statistic[0] == pytest.approx(h.statistic, rel=1e-9, abs=1e-12)
    assert res.z[0] ** 2 == pytest.approx(res.statistic[0], rel=1e-12, abs=1e-15)
    assert np.sign(res.z[0]) == np.sign(s)
    plain = stats.mannwhitneyu(x, y, use_continuity=False, method="asymptotic").pvalue
    assert res.pvalue[0] == pytest.approx(floored(plain, len(x), len(y)), rel=1e-9, abs=1e-300)
    with_cc = stats.mannwhitneyu(x, y, use_continuity=True, method="asymptotic").pvalue
    assert corrected.pvalue[0] == pytest.approx(floored(with_cc, len(x), len(y)), rel=1e-9, abs=1e-300)

@st.composite
def grouped_samples(draw):
    n_groups = draw(st.integers(1, 6))
    n = draw(st.integers(0, 80))
    # Few distinct values give heavy ties; sometimes continuous values.
    distinct = draw(st.sampled_from([1, 2, 3, 5, 20, 0]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if distinct:
        values = rng.integers(0, distinct, n).astype(float) * draw(st.sampled_from([1.0, 0.1, 1e6]))
    else:
        values = rng.lognormal(3, 1, n)
    group = rng.integers(0, n_groups, n)
    label = rng.integers(0, 2, n)
    return values, group, label, n_groups


@settings(max_examples=300, deadline=None)
@given(grouped_samples())
def test_agrees_with_scipy(case):
    _assert_matches(*case)


def test_agrees_with_scipy_on_large_tied_groups():
    rng = np.random.default_rng(5)
    n = 20_000
    values = np.round(rng.normal(100, 3, n))  # ~20 distinct values: very many ties
    group = rng.integers(0, 40, n)
    label = rng.integers(0, 2, n)
    _assert_matches(values, group, label, 40)


def test_scipy_docstring_example():
    res = kruskal_2(np.array([1, 3, 5, 7, 9, 2, 4, 6, 8, 10.0]), np.zeros(10, int), np.r_[np.zeros(5), np.ones(5)], 1)
    assert res.statistic[0] == pytest.approx(0.2727272727272734, rel=1e-12)
    assert res.pvalue[0] == pytest.approx(0.6015081344405895, rel=1e-12)


def test_undefined_comparisons_are_nan():
    values = np.array([1.0, 1.0, 1.0, 1.0, 2.0, 3.0, 4.0])
    group = np.array([0, 0, 0, 0, 1, 1, 1])
    label = np.array([0, 0, 1, 1, 0, 0, 0])  # group 0 all equal; group 1 has no sample 1
    res = kruskal_2(values, group, label, 3)  # group 2 is empty
    assert np.isnan(res.statistic).all() and np.isnan(res.pvalue).all()
    assert list(res.n0) == [2, 3, 0] and list(res.n1) == [2, 0, 0]


def test_tiny_statistic_keeps_relative_precision():
    # Identical samples: H is exactly 0, p exactly 1.
    x = np.array([3.0, 1.0, 2.0, 5.0])
    res = kruskal_2(np.r_[x, x], np.zeros(8, int), np.r_[np.zeros(4), np.ones(4)], 1)
    assert res.statistic[0] == 0.0 and res.pvalue[0] == 1.0


def test_symmetric_in_the_labels_and_invariant_to_monotone_transforms():
    rng = np.random.default_rng(3)
    values = rng.exponential(5, 500)
    group = rng.integers(0, 7, 500)
    label = rng.integers(0, 2, 500)
    a = kruskal_2(values, group, label, 7)
    b = kruskal_2(values, group, 1 - label, 7)
    c = kruskal_2(np.log(values) * 3 - 2, group, label.astype(bool), 7)
    np.testing.assert_allclose(a.statistic, b.statistic, rtol=1e-12)
    np.testing.assert_allclose(a.statistic, c.statistic, rtol=1e-12)
    assert np.all((a.pvalue >= 0) & (a.pvalue <= 1))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="0 and 1"):
        kruskal_2(np.ones(3), np.zeros(3, int), np.array([0, 1, 2]), 1)
    with pytest.raises(ValueError, match="group codes"):
        kruskal_2(np.ones(3), np.array([0, 1, 5]), np.array([0, 1, 1]), 2)
    with pytest.raises(ValueError, match="NaN"):
        kruskal_2(np.array([1.0, np.nan]), np.zeros(2, int), np.array([0, 1]), 1)


def test_empty_input():
    res = kruskal_2(np.zeros(0), np.zeros(0, int), np.zeros(0, int), 2)
    assert res.statistic.shape == (2,) and np.isnan(res.statistic).all()


def test_many_groups_in_one_call():
    """4,000 comparisons over 2.3 M values: one sort, no loop (the speed budget is in benchmarks/)."""
    rng = np.random.default_rng(11)
    n, groups = 2_300_000, 4_000
    values = np.round(rng.normal(100, 5, n), 1)
    group = rng.integers(0, groups, n)
    label = rng.integers(0, 2, n)
    res = kruskal_2(values, group, label, groups)
    # Spot-check a few comparisons against scipy.
    for i in (0, 1234, groups - 1):
        m = group == i
        ref = stats.kruskal(values[m & (label == 0)], values[m & (label == 1)])
        assert res.statistic[i] == pytest.approx(ref.statistic, rel=1e-9, abs=1e-11)
        assert res.pvalue[i] == pytest.approx(ref.pvalue, rel=1e-9)


def _brute_counts(m: int, n: int) -> list[int]:
    """U of every placement of m values among m + n distinct ranks."""
    counts = [0] * (m * n + 1)
    for pos in itertools.combinations(range(m + n), m):
        # a value at pooled position p exceeds the p - (its index among a) values of b below it
        counts[sum(p - i for i, p in enumerate(pos))] += 1
    return counts


@pytest.mark.parametrize("m,n", [(1, 1), (2, 3), (4, 5), (5, 5), (3, 8)])
def test_u_distribution_by_enumeration(m, n):
    assert list(_u_counts(m, n)) == _brute_counts(m, n)
    assert list(_u_counts(n, m)) == _brute_counts(m, n)


@pytest.mark.parametrize("m,n", [(6, 9), (20, 20), (49, 49), (12, 45)])
def test_u_cdf_matches_scipy_exact(m, n):
    rng = np.random.default_rng(m * 100 + n)
    for _ in range(5):
        a, b = rng.normal(0, 1, m), rng.normal(0.6, 1, n)
        u, p, how = mann_whitney(a, b)
        ref = stats.mannwhitneyu(a, b, method="exact")
        assert how == "exact"
        assert u == ref.statistic
        assert p == pytest.approx(ref.pvalue, rel=1e-9)
    assert u_cdf_exact(-1, m, n) == 0.0 and u_cdf_exact(m * n, m, n) == 1.0


def test_mann_whitney_normal_approximation_matches_scipy_with_ties():
    rng = np.random.default_rng(3)
    a = np.round(rng.normal(10, 1, 30), 0)  # integers: many ties
    b = np.round(rng.normal(10.7, 1, 40), 0)
    u, p, how = mann_whitney(a, b)
    ref = stats.mannwhitneyu(a, b, method="asymptotic")
    assert how == "normal"
    assert u == ref.statistic and p == pytest.approx(ref.pvalue, rel=1e-12)
    big_a, big_b = rng.lognormal(0, 0.1, 80), rng.lognormal(0.02, 0.1, 60)  # large, no ties
    u, p, how = mann_whitney(big_a, big_b)
    assert how == "normal"
    assert p == pytest.approx(stats.mannwhitneyu(big_a, big_b, method="asymptotic").pvalue, rel=1e-12)


@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=25),
    st.lists(st.integers(0, 6), min_size=1, max_size=25),
)
@settings(max_examples=200, deadline=None)
def test_mann_whitney_z_matches_scipy_with_ties(f, r):
    mw = mann_whitney_z(np.array(f, float), np.array(r, float))
    if len(set(f) | set(r)) == 1:
        assert np.isnan(mw.z)
        return
    ref = stats.mannwhitneyu(f, r, use_continuity=False, method="asymptotic")
    assert mw.u == ref.statistic
    assert 2 * stats.norm.sf(abs(float(mw.z))) == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
    # z squared is the tie-corrected Kruskal-Wallis H of benchsage's fixed analysis.
    assert float(mw.z) ** 2 == pytest.approx(stats.kruskal(f, r).statistic, rel=1e-9, abs=1e-12)


def test_mann_whitney_z_batched_rows_are_independent():
    rng = np.random.default_rng(3)
    f, r = rng.normal(size=(4, 3, 7)), rng.normal(size=(4, 3, 9))
    mw = mann_whitney_z(f, r)
    assert mw.z.shape == (4, 3)
    for i, j in itertools.product(range(4), range(3)):
        assert mw.z[i, j] == pytest.approx(float(mann_whitney_z(f[i, j], r[i, j]).z))
