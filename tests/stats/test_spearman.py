"""spearman_grouped against scipy.stats.spearmanr, group by group."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.stats import spearman_grouped


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
        else:
            np.testing.assert_allclose(p[i], ref.pvalue, rtol=1e-9, atol=1e-14)


def test_perfect_trend():
    t = np.arange(20.0)
    rho, p = spearman_grouped(np.r_[t, t], np.r_[t**2, -t], np.r_[np.zeros(20, int), np.ones(20, int)], 2)
    assert list(rho) == [1.0, -1.0] and list(p) == [0.0, 0.0]


def test_result_unpacks_as_a_pair():
    res = spearman_grouped(np.arange(5.0), np.arange(5.0), np.zeros(5, int), 1)
    rho, p = res
    assert rho is res.rho and p is res.pvalue
