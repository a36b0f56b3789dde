"""van Elteren's stratified test and the k-sample Kruskal-Wallis test, against scipy and the
formulas written out directly."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.stats import kruskal_2

sys.path.insert(0, str(Path(__file__).parent))
from floors import floored, least  # noqa: E402
from benchsage.stats.stratified import dunn, kruskal_k, van_elteren


def direct_van_elteren(strata: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """The statistic from its definition: per stratum the Wilcoxon rank sum W_j of sample 1,
    its mean m (n + 1) / 2 and its tie-corrected variance, weights 1 / (n_j + 1)."""
    num, var = 0.0, 0.0
    for x0, x1 in strata:
        both = np.concatenate([x0, x1])
        n, m = len(both), len(x1)
        if m == 0 or m == n:
            continue
        ranks = stats.rankdata(both)
        w = ranks[len(x0):].sum()
        _, t = np.unique(both, return_counts=True)
        tie = float(((t**3) - t).sum())
        v = m * (n - m) * (n + 1) / 12.0 * (1.0 - tie / (n**3 - n))
        num += (w - m * (n + 1) / 2.0) / (n + 1)
        var += v / (n + 1) ** 2
    return num * num / var


def test_one_stratum_is_kruskal_wallis() -> None:
    rng = np.random.default_rng(3)
    x0, x1 = rng.normal(0, 1, 30), rng.normal(0.4, 1, 25)
    values = np.concatenate([x0, x1])
    label = np.repeat([0, 1], [30, 25])
    res = van_elteren(values, np.zeros(55, dtype=np.int64), np.zeros(55, dtype=np.int64), label, 1, 1)
    ref = stats.kruskal(x0, x1)
    assert res.statistic[0] == pytest.approx(ref.statistic, rel=1e-9)
    assert res.pvalue[0] == pytest.approx(ref.pvalue, rel=1e-9)
    assert res.strata[0] == 1 and (res.n0[0], res.n1[0]) == (30, 25)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    sizes=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)), min_size=1, max_size=5),
    decimals=st.integers(0, 2),
)
def test_matches_the_direct_formula_and_scipy_with_one_stratum(seed: int, sizes: list[tuple[int, int]], decimals: int) -> None:
    rng = np.random.default_rng(seed)
    strata = [(np.round(rng.normal(j, 1, a), decimals), np.round(rng.normal(j, 1, b), decimals)) for j, (a, b) in enumerate(sizes)]
    values = np.concatenate([np.concatenate(s) for s in strata])
    label = np.concatenate([np.repeat([0, 1], [len(a), len(b)]) for a, b in strata])
    block = np.concatenate([np.full(len(a) + len(b), j) for j, (a, b) in enumerate(strata)])
    res = van_elteren(values, np.zeros(len(values), dtype=np.int64), block, label, 1, len(strata))
    expected_var_zero = all(len(np.unique(np.concatenate(s))) == 1 for s in strata)
    if expected_var_zero:
        assert np.isnan(res.statistic[0])
        return
    assert res.statistic[0] == pytest.approx(direct_van_elteren(strata), rel=1e-9, abs=1e-12)
    floor = math.prod(least(len(a), len(b)) for a, b in strata)
    assert res.pvalue[0] == pytest.approx(max(stats.chi2.sf(direct_van_elteren(strata), 1), floor), rel=1e-9, abs=1e-15)
    if len(strata) == 1:
        kw = kruskal_2(values, np.zeros(len(values), dtype=np.int64), label, 1)
        assert res.pvalue[0] == pytest.approx(kw.pvalue[0], rel=1e-9, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_groups=st.integers(1, 4), n_strata=st.integers(1, 4))
def test_many_comparisons_at_once_equal_one_at_a_time(seed: int, n_groups: int, n_strata: int) -> None:
    rng = np.random.default_rng(seed)
    n = 200
    group, block, label = rng.integers(0, n_groups, n), rng.integers(0, n_strata, n), rng.integers(0, 2, n)
    values = np.round(rng.normal(block * 3.0, 1, n), 1)
    together = van_elteren(values, group, block, label, n_groups, n_strata)
    for g in range(n_groups):
        sel = group == g
        alone = van_elteren(values[sel], np.zeros(sel.sum(), dtype=np.int64), block[sel], label[sel], 1, n_strata)
        np.testing.assert_allclose(together.statistic[g], alone.statistic[0], rtol=1e-12)
        assert together.strata[g] == alone.strata[0]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scales=st.lists(st.floats(0.1, 10), min_size=2, max_size=5))
def test_invariant_to_each_strata_level(seed: int, scales: list[float]) -> None:
    """Rescaling a worker's values (a faster machine) changes nothing: ranks are within strata."""
    rng = np.random.default_rng(seed)
    k = len(scales)
    block = np.repeat(np.arange(k), 20)
    label = np.tile(np.repeat([0, 1], 10), k)
    values = rng.lognormal(0, 0.1, 20 * k)
    zeros = np.zeros(len(values), dtype=np.int64)
    base = van_elteren(values, zeros, block, label, 1, k)
    scaled = van_elteren(values * np.asarray(scales)[block], zeros, block, label, 1, k)
    assert scaled.statistic[0] == pytest.approx(base.statistic[0], rel=1e-12)


