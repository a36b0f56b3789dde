"""Spending functions and boundaries: published values, the fixed-sample case, exact spending under
scipy's multivariate normal, tiny levels and many unequal looks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from benchsage.stats.sequential import SequentialDesign, alpha_spending, spending_boundaries

EQUAL5 = [0.2, 0.4, 0.6, 0.8, 1.0]


def test_obrien_fleming_boundaries_match_published_values():
    # Lan-DeMets O'Brien-Fleming type, K = 5 equally spaced, two-sided alpha = 0.05 (ld98,
    # R ldbounds / gsDesign test.type = 2).
    b = spending_boundaries(EQUAL5, 0.05, "obrien-fleming")
    np.testing.assert_allclose(b.critical, [4.877, 3.357, 2.680, 2.290, 2.031], atol=6e-4)


def test_pocock_boundaries_match_published_values():
    b = spending_boundaries(EQUAL5, 0.05, "pocock")
    np.testing.assert_allclose(b.critical, [2.438, 2.427, 2.410, 2.397, 2.386], atol=6e-4)


def test_one_look_is_the_fixed_sample_critical_value():
    for spending in ("obrien-fleming", "pocock"):
        for alpha in (0.05, 0.01, 0.05 / 1880):
            b = spending_boundaries([1.0], alpha, spending)
            assert b.critical[0] == pytest.approx(sps.norm.isf(alpha / 2), rel=1e-9)


@pytest.mark.parametrize("spending", ["obrien-fleming", "pocock"])
@pytest.mark.parametrize("t", [[0.3, 0.7, 1.0], [0.25, 0.5, 0.75, 1.0], [0.15, 0.4, 0.55, 0.8, 1.0]])
def test_boundaries_spend_exactly_under_the_canonical_joint_distribution(spending, t):
    """Independent check with scipy's multivariate normal CDF (Genz): P(exit by look k) equals the
    alpha spent, with corr(Z_j, Z_k) = sqrt(t_j / t_k)."""
    alpha = 0.05
    b = spending_boundaries(t, alpha, spending)
    tt = np.array(t)
    cov = np.sqrt(np.minimum.outer(tt, tt) / np.maximum.outer(tt, tt))
    for k in range(1, len(t) + 1):
        c = np.array(b.critical[:k])
        mvn = sps.multivariate_normal(mean=np.zeros(k), cov=cov[:k, :k], abseps=1e-9, releps=1e-9, maxpts=2_000_000, seed=1)
        stay = mvn.cdf(c, lower_limit=-c)
        assert 1.0 - stay == pytest.approx(b.spent[k - 1], abs=3e-6)
    assert b.spent[-1] == pytest.approx(alpha, rel=1e-12)


def test_spending_functions():
    t = np.linspace(0, 1, 101)
    for spending in ("obrien-fleming", "pocock"):
        a = alpha_spending(t, 0.05, spending)
        assert a[0] == 0.0 and a[-1] == pytest.approx(0.05, rel=1e-12)
        assert np.all(np.diff(a) > 0)
    # O'Brien-Fleming type per side at alpha / 2: 2 x (2 - 2 Phi(z_{1 - alpha/4} / sqrt(t))).
    assert alpha_spending(0.2, 0.05)[()] == pytest.approx(4 * sps.norm.sf(sps.norm.isf(0.0125) / math.sqrt(0.2)), rel=1e-12)
    assert alpha_spending(0.5, 0.05, "pocock")[()] == pytest.approx(0.05 * math.log(1 + (math.e - 1) * 0.5))


@pytest.mark.parametrize("spending", ["obrien-fleming", "pocock"])
def test_boundaries_decrease_as_the_level_grows(spending):
    # Holm's shortcut of closed testing needs c_k(a) to decrease in a at every look.
    levels = [0.05 / h for h in range(20, 0, -1)]
    crit = np.array([spending_boundaries(EQUAL5, a, spending).critical for a in levels])
    assert np.all(np.diff(crit, axis=0) < 0)


def test_many_unequal_looks_and_tiny_levels():
    t = [i / 20 for i in range(1, 21)]
    b = spending_boundaries(t, 0.05 / 2000)
    assert all(math.isfinite(c) for c in b.critical)
    assert b.critical[0] > b.critical[-1] > sps.norm.isf(0.05 / 2000 / 2)


def test_alpha_spent_sums_to_alpha_at_the_last_look():
    for spending in ("obrien-fleming", "pocock"):
        for m in (1, 5, 20):
            d = SequentialDesign(50, 5, spending=spending)
            spent = d.alpha_spent(m)
            increments = np.diff([0.0, *spent])
            assert np.all(increments > 0)
            assert increments.sum() == pytest.approx(0.05, rel=1e-12)
            assert spent[-1] == 0.05
