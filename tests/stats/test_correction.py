"""Bonferroni and Holm: known examples, a direct step-down implementation, NaN handling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.stats import adjust


def _holm_step_down(p, alpha):
    """Holm (1979) literally: walk the sorted p-values, reject while p(j) <= alpha / (m - j + 1)."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    m = len(p)
    reject = [False] * m
    for j, i in enumerate(order):
        if p[i] <= alpha / (m - j):
            reject[i] = True
        else:
            break
    return reject


def test_bonferroni_known_example():
    c = adjust(np.array([0.01, 0.02, 0.04]), "bonferroni", 0.05)
    np.testing.assert_allclose(c.p_adjusted, [0.03, 0.06, 0.12])
    assert list(c.reject) == [True, False, False]
    assert c.m == 3 and c.alpha_corrected == pytest.approx(0.05 / 3)


def test_holm_known_example():
    # By hand: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> running max.
    c = adjust(np.array([0.01, 0.04, 0.03, 0.005]), "holm", 0.05)
    np.testing.assert_allclose(c.p_adjusted, [0.03, 0.06, 0.06, 0.02])
    assert list(c.reject) == [True, False, False, True]
    assert c.alpha_corrected == pytest.approx(0.05 / 4)


def test_adjusted_values_are_capped_at_one():
    c = adjust(np.array([0.5, 0.9]), "bonferroni")
    assert list(c.p_adjusted) == [1.0, 1.0]


def test_nan_is_outside_the_family():
    c = adjust(np.array([0.01, np.nan, 0.02]), "bonferroni", 0.05)
    assert c.m == 2
    assert np.isnan(c.p_adjusted[1]) and not c.reject[1]
    np.testing.assert_allclose(c.p_adjusted[[0, 2]], [0.02, 0.04])
    assert list(c.reject) == [True, False, True]


def test_empty_family():
    for p in (np.array([]), np.array([np.nan, np.nan])):
        c = adjust(p, "holm")
        assert c.m == 0 and c.alpha_corrected is None and not c.reject.any()


def test_bad_names_and_values():
    with pytest.raises(ValueError, match="unknown correction 'sidak'"):
        adjust(np.array([0.1]), "sidak")
    with pytest.raises(ValueError, match="alpha"):
        adjust(np.array([0.1]), "holm", 1.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        adjust(np.array([1.2]), "holm")


p_lists = st.lists(
    st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.001, 0.01, 0.0125, 0.05, 1.0]), st.just(float("nan"))),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(p_lists, st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_matches_step_down_and_contains_bonferroni(p, alpha):
    arr = np.array(p, dtype=float)
    holm = adjust(arr, "holm", alpha)
    bonf = adjust(arr, "bonferroni", alpha)
    ok = ~np.isnan(arr)
    assert holm.m == bonf.m == int(ok.sum())
    expected = np.zeros(len(arr), bool)
    expected[ok] = _holm_step_down(list(arr[ok]), alpha)
    # The adjusted-p route and the literal procedure may differ only by float rounding at the edge.
    edge = np.zeros(len(arr), bool)
    if ok.any():
        m = ok.sum()
        thresholds = alpha / np.arange(1, m + 1)
        edge[ok] = np.isclose(arr[ok][:, None], thresholds[None, :], rtol=1e-12).any(axis=1)
    assert np.array_equal(holm.reject[~edge], expected[~edge])
    assert not np.any(bonf.reject & ~holm.reject)  # Holm rejects a superset
    assert np.all(holm.p_adjusted[ok] <= bonf.p_adjusted[ok] + 1e-15)
    assert np.all(holm.p_adjusted[ok] >= arr[ok])
    assert np.all((holm.p_adjusted[ok] >= 0) & (holm.p_adjusted[ok] <= 1))
    assert np.array_equal(bonf.reject[ok & ~edge], arr[ok & ~edge] <= alpha / max(bonf.m, 1))