def test_pooling_hides_a_shift_that_strata_show() -> None:
    """Four machines up to 3x apart, random order 2% slower on each: ranks within workers find
    it, a pooled Kruskal-Wallis drowns it in the machines' spread."""
    rng = np.random.default_rng(7)
    levels = np.array([1.0, 1.4, 2.1, 3.0])
    block = np.repeat(np.arange(4), 40)
    label = np.tile(np.repeat([0, 1], 20), 4)
    values = levels[block] * rng.lognormal(0, 0.02, 160) * np.where(label == 1, 1.02, 1.0)
    zeros = np.zeros(160, dtype=np.int64)
    strat = van_elteren(values, zeros, block, label, 1, 4)
    pooled = kruskal_2(values, zeros, label, 1)
    assert strat.pvalue[0] < 1e-6
    assert pooled.pvalue[0] > 0.05


def test_strata_with_one_sample_or_all_ties_add_nothing() -> None:
    values = np.array([1.0, 2, 3, 4, 5, 6, 9, 9, 9, 7, 7])
    block = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2])
    label = np.array([0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1])
    zeros = np.zeros(len(values), dtype=np.int64)
    res = van_elteren(values, zeros, block, label, 1, 3)
    ref = stats.kruskal(values[:3], values[3:6])
    assert res.strata[0] == 1
    assert res.statistic[0] == pytest.approx(ref.statistic, rel=1e-9)
    empty = van_elteren(values[6:], zeros[6:], block[6:], label[6:], 1, 3)
    assert np.isnan(empty.statistic[0]) and np.isnan(empty.pvalue[0]) and empty.strata[0] == 0


def test_bad_codes_are_errors() -> None:
    zeros = np.zeros(3, dtype=np.int64)
    with pytest.raises(ValueError, match="stratum codes"):
        van_elteren(np.ones(3), zeros, np.array([0, 1, 2]), zeros, 1, 2)
    with pytest.raises(ValueError, match="only 0 and 1"):
        van_elteren(np.ones(3), zeros, zeros, np.array([0, 1, 2]), 1, 1)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(1, 15), min_size=2, max_size=6), decimals=st.integers(0, 2))
def test_kruskal_k_equals_scipy(seed: int, sizes: list[int], decimals: int) -> None:
    rng = np.random.default_rng(seed)
    samples = [np.round(rng.normal(i * 0.3, 1, n), decimals) for i, n in enumerate(sizes)]
    values = np.concatenate(samples)
    sample = np.repeat(np.arange(len(sizes)), sizes)
    res = kruskal_k(values, np.zeros(len(values), dtype=np.int64), sample, 1, len(sizes))
    if len(np.unique(values)) == 1:
        assert np.isnan(res.statistic[0])
        return
    ref = stats.kruskal(*samples)
    assert res.df[0] == len(sizes) - 1
    assert res.statistic[0] == pytest.approx(ref.statistic, rel=1e-9, abs=1e-12)
    assert res.pvalue[0] == pytest.approx(floored(ref.pvalue, *sizes), rel=1e-9, abs=1e-14)


