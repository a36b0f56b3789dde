"""What a rank test can detect (stats/detectable.py) and the shift interval dual to it
(stats/shift.py dual_rank): the least p-value against every arrangement of the values (brute
force, ties included, and scipy), the detectable shift against an independent simulation with
scipy's Kruskal-Wallis, properties in n, and the duality of interval and test on random data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from benchsage.stats.detectable import (
    critical_count,
    critical_z,
    detectable_shift,
    least_p_kruskal,
    least_p_untied,
    least_p_van_elteren,
    shift_percent,
)
from benchsage.stats.ranksum import kruskal_2
from benchsage.stats.shift import dual_rank, pairwise_order_statistics
from benchsage.stats.stratified import van_elteren


def _sorted(values: np.ndarray) -> np.ndarray:
    return np.sort(np.asarray(values, dtype=np.float64))


def _brute_least_p(values: np.ndarray, n0: int) -> float:
    """min over every split of the values into n0 and the rest of kruskal_2's p."""
    n = len(values)
    splits = [np.isin(np.arange(n), c, invert=True).astype(np.int8) for c in itertools.combinations(range(n), n0)]
    labels = np.concatenate(splits)
    group = np.repeat(np.arange(len(splits)), n)
    return float(np.nanmin(kruskal_2(np.tile(values, len(splits)), group, labels, len(splits)).pvalue))


@pytest.mark.parametrize("seed", range(12))
def test_least_p_is_the_smallest_over_every_arrangement_ties_included(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n0, n1 = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    # few distinct values: many ties, sometimes between the extremes' boundary values
    values = _sorted(rng.integers(0, 4 if seed % 2 else 50, size=n0 + n1))
    if values[0] == values[-1]:
        values[-1] += 1
    found = least_p_kruskal(values, np.zeros(len(values), dtype=np.int64), np.array([n0]), 1)[0]
    assert found == pytest.approx(_brute_least_p(values, n0), rel=1e-12)
    # scipy's Kruskal-Wallis over the same arrangements, floored as ours at 1 / C(N, n0)
    chosen = np.array(list(itertools.combinations(range(len(values)), n0)))
    rest = np.array([np.delete(np.arange(len(values)), c) for c in chosen])
    best = np.nanmin(stats.kruskal(values[chosen], values[rest], axis=1).pvalue)
    assert found == pytest.approx(max(best, 1.0 / math.comb(n0 + n1, n0)), rel=1e-9)


def test_least_p_of_many_comparisons_at_once() -> None:
    rng = np.random.default_rng(3)
    sizes = [(3, 4), (5, 5), (2, 6), (6, 3)]
    values, group, n0 = [], [], []
    for g, (a, b) in enumerate(sizes):
        values.append(_sorted(np.round(rng.normal(size=a + b), 1)))
        group.append(np.full(a + b, g))
        n0.append(a)
    found = least_p_kruskal(np.concatenate(values), np.concatenate(group), np.array(n0), len(sizes))
    assert found == pytest.approx([_brute_least_p(v, a) for v, (a, _) in zip(values, sizes)], rel=1e-12)


def test_least_p_of_van_elteren_is_the_smallest_over_every_arrangement() -> None:
    rng = np.random.default_rng(8)
    blocks = [(2, 3), (3, 2), (1, 3)]  # (sample 0, sample 1) per stratum
    values, stratum, label = [], [], []
    for s, (a, b) in enumerate(blocks):
        values.append(_sorted(rng.integers(0, 5, size=a + b)))
        stratum.append(np.full(a + b, s))
        label.append(np.r_[np.zeros(a), np.ones(b)].astype(np.int8))
    v, st_, lab = np.concatenate(values), np.concatenate(stratum), np.concatenate(label)
    group = np.zeros(len(v), dtype=np.int64)
    found = least_p_van_elteren(v, group, st_, lab, 1, len(blocks))[0]
    best = np.inf
    offsets = np.cumsum([0] + [a + b for a, b in blocks])
    for choice in itertools.product(*[itertools.combinations(range(a + b), a) for a, b in blocks]):
        arrangement = np.ones(len(v), dtype=np.int8)
        for s, zeros in enumerate(choice):
            arrangement[offsets[s] + np.array(zeros, dtype=np.int64)] = 0
        best = min(best, float(van_elteren(v, group, st_, arrangement, 1, len(blocks)).pvalue[0]))
    assert found == pytest.approx(best, rel=1e-12)


def test_least_p_of_untied_sizes() -> None:
    # 5 + 5: H = 3 m n / (N + 1) = 75 / 11, p = P(chi2_1 >= 6.818) = 0.00902 (the plan's example)
    assert least_p_untied(5, 5)[0] == pytest.approx(special.chdtrc(1, 75 / 11), rel=1e-12)
    # 3 + 3: the chi-squared tail 0.0495 is below one over the 20 splits: floored there
    assert least_p_untied(3, 3)[0] == pytest.approx(1 / 20)
    # two strata of 5 + 5 through van Elteren's test equal the brute force of its arrangements
    assert least_p_untied(5, 5, strata=2)[0] < least_p_untied(5, 5)[0]
    assert least_p_untied([5, 6], [5, 6]).shape == (2,)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 60), n=st.integers(1, 60), strata=st.integers(1, 4))
