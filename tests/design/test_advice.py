"""Run advice by resampling: the advised runs per arm reach 80% power (checked with scipy's own
Kruskal-Wallis), grow with noise and shrink with the effect, agree with normal theory for normal
values, and the simulated sequential design decides exactly as SequentialDesign.run does."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from benchsage.design.advice import MIN_PILOT_RUNS, REPS, PowerCurve, _critical_z, sequential_stops, smallest_runs
from benchsage.stats.ranksum import mann_whitney_z
from benchsage.stats.sequential import DECIDED_EFFECT, DECIDED_NO_EFFECT, UNDECIDED, SequentialDesign

ALPHA = 0.05


def normal_pool(cv: float, size: int = 40, seed: int = 0) -> np.ndarray:
    """`size` values around 100 whose sample CV is exactly `cv` (no sampling error in the spread)."""
    z = np.random.default_rng(seed).standard_normal(size)
    z = (z - z.mean()) / z.std()
    return 100.0 * (1.0 + cv * z)


def advised(pool: np.ndarray, effect_pct: float = 2.0, m: int = 1, seed: int = 1) -> tuple[int | None, float]:
    return smallest_runs(pool, 1.0 + effect_pct / 100.0, _critical_z(ALPHA / m), seed)


def scipy_power(pool: np.ndarray, n: int, effect_pct: float, alpha_test: float, reps: int, seed: int) -> float:
    """Power by an independent bootstrap with scipy.stats.kruskal, experiment by experiment."""
    rng = np.random.default_rng(seed)
    fixed = rng.choice(pool, (reps, n)) * (1.0 + effect_pct / 100.0)
    random = rng.choice(pool, (reps, n))
    return float(np.mean(sps.kruskal(fixed, random, axis=1).pvalue <= alpha_test))


@pytest.mark.parametrize(("cv", "effect", "m"), [(0.02, 2.0, 1), (0.03, 2.0, 4), (0.01, 1.0, 2)])
def test_advised_runs_reach_the_power_and_one_fewer_does_not(cv: float, effect: float, m: int) -> None:
    pool = normal_pool(cv)
    n, power = advised(pool, effect, m)
    assert n is not None and n > MIN_PILOT_RUNS and power >= 0.8
    reps = 1500
    sd = math.sqrt(0.8 * 0.2 / reps + 0.8 * 0.2 / REPS)  # this check's and the advice's own Monte-Carlo error
    at_n = scipy_power(pool, n, effect, ALPHA / m, reps, seed=11)
    below = scipy_power(pool, n - 1, effect, ALPHA / m, reps, seed=12)
    assert at_n >= 0.8 - 3 * sd, (n, at_n)
    assert below <= 0.8 + 3 * sd, (n - 1, below)


@pytest.mark.parametrize("factor", [1.02, 1.0, 1.5])
def test_the_statistic_from_counts_is_mann_whitney_and_scipys_kruskal_wallis(factor: float) -> None:
    # Rounded values: many ties, where the tie correction matters; the 1.5 factor maps some
    # fixed-arm values onto random-arm ones (ties across arms).
    pool = np.round(normal_pool(0.03, 30), 0)
    values = np.unique(pool)
    curve = PowerCurve(pool, factor, _critical_z(ALPHA / 3), seed=0)
    rng = np.random.default_rng(5)
    fixed_counts = rng.multinomial(12, np.full(len(values), 1 / len(values)), size=200)
    random_counts = rng.multinomial(9, np.full(len(values), 1 / len(values)), size=200)
    fixed = np.stack([np.repeat(values * factor, c) for c in fixed_counts])
    random = np.stack([np.repeat(values, c) for c in random_counts])
    z = curve.z(fixed_counts, random_counts)
    np.testing.assert_allclose(z, mann_whitney_z(fixed, random).z, rtol=1e-9, atol=1e-12)
    p = np.array([sps.kruskal(f, r).pvalue for f, r in zip(fixed, random)])
    np.testing.assert_allclose(sps.chi2.sf(z * z, 1), p, rtol=1e-9)
    assert ((np.abs(z) >= curve.z_crit) == (p <= ALPHA / 3)).all()


def test_ranked_draws_and_counted_draws_estimate_the_same_power() -> None:
    # Below half the 60 distinct values per arm the curve ranks drawn values, from there on it
    # counts them: at the switch the two estimates of the power must meet.
    curve = PowerCurve(normal_pool(0.03, 60), 1.02, _critical_z(ALPHA), seed=4)
    below, at = curve.power(29), curve.power(30)
    assert 0.3 < below < 0.8 and abs(at - below) < 4 * math.sqrt(2 * 0.25 / REPS) + 0.01


def test_every_value_equal_is_never_found() -> None:
    curve = PowerCurve(np.full(10, 7.0), 1.0, _critical_z(ALPHA), seed=0)
    assert np.isnan(curve.z(np.array([[5]]), np.array([[5]]))).all() and curve.power(20) == 0.0


def test_more_noise_or_a_smaller_effect_needs_more_runs() -> None:
    quiet, medium, noisy = (advised(normal_pool(cv))[0] for cv in (0.01, 0.02, 0.04))
    assert quiet is not None and medium is not None and noisy is not None
    assert quiet < medium < noisy
    assert 2.5 < noisy / medium < 6  # the runs grow with the variance: about 4x for twice the CV
    large, small = (advised(normal_pool(0.02), effect)[0] for effect in (4.0, 1.0))
    assert large is not None and small is not None and large < medium < small


@pytest.mark.parametrize(("cv", "effect", "m"), [(0.02, 2.0, 1), (0.04, 2.0, 1), (0.03, 2.0, 5)])
def test_normal_values_land_near_the_normal_theory_sample_size(cv: float, effect: float, m: int) -> None:
    # Two-sample t test: n = 2 (z_{1-a/2} + z_{0.8})^2 (cv / effect)^2; the rank test needs
    # 1 / ARE = pi / 3 times as many for normal values (Lehmann 1975, ch. 2).
    pool = normal_pool(cv, 400)
    z = sps.norm.isf(ALPHA / m / 2) + sps.norm.ppf(0.8)
    expected = 2 * z * z * (cv / (effect / 100)) ** 2 * math.pi / 3
    n, _ = advised(pool, effect, m)
    assert n is not None and abs(n - expected) <= 0.2 * expected + 2, (n, expected)


def test_no_relative_effect_on_zeros_and_too_much_noise_say_more_than_max() -> None:
    assert advised(np.zeros(20))[0] is None  # 0 x 1.02 = 0: nothing to find
    n, power = smallest_runs(normal_pool(0.5), 1.02, _critical_z(ALPHA), 1, max_runs=40)
    assert n is None and power < 0.8


def test_few_noisy_values_need_few_runs_for_a_huge_effect() -> None:
    n, power = advised(normal_pool(0.01, 10), effect_pct=50.0)
    assert n == MIN_PILOT_RUNS and power == 1.0


@pytest.mark.parametrize("rule", ["each", "verdict"])
@pytest.mark.parametrize("correction", ["bonferroni", "holm"])
def test_simulated_sequential_design_decides_as_the_design_does(correction: str, rule: str) -> None:
    rng = np.random.default_rng(3)
    design = SequentialDesign(30, 4, ALPHA, correction, min_effect=3.0, rule=rule)
    pools = [normal_pool(0.01, 20, 1), normal_pool(0.03, 20, 2), np.round(normal_pool(0.02, 20, 3))]
    x = np.stack([p[rng.integers(0, len(p), (40, 2, 30))] for p in pools], axis=1)
    x[:20, 0, 0, :] *= 1.03  # half the experiments: an effect on the first test
    stop, state = sequential_stops(design, x)
    codes = {None: UNDECIDED, "effect": DECIDED_EFFECT, "no-effect": DECIDED_NO_EFFECT}
    for i in range(len(x)):
        looks = design.run([{j: (x[i, j, 0, :p], x[i, j, 1, :p]) for j in range(3)} for p in design.look_points()])
        assert [codes[t.decided] for t in looks[-1].tests] == list(state[i])
        assert looks[-1].index == stop[i]
    assert (state == DECIDED_EFFECT).any() and (state == DECIDED_NO_EFFECT).any() and (stop < design.looks - 1).any()