def test_kruskal_k_many_groups_and_missing_samples() -> None:
    rng = np.random.default_rng(1)
    a, b, c = rng.normal(0, 1, 10), rng.normal(1, 1, 12), rng.normal(2, 1, 8)
    values = np.concatenate([a, b, c, a])
    group = np.repeat([0, 0, 0, 1], [10, 12, 8, 10])
    sample = np.repeat([0, 1, 2, 3], [10, 12, 8, 10])
    res = kruskal_k(values, group, sample, 2, 4)
    assert res.pvalue[0] == pytest.approx(stats.kruskal(a, b, c).pvalue, rel=1e-9)
    assert res.df.tolist() == [2, 0]
    assert np.isnan(res.pvalue[1])  # one sample only: nothing to compare


def direct_dunn(samples: list[np.ndarray]) -> dict[tuple[int, int], float]:
    both = np.concatenate(samples)
    ranks = stats.rankdata(both)
    n = len(both)
    _, t = np.unique(both, return_counts=True)
    s2 = n * (n + 1) / 12 - float((t**3 - t).sum()) / (12 * (n - 1))
    bounds = np.cumsum([0] + [len(s) for s in samples])
    mean = [ranks[bounds[i]:bounds[i + 1]].mean() for i in range(len(samples))]
    return {(i, j): (mean[i] - mean[j]) / np.sqrt(s2 * (1 / len(samples[i]) + 1 / len(samples[j])))
            for i in range(len(samples)) for j in range(i + 1, len(samples))}


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(2, 12), min_size=2, max_size=5), decimals=st.integers(0, 2))
def test_dunn_matches_the_direct_formula(seed: int, sizes: list[int], decimals: int) -> None:
    rng = np.random.default_rng(seed)
    samples = [np.round(rng.normal(i * 0.5, 1, n), decimals) for i, n in enumerate(sizes)]
    values = np.concatenate(samples)
    res = dunn(values, np.zeros(len(values), dtype=np.int64), np.repeat(np.arange(len(sizes)), sizes), 1, len(sizes))
    assert len(res.z) == len(sizes) * (len(sizes) - 1) // 2
    if len(np.unique(values)) == 1:
        assert np.isnan(res.z).all()
        return
    expected = direct_dunn(samples)
    for i, j, z, p in zip(res.i.tolist(), res.j.tolist(), res.z.tolist(), res.pvalue.tolist()):
        assert z == pytest.approx(expected[(i, j)], rel=1e-9, abs=1e-12)
        assert p == pytest.approx(floored(2 * stats.norm.sf(abs(expected[(i, j)])), sizes[i], sizes[j]), rel=1e-9, abs=1e-15)
    if len(sizes) == 2:  # two samples: z squared is the Kruskal-Wallis H
        assert res.z[0] ** 2 == pytest.approx(stats.kruskal(*samples).statistic, rel=1e-9)


def test_dunn_over_many_comparisons() -> None:
    rng = np.random.default_rng(2)
    values = rng.normal(0, 1, 90)
    group = np.repeat([0, 1, 2], 30)
    sample = np.concatenate([np.repeat([0, 1, 2], 10), np.repeat([1, 3], 15), np.repeat([0, 1, 2, 3, 4, 5], 5)])
    res = dunn(values, group, sample, 3, 6)
    assert np.bincount(res.group).tolist() == [3, 1, 15]
    assert (res.i < res.j).all()
    alone = dunn(values[30:60], np.zeros(30, dtype=np.int64), sample[30:60], 1, 6)
    assert res.z[res.group == 1][0] == pytest.approx(alone.z[0], rel=1e-12)