def test_least_p_falls_as_values_are_added(m: int, n: int, strata: int) -> None:
    # H_max = 3 m n / (N + 1) grows in m: (m + 1)(N + 1) - m (N + 2) = n + 1 > 0; the floor falls too
    p = least_p_untied([m, m + 1, m], [n, n, n + 1], strata)
    assert p[1] <= p[0] and p[2] <= p[0]


# --- the interval dual to the test ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_dual_rank_excludes_zero_exactly_when_the_test_rejects(seed: int) -> None:
    """Untied data: for every critical value, [d_(k), d_(mn+1-k)] excludes 0 iff |z| >= c, with
    c just below and just above the observed |z| (the off-by-ones)."""
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(2, 15)), int(rng.integers(2, 15))
    x, y = rng.normal(rng.choice([0, 0.5, 1.5]), 1, m), rng.normal(0, 1, n)
    u = np.sum(x[:, None] > y[None, :])
    sd = math.sqrt(m * n * (m + n + 1) / 12)
    z = (u - m * n / 2) / sd
    d = np.sort(np.subtract.outer(x, y).ravel())
    for c in (abs(z) - 1e-9, abs(z) + 1e-9, 0.5, 1.96, 2.8, 4.0):
        if c <= 0:
            continue
        k = int(dual_rank(m, n, c))
        excludes = k >= 1 and (d[k - 1] > 0 or d[m * n - k] < 0)
        assert excludes == (abs(z) >= c), (m, n, u, c, k)


def _rank_sum_z(x: np.ndarray, y: np.ndarray) -> float:
    ranks = stats.rankdata(np.r_[x, y])
    m, n = len(x), len(y)
    _, t = np.unique(np.r_[x, y], return_counts=True)
    var = m * n * ((m + n) ** 3 - (m + n) - np.sum(t**3 - t)) / (12 * (m + n) * (m + n - 1))
    return (ranks[:m].sum() - m * (m + n + 1) / 2) / math.sqrt(var)


def test_dual_rank_with_ties_an_interval_that_excludes_zero_means_a_rejection() -> None:
    rng = np.random.default_rng(11)
    rejected = excluded = 0
    for _ in range(400):
        m, n = int(rng.integers(5, 20)), int(rng.integers(5, 20))
        x, y = np.round(rng.normal(rng.choice([0, 1]), 1, m) * 2) / 2, np.round(rng.normal(0, 1, n) * 2) / 2
        _, t = np.unique(np.r_[x, y], return_counts=True)
        z = _rank_sum_z(x, y)
        k = int(dual_rank(m, n, 2.5, float(np.sum(t**3 - t))))
        d = pairwise_order_statistics(x[None], y[None], [max(k, 1), m * n + 1 - max(k, 1)])[0]
        excludes = k >= 1 and (d[0] > 0 or d[1] < 0)
        assert not excludes or abs(z) >= 2.5
        rejected += abs(z) >= 2.5
        excluded += excludes
    assert 0 < excluded <= rejected


