"""The exact one-sided Wilcoxon signed-rank test against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from benchsage.stats.signed_rank import signed_rank_p


@pytest.mark.parametrize("n", [1, 5, 12, 30, 60])
def test_matches_scipy_exact_without_ties(n: int) -> None:
    rng = np.random.default_rng(n)
    for shift in (0.0, 0.3, -0.5):
        d = rng.standard_normal(n) + shift
        ref = stats.wilcoxon(d, alternative="greater", method="exact").pvalue
        assert signed_rank_p(d) == pytest.approx(ref, rel=1e-9)


def test_ties_and_zeros_match_a_full_enumeration() -> None:
    d = np.array([0.0, 1.0, -1.0, 2.0, 2.0, 2.0, -3.0, 0.5, 0.5, 4.0])
    nz = d[d != 0]
    ranks = stats.rankdata(np.abs(nz))
    observed = ranks[nz > 0].sum()
    signs = (np.arange(2 ** nz.size)[:, None] >> np.arange(nz.size)) & 1
    sums = signs @ ranks
    assert signed_rank_p(d) == pytest.approx(np.mean(sums >= observed - 1e-9), rel=1e-12)


def test_level_holds_under_the_null_with_heavy_tails() -> None:
    rng = np.random.default_rng(7)
    p = np.array([signed_rank_p(rng.standard_t(2, 15)) for _ in range(4000)])
    assert np.mean(p <= 0.05) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 4000)
    assert np.mean(p <= 0.05) > 0.03  # the exact test is not grossly conservative either


def test_normal_approximation_beyond_the_exact_range() -> None:
    rng = np.random.default_rng(3)
    d = rng.standard_normal(500) + 0.05
    ref = stats.wilcoxon(d, alternative="greater", method="approx", correction=True).pvalue
    assert signed_rank_p(d) == pytest.approx(ref, rel=2e-2)


def test_empty_and_all_zero() -> None:
    assert signed_rank_p(np.array([])) == 1.0
    assert signed_rank_p(np.zeros(5)) == 1.0
