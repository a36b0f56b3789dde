"""Full factorial designs of any number of levels: sums of squares against sums written out by
hand, one factor against scipy's one-way ANOVA, two levels against the 2^k r analysis, the
components adding up to SST, and the inputs refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.stats.anova import factorial_anova, term_sums_of_squares
from benchsage.stats.factorial import factorial_2k


def _flat(cells: np.ndarray, names: tuple[str, ...], levels: list[list[str]]) -> tuple[np.ndarray, dict[str, list[str]]]:
    """The observations of a (l_1, ..., l_k, r) array as values and per-factor settings, shuffled."""
    values, setting = [], {n: [] for n in names}
    for index in itertools.product(*(range(s) for s in cells.shape[:-1])):
        for v in cells[index]:
            values.append(v)
            for n, lv, i in zip(names, levels, index):
                setting[n].append(lv[i])
    order = np.random.default_rng(0).permutation(len(values))
    return np.array(values)[order], {n: [s[i] for i in order] for n, s in setting.items()}


def test_one_factor_matches_scipys_one_way_anova() -> None:
    rng = np.random.default_rng(1)
    groups = [rng.normal(10 + shift, 1.0, 6) for shift in (0.0, 0.4, 1.5, 0.2)]
    values = np.concatenate(groups)
    levels = ["1", "2", "4", "8"]
    result = factorial_anova(values, {"threads": [lv for lv in levels for _ in range(6)]}, {"threads": levels})
    reference = stats.f_oneway(*groups)
    term = result.term("threads")
    assert term.f == pytest.approx(reference.statistic, rel=1e-12) and term.p == pytest.approx(reference.pvalue, rel=1e-9)
    assert (term.df, result.error_df, result.r) == (3, 20, 6)
    assert result.effects["threads"] == pytest.approx(tuple(g.mean() - values.mean() for g in groups))


def test_two_factors_match_sums_of_squares_written_out_by_hand() -> None:
    """Jain, Section 22.2 (Montgomery, Eq. 5.6): a 3 x 2 design with 4 replications."""
    rng = np.random.default_rng(2)
    a, b, r = 3, 2, 4
    y = rng.normal(0, 1, (a, b, r)) + np.array([0.0, 1.0, 3.0])[:, None, None] + np.array([0.0, 0.5])[None, :, None]
    y[2, 1] += 2.0  # an interaction
    cell = y.mean(axis=2)
    grand = y.mean()
    row, col = cell.mean(axis=1), cell.mean(axis=0)
    ss_a = b * r * np.sum((row - grand) ** 2)
    ss_b = a * r * np.sum((col - grand) ** 2)
    ss_ab = r * np.sum((cell - row[:, None] - col[None, :] + grand) ** 2)
    sse = np.sum((y - cell[..., None]) ** 2)
    values, setting = _flat(y, ("a", "b"), [["x", "y", "z"], ["lo", "hi"]])
    result = factorial_anova(values, setting, {"a": ["x", "y", "z"], "b": ["lo", "hi"]})
    assert [t.term for t in result.terms] == ["a", "b", "a:b"]
    assert [t.df for t in result.terms] == [2, 1, 2] and result.error_df == 18
    assert [t.ss for t in result.terms] == pytest.approx([ss_a, ss_b, ss_ab], rel=1e-10)
    assert result.sse == pytest.approx(sse, rel=1e-10)
    mse = sse / 18
    assert result.term("a:b").p == pytest.approx(stats.f.sf(ss_ab / 2 / mse, 2, 18), rel=1e-9)
    assert sum(t.variation_pct for t in result.terms) + result.error_pct == pytest.approx(100.0)


def test_two_levels_everywhere_give_the_2k_allocation_of_variation() -> None:
    rng = np.random.default_rng(3)
    y = rng.normal(5, 1, (2, 2, 2, 3))
    names, levels = ("p", "q", "s"), [["lo", "hi"]] * 3
    values, setting = _flat(y, names, levels)
    anova = factorial_anova(values, setting, dict(zip(names, levels)))
    jain = factorial_2k(values, setting, {n: ("lo", "hi") for n in names})
    assert [t.term for t in anova.terms] == [t.term for t in jain.terms]
    assert [t.variation_pct for t in anova.terms] == pytest.approx([t.variation_pct for t in jain.terms], rel=1e-9)
    assert anova.error_pct == pytest.approx(jain.error_pct, rel=1e-9) and anova.mean == pytest.approx(jain.q0)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(2, 4), min_size=1, max_size=3), r=st.integers(2, 4), seed=st.integers(0, 2**32 - 1))
def test_the_components_add_up_to_the_total_in_a_balanced_design(shape: list[int], r: int, seed: int) -> None:
    y = np.random.default_rng(seed).normal(0, 1, (*shape, r)) * 10 ** np.random.default_rng(seed).uniform(-3, 3)
    ss, sse, sst = term_sums_of_squares(y)
    assert sum(ss.values()) + sse == pytest.approx(sst, rel=1e-9, abs=1e-12 * max(sst, 1e-300))
    assert all(v >= 0 for v in ss.values())


def test_no_error_gives_the_least_p_of_the_cells_and_no_variation_no_test() -> None:
    result = factorial_anova([1, 1, 2, 2, 3, 3], {"a": ["x", "x", "y", "y", "z", "z"]}, {"a": ["x", "y", "z"]})
    # never 0: one of the 6! / (2! 2! 2!) = 90 ways to deal the observations into the cells
    assert result.term("a").f == float("inf") and result.term("a").p == pytest.approx(1 / 90, rel=1e-12)
    assert result.to_json()["terms"][0]["f"] is None
    flat = factorial_anova([1.0] * 6, {"a": ["x", "x", "y", "y", "z", "z"]}, {"a": ["x", "y", "z"]})
    assert flat.term("a").p is None and flat.error_pct is None


@pytest.mark.parametrize("values, setting, factors, message", [
    ([1, 2, 3, 4], {"a": ["x", "x", "y", "y"]}, {"a": ["x", "y", "z"]}, "no observations at a=z"),
    ([1, 2, 3, 4, 5], {"a": ["x", "x", "y", "y", "y"]}, {"a": ["x", "y"]}, "2 observations at a=x but 3 elsewhere"),
    ([1, 2, 3], {"a": ["x", "y", "z"]}, {"a": ["x", "y", "z"]}, "one observation per cell"),
    ([1, 2], {"a": ["x", "w"]}, {"a": ["x", "y"]}, "factor 'a' has level 'w', not one of its levels 'x', 'y'"),
    ([1, 2], {"a": ["x", "x"]}, {"a": ["x"]}, "must have at least two distinct levels"),
    ([1, 2], {}, {}, "at least one factor"),
])
def test_designs_it_cannot_analyse_are_refused_naming_why(values, setting, factors, message) -> None:
    with pytest.raises(ValueError, match=message):
        factorial_anova(values, setting, factors)
