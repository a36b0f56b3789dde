"""Exact permutation p-values of rank statistics (stats/permutation.py), against scipy's
statistics enumerated over every assignment."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from benchsage.stats._grouped import row_ranks
from benchsage.stats.permutation import exact_rank_p


def _enumerated(values: np.ndarray, statistic) -> float:
    observed = statistic(values)
    return float(np.mean([statistic(values[list(p)]) >= observed - 1e-12 for p in itertools.permutations(range(len(values)))]))


@pytest.mark.parametrize("n", [3, 5, 7])
def test_spearman_p_is_the_share_of_assignments_with_a_rho_as_large(n: int) -> None:
    rng = np.random.default_rng(n)
    setting = np.array([0, 64, 64, 512, 1024, 2048, 4096][:n], dtype=float)  # a tie among the settings
    rows = rng.lognormal(0, 0.1, (4, n))
    rows[1, 1] = rows[1, 0]  # a tie among the values
    got = exact_rank_p(rows, setting, numeric=True)
    assignments = np.array(list(itertools.permutations(range(n))))
    for row, p in zip(rows, got):
        # Spearman's rho of every assignment at once: Pearson's r of scipy's ranks (scipy's own
        # spearmanr, one assignment at a time, agrees on the observed one).
        ranks = stats.rankdata(row[assignments], axis=1)
        x = stats.rankdata(setting) - (n + 1) / 2
        y = ranks - ranks.mean(axis=1, keepdims=True)
        rho = np.abs(y @ x) / np.sqrt((y * y).sum(axis=1) * (x @ x))
        observed = abs(stats.spearmanr(setting, row).statistic)
        assert rho[0] == pytest.approx(observed, rel=1e-12)  # the first assignment is the identity
        assert p == pytest.approx(float(np.mean(rho >= observed - 1e-12)), rel=1e-12)


def test_kruskal_p_is_the_share_of_assignments_with_an_h_as_large() -> None:
    rng = np.random.default_rng(3)
    setting = np.array(["0-1", "0-1", "2", "2", "3", "3"])
    rows = rng.lognormal(0, 0.1, (3, 6))
    got = exact_rank_p(rows, setting, numeric=False)
    for row, p in zip(rows, got):
        h = lambda v: stats.kruskal(*[v[setting == level] for level in np.unique(setting)]).statistic  # noqa: E731
        assert p == pytest.approx(_enumerated(row, h), rel=1e-12)


def test_a_perfect_trend_gets_the_smallest_p_and_midranks_match_scipy() -> None:
    setting = np.arange(6.0)
    # rho = 1 and rho = -1 (two-sided) are the 2 most extreme of 720 assignments
    assert exact_rank_p(np.arange(6.0)[None, :] * 3.0, setting, numeric=True)[0] == pytest.approx(2 / 720)
    x = np.array([3.0, 1.0, 3.0, 2.0, 1.0, 5.0])
    assert row_ranks(x[None, :]).ranks()[0].tolist() == stats.rankdata(x).tolist()


def test_rows_of_more_than_eight_values_are_refused() -> None:
    with pytest.raises(ValueError, match="1 to 8 values"):
        exact_rank_p(np.ones((1, 9)), np.arange(9.0), numeric=True)
