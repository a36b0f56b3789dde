"""spearman_grouped against scipy.stats.spearmanr, group by group: rho always; p from every
assignment up to MAX_EXACT pairs, from scipy's t approximation (floored at 1 / n!) beyond."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.stats import spearman_grouped
from benchsage.stats.permutation import MAX_EXACT


@st.composite
def paired(draw):
    n_groups = draw(st.integers(1, 5))
    n = draw(st.integers(0, 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.integers(0, draw(st.sampled_from([2, 5, 1000])), n).astype(float)
    y = x * draw(st.floats(-2, 2)) + rng.integers(0, draw(st.sampled_from([1, 3, 1000])), n)
    return x, y, rng.integers(0, n_groups, n), n_groups


@settings(max_examples=300, deadline=None)
@given(paired())
def test_agrees_with_scipy(case):
    x, y, group, n_groups = case
    rho, p = spearman_grouped(x, y, group, n_groups)
    for i in range(n_groups):
        m = group == i
        if m.sum() < 2:
            assert np.isnan(rho[i]) and np.isnan(p[i])
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = stats.spearmanr(x[m], y[m])
        if np.isnan(ref.statistic):
            assert np.isnan(rho[i]) and np.isnan(p[i])
            continue
        np.testing.assert_allclose(rho[i], ref.statistic, rtol=1e-9, atol=1e-12)
        if np.isnan(ref.pvalue):
            assert np.isnan(p[i])
            continue
        if m.sum() <= MAX_EXACT:
            np.testing.assert_allclose(p[i], _enumerated(x[m], y[m]), rtol=1e-12)
        else:
            floor = 1.0 / math.factorial(int(m.sum()))
            np.testing.assert_allclose(p[i], max(ref.pvalue, floor), rtol=1e-9, atol=1e-14)
        assert 0.0 < p[i] <= 1.0


def _enumerated(x: np.ndarray, y: np.ndarray) -> float:
    """The share of the n! assignments of y to x whose |rho| is at least the observed one."""
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    perms = np.array(list(itertools.permutations(range(len(y)))))
    rho = np.array([np.corrcoef(rx, ry[q])[0, 1] for q in perms[:: max(1, len(perms) // 50)]])  # scipy's rho on a sample
    np.testing.assert_allclose(rho, [stats.spearmanr(x, y[q]).statistic for q in perms[:: max(1, len(perms) // 50)]], rtol=1e-9)
    every = ry[perms] - ry.mean()
    all_rho = every @ (rx - rx.mean()) / np.sqrt(((rx - rx.mean()) ** 2).sum() * ((ry - ry.mean()) ** 2).sum())
    observed = abs(np.corrcoef(rx, ry)[0, 1])
    return float(np.mean(np.abs(all_rho) >= observed - 1e-12))


def test_a_perfect_trend_over_six_runs_has_the_exact_p_not_zero():
    # pgbench's simple-update rising over 6 random-arm runs: the t approximation said p = 0.
    t = np.arange(6.0)
    rho, p = spearman_grouped(np.r_[t, t], np.r_[np.exp(t), -t], np.r_[np.zeros(6, int), np.ones(6, int)], 2)
    assert list(rho) == [1.0, -1.0]
    np.testing.assert_allclose(p, [2 / 720, 2 / 720], rtol=1e-12)


def test_a_perfect_trend_over_many_values_is_floored_at_one_over_n_factorial():
    t = np.arange(20.0)
    rho, p = spearman_grouped(np.r_[t, t], np.r_[t**2, -t], np.r_[np.zeros(20, int), np.ones(20, int)], 2)
    assert list(rho) == [1.0, -1.0]
    np.testing.assert_allclose(p, [1 / math.factorial(20)] * 2, rtol=1e-12)


def test_result_unpacks_as_a_pair():
    res = spearman_grouped(np.arange(5.0), np.arange(5.0), np.zeros(5, int), 1)
    rho, p = res
    assert rho is res.rho and p is res.pvalue