def test_pairwise_order_statistics_with_each_rows_own_ranks() -> None:
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(6, 7)), rng.normal(size=(6, 5))
    ranks = rng.integers(1, 36, size=(6, 3))
    found = pairwise_order_statistics(x, y, ranks)
    bisected = pairwise_order_statistics(x, y, ranks, max_pairs=10)
    for i in range(6):
        d = np.sort(np.subtract.outer(x[i], y[i]).ravel())
        assert found[i].tolist() == d[ranks[i] - 1].tolist() == bisected[i].tolist()


# --- the smallest detectable shift ----------------------------------------------------------


def _scipy_power(pool: np.ndarray, n0: int, n1: int, shift: float, alpha_test: float, ratio: bool, reps: int, seed: int) -> float:
    """Share of bootstrap experiments (both arms from the pool, sample 0 shifted) in which
    scipy.stats.kruskal finds the effect at alpha_test: an independent simulation."""
    rng = np.random.default_rng(seed)
    x, y = rng.choice(pool, (reps, n0)), rng.choice(pool, (reps, n1))
    x = x * shift if ratio else x + shift
    return float(np.mean(stats.kruskal(x, y, axis=1).pvalue <= alpha_test))


@pytest.mark.parametrize(("ratio", "n0", "n1"), [(True, 30, 30), (False, 12, 20)])
def test_detectable_shift_has_the_power_in_an_independent_simulation(ratio: bool, n0: int, n1: int) -> None:
    rng = np.random.default_rng(21)
    pool = rng.lognormal(0.0, 0.05, 60) if ratio else rng.standard_t(5, 40)
    alpha_test = 0.05 / 10
    found = detectable_shift(pool, n0, n1, critical_z(alpha_test), ratio=ratio)
    reps = 4000
    sd = math.sqrt(0.8 * 0.2 / reps) + math.sqrt(0.8 * 0.2 / found.reps)  # both simulations' Monte-Carlo error
    for shift, no_effect in ((found.up, 1.0 if ratio else 0.0), (found.down, 1.0 if ratio else 0.0)):
        power = _scipy_power(pool, n0, n1, shift, alpha_test, ratio, reps, 5)
        # scipy's test is tie-corrected and counts both tails, ours untied: ours is conservative
        assert 0.8 - 3 * sd <= power <= 0.8 + 3 * sd + 0.02, (shift, power)
        smaller = no_effect + 0.7 * (shift - no_effect)
        assert _scipy_power(pool, n0, n1, smaller, alpha_test, ratio, reps, 6) < 0.65
    pct = shift_percent(found, float(np.median(pool)))
    if ratio:
        assert pct == pytest.approx(max(found.up - 1, 1 - found.down) * 100)
    else:
        assert pct == pytest.approx(max(found.up, -found.down) / abs(np.median(pool)) * 100)


def test_detectable_shift_is_the_same_for_the_same_data() -> None:
    rng = np.random.default_rng(4)
    pool = rng.lognormal(0, 0.1, 40)
    z = critical_z(0.01)
    first = detectable_shift(pool, 20, 20, z, ratio=True, reps=300)
    assert detectable_shift(rng.permutation(pool), 20, 20, z, ratio=True, reps=300) == first
    assert detectable_shift(pool * (1 + 1e-9), 20, 20, z, ratio=True, reps=300) != first  # other data, other draws


def test_no_detectable_shift_where_no_arrangement_reaches_the_level() -> None:
    pool = np.arange(1.0, 7.0)
    z = critical_z(0.01)
    assert critical_count(3, 3, z) > 9
    found = detectable_shift(pool, 3, 3, z, ratio=True)
    assert found.up is None and found.down is None and shift_percent(found, 3.5) is None


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cv=st.sampled_from([0.01, 0.1, 0.5]))
def test_detectable_shift_falls_as_runs_are_added(seed: int, cv: float) -> None:
    pool = np.random.default_rng(seed).lognormal(0, cv, 50)
    z = critical_z(0.05 / 20)
    small, large = (shift_percent(detectable_shift(pool, n, n, z, ratio=True, reps=400), 1.0) for n in (8, 40))
    assert small is not None and large is not None and large < small
