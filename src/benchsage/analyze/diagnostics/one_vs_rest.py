"""One category of a test's values against the rest of them: the comparison behind the position
effects (a position against the others) and the carry-over (one predecessor against the others).

Every comparison is ranked once, whatever its number of categories, and rows the caller examines
again (position effects and carry-over read the same random-arm rows) keep their ranking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from benchsage.stats._grouped import GroupedRanks, grouped_ranks, stable_group_order
from benchsage.stats.ranksum import centred_ranks, rank_sum_test


def subset_order(order: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """`order` (a permutation of 0..n-1) restricted to `rows`, as indices into rows. A subset of
    rows sorted by some key stays sorted by it."""
    if len(rows) == n:  # rows = all rows, ascending
        return order
    position_in_rows = np.full(n, -1, dtype=np.int64)
    position_in_rows[rows] = np.arange(len(rows))
    sub = position_in_rows[order]
    return sub[sub >= 0]


class RankCache:
    """Values of a set of rows ranked within their comparison, kept for the next user of the
    same rows: position effects and carry-over usually examine the same random-arm rows. With
    the table's rows ordered by (comparison, value), the ranking needs no sort."""

    def __init__(self, value: np.ndarray, comp: np.ndarray, n_comp: int, by_value: np.ndarray | None) -> None:
        self._value, self._comp, self._n_comp, self._by_value = value, comp, n_comp, by_value
        self._rows: np.ndarray | None = None
        self._ranks: GroupedRanks | None = None

    def __call__(self, rows: np.ndarray) -> GroupedRanks:
        if self._ranks is None or self._rows is None or not np.array_equal(rows, self._rows):
            order = None if self._by_value is None else subset_order(self._by_value, rows, len(self._value))
            self._rows = rows
            self._ranks = grouped_ranks(self._value[rows], self._comp[rows], self._n_comp, order)
        return self._ranks


@dataclass(frozen=True, eq=False)
class OneVsRest:
    """Per examined (comparison, category): the category's values against the comparison's others."""

    comp: np.ndarray
    cat: np.ndarray
    n_at: np.ndarray
    n_other: np.ndarray
    median_at: np.ndarray
    median_other: np.ndarray
    h: np.ndarray
    p: np.ndarray


def one_vs_rest(
    test_values: np.ndarray,
    effect_values: np.ndarray,
    comp: np.ndarray,
    cat: np.ndarray,
    n_comp: int,
    n_cat: int,
    min_values: int,
    ranks: GroupedRanks | None = None,
) -> OneVsRest:
    """Kruskal-Wallis of "category k" vs "the rest of its comparison" for every (c, k) with at
    least min_values values on both sides, and the medians of effect_values on both sides.

    Each value is "inside" for its own category and "the rest" for every other one, so running
    kruskal_2 per pair would copy each value once per category (tens of millions of values in
    a paper-scale experiment). Instead every comparison is ranked once, and each pair's H comes
    from the rank sum of its category: stats.ranksum.rank_sum_test of S, the sum over the
    category of (rank - (N + 1) / 2), with the comparison's N values and tie term. It equals
    kruskal_2(values, pair, inside) exactly (tests/analyze/diagnostics/test_one_vs_rest.py
    checks it). The rest's median is read from the comparison's sorted values without copying
    them either.
    ranks: grouped_ranks(test_values, comp, n_comp), when the caller has it already.
    """
    n_c = np.bincount(comp, minlength=n_comp).astype(np.int64)
    pc, pk, n_at, n_other, pair = _pairs(comp, cat, n_c, n_cat, min_values)
    m = len(pc)
    if m == 0:
        empty = np.zeros(0)
        return OneVsRest(pc, pk, n_at, n_other, empty, empty, empty, empty)
    if ranks is None:
        ranks = grouped_ranks(test_values, comp, n_comp)
    pair_sorted = pair[ranks.order]
    inside = pair_sorted >= 0
    s = np.bincount(pair_sorted[inside], weights=centred_ranks(ranks)[inside], minlength=m)
    test = rank_sum_test(s, n_other, n_at, ranks.tie_term[pc])
    # Medians: each comparison's effect values sorted once.
    sorted_rows = ranks.order if effect_values is test_values else grouped_ranks(effect_values, comp, n_comp).order
    median_at, median_other = _medians(effect_values[sorted_rows], comp[sorted_rows], pair[sorted_rows], n_c, pc, n_at, n_other)
    return OneVsRest(pc, pk, n_at, n_other, median_at, median_other, test.statistic, test.pvalue)


