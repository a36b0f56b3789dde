"""Sorting within groups: the shortcuts (a finer grouping from a coarser sort, rows already in
order) give the same ranks, order statistics and tests as a fresh sort."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.stats import grouped_median_ci, kruskal_2, spearman_grouped
from benchsage.stats._grouped import grouped_ranks, refine_order, row_ranks, sort_within_groups


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 300), n_groups=st.integers(1, 6), decimals=st.integers(0, 2), seed=st.integers(0, 2**32 - 1))
def test_refined_order_equals_a_fresh_sort(n: int, n_groups: int, decimals: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=n), decimals)
    group = rng.integers(0, n_groups, n)
    arm = rng.integers(0, 2, n)
    fine = group * 2 + arm
    coarse = sort_within_groups(values, group, n_groups)
    assert np.array_equal(refine_order(coarse, fine, 2 * n_groups), sort_within_groups(values, fine, 2 * n_groups))
    ranks = grouped_ranks(values, group, n_groups)
    a = kruskal_2(values, group, arm, n_groups, ranks=ranks)
    b = kruskal_2(values, group, arm, n_groups)
    assert np.array_equal(a.statistic, b.statistic, equal_nan=True) and np.array_equal(a.pvalue, b.pvalue, equal_nan=True)
    by_arm = refine_order(ranks.order, fine, 2 * n_groups)
    ci_a = grouped_median_ci(values, fine, 2 * n_groups, order=by_arm)
    ci_b = grouped_median_ci(values, fine, 2 * n_groups)
    for field in ("median", "low", "high", "n"):
        assert np.array_equal(getattr(ci_a, field), getattr(ci_b, field), equal_nan=True)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 300), n_groups=st.integers(1, 6), in_order=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_row_order_hint_gives_the_same_ranks(n: int, n_groups: int, in_order: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(0, 20, n))  # ties
    if in_order:
        x = np.sort(x)  # ascending in row order, so within every group too
    y = rng.normal(size=n)
    group = rng.integers(0, n_groups, n)
    hinted = grouped_ranks(x, group, n_groups, try_row_order=True)
    plain = grouped_ranks(x, group, n_groups)
    assert np.array_equal(hinted.ranks(), plain.ranks())
    assert np.array_equal(hinted.sorted_values, plain.sorted_values)
    assert np.array_equal(hinted.tie_term, plain.tie_term)
    a = spearman_grouped(x, y, group, n_groups, x_in_order=True)
    b = spearman_grouped(x, y, group, n_groups)
    assert np.array_equal(a.rho, b.rho, equal_nan=True) and np.array_equal(a.pvalue, b.pvalue, equal_nan=True)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 200), n_groups=st.integers(1, 6), decimals=st.integers(0, 2), seed=st.integers(0, 2**32 - 1))
def test_grouped_ranks_are_scipy_average_ranks(n: int, n_groups: int, decimals: int, seed: int) -> None:
    from scipy import stats

    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=n), decimals)  # from all distinct to mostly tied
    group = rng.integers(0, n_groups, n)
    ranks = grouped_ranks(values, group, n_groups)
    full = ranks.ranks()
    for g in range(n_groups):
        sel = group == g
        if not sel.any():
            assert ranks.tie_term[g] == 0
            continue
        assert np.array_equal(full[sel], stats.rankdata(values[sel], method="average"))
        _, t = np.unique(values[sel], return_counts=True)
        assert ranks.tie_term[g] == float(np.sum(t.astype(float) ** 3 - t))


@settings(max_examples=100, deadline=None)
@given(rows=st.integers(0, 5), n=st.integers(0, 40), decimals=st.integers(0, 2), seed=st.integers(0, 2**32 - 1))
def test_row_ranks_are_scipy_average_ranks(rows: int, n: int, decimals: int, seed: int) -> None:
    from scipy import stats

    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=(rows, n)), decimals)  # from all distinct to mostly tied
    ranked = row_ranks(values)
    assert ranked.ranks().shape == (rows, n) and ranked.tie_term.shape == (rows,)
    for i in range(rows):
        assert np.array_equal(ranked.ranks()[i], stats.rankdata(values[i], method="average"))
        _, t = np.unique(values[i], return_counts=True)
        assert ranked.tie_term[i] == float(np.sum(t.astype(float) ** 3 - t))