def _pairs(comp: np.ndarray, cat: np.ndarray, n_c: np.ndarray, n_cat: int, min_values: int) -> tuple[np.ndarray, ...]:
    """The examined (comparison, category) pairs, ascending: their comparison, category, and
    values inside and outside; and each row's examined pair (-1: none)."""
    n_comp = len(n_c)
    pair_key = comp.astype(np.int64) * n_cat + cat
    # The pairs that occur, ascending, with their counts and each row's pair: a dense counter
    # while it is small, else np.unique (n_comp * n_cat reaches 1.6e9 for 40,000 tests and
    # their predecessors, while a table has at most one pair per row).
    size = n_comp * n_cat
    if size <= max(4 * len(pair_key), 1 << 20):
        counts = np.bincount(pair_key, minlength=size)
        keys = np.flatnonzero(counts)
        n_key = counts[keys].astype(np.int64)
        index_of_key = np.empty(size, dtype=np.int64)
        index_of_key[keys] = np.arange(len(keys))
        key_of_row = index_of_key[pair_key]
    else:
        keys, key_of_row, n_key = np.unique(pair_key, return_inverse=True, return_counts=True)
        key_of_row, n_key = key_of_row.ravel(), n_key.astype(np.int64)
    key_comp = keys // n_cat
    n_other_key = n_c[key_comp] - n_key
    examined = np.flatnonzero((n_key >= min_values) & (n_other_key >= min_values))
    pair_of_key = np.full(len(keys), -1, dtype=np.int64)
    pair_of_key[examined] = np.arange(len(examined))
    return key_comp[examined], keys[examined] % n_cat, n_key[examined], n_other_key[examined], pair_of_key[key_of_row]


def _medians(sorted_values: np.ndarray, sorted_comp: np.ndarray, pair_sorted: np.ndarray, n_c: np.ndarray, pc: np.ndarray, n_at: np.ndarray,
             n_other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The median inside and outside each examined pair, from the values sorted by (comparison,
    value) with each sorted row's comparison and pair, without copying any comparison's values."""
    m = len(pc)
    starts = np.zeros(len(n_c), dtype=np.int64)
    np.cumsum(n_c[:-1], out=starts[1:])
    q_all = np.arange(len(sorted_values)) - starts[sorted_comp]  # place within the comparison
    take = pair_sorted >= 0
    # Rows of each pair in ascending value order (a stable sort keeps the value order).
    by_pair = stable_group_order(pair_sorted[take], m)  # a radix sort for up to 65,536 pairs
    q = q_all[take][by_pair]
    owner = pair_sorted[take][by_pair]
    first = np.zeros(m, dtype=np.int64)
    np.cumsum(n_at[:-1], out=first[1:])
    j = np.arange(len(q)) - first[owner]
    base = starts[pc]

    def at(rank0: np.ndarray) -> np.ndarray:  # value of the pair's rank0-th (0-based) member
        return sorted_values[base + q[first + rank0]]

    # The rest's r-th value (0-based) sits at place r + #{members whose count of non-members
    # before them (q_j - j) is <= r} in the comparison's sorted values.
    stride = int(n_c.max()) + 2
    key = owner * stride + (q - j)

    def rest(rank0: np.ndarray) -> np.ndarray:
        before = np.searchsorted(key, np.arange(m) * stride + rank0, side="right") - first
        return sorted_values[base + rank0 + before]

    return (at((n_at - 1) // 2) + at(n_at // 2)) / 2.0, (rest((n_other - 1) // 2) + rest(n_other // 2)) / 2.0


# A part of a diagnostic's rows: the comparisons, and the test (-1: all tests) and metric of each.
Part = tuple[OneVsRest, np.ndarray, np.ndarray]


def concat_parts(parts: Sequence[Part]) -> Part:
    """Parts of consecutive comparisons (batches of tests) as one part."""
    fields = ("comp", "cat", "n_at", "n_other", "median_at", "median_other", "h", "p")
    joined = OneVsRest(*(np.concatenate([getattr(part, f) for part, _, _ in parts]) for f in fields))
    return joined, np.concatenate([t for _, t, _ in parts]), np.concatenate([m for _, _, m in parts])
