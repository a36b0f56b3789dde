"""Sorting and ranking within groups, shared by the rank statistics of this package.

Many comparisons are computed at once: every value carries an int group code, and a single
sort puts the values of each group together in ascending order, without a Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def check_grouped(values: np.ndarray, group: np.ndarray, n_groups: int, *, what: str = "values") -> tuple[np.ndarray, np.ndarray]:
    """Values as float64 and group codes as int64, after checking shapes, NaNs and code range."""
    v = np.asarray(values, dtype=np.float64)
    g = np.asarray(group)
    if v.ndim != 1 or g.ndim != 1 or len(v) != len(g):
        raise ValueError(f"{what} and group must be 1-d arrays of equal length, got shapes {v.shape} and {g.shape}")
    if g.dtype.kind not in "iub":
        raise ValueError(f"group must hold integer codes, got dtype {g.dtype}")
    n_groups = int(n_groups)
    if n_groups < 0:
        raise ValueError(f"n_groups must be >= 0, got {n_groups}")
    g = g.astype(np.int64, copy=False)
    if len(g) and (int(g.min()) < 0 or int(g.max()) >= n_groups):
        raise ValueError(f"group codes must lie in 0..{n_groups - 1}, got {int(g.min())}..{int(g.max())}")
    if np.isnan(v).any():
        raise ValueError(f"{what} contain NaN; drop them before ranking")
    return v, g


def _small_codes(codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Codes in the narrowest unsigned type that holds them: numpy's stable sort of 8- and
    16-bit integers is a linear radix sort (of wider ones a merge sort)."""
    if n_groups <= np.iinfo(np.uint8).max + 1:
        return codes.astype(np.uint8)
    if n_groups <= np.iinfo(np.uint16).max + 1:
        return codes.astype(np.uint16)
    return codes


def stable_group_order(group: np.ndarray, n_groups: int) -> np.ndarray:
    """Indices that order rows by group code, rows of a group in their original order."""
    return np.argsort(_small_codes(group, n_groups), kind="stable")


def sort_within_groups(values: np.ndarray, group: np.ndarray, n_groups: int, *, try_row_order: bool = False) -> np.ndarray:
    """Indices that order rows by (group, value).

    An unstable sort of the values followed by a stable sort of the group codes: the second
    sort keeps the value order inside each group. Codes that fit 16 bits take numpy's radix
    sort, which makes the second pass linear; this is several times faster than np.lexsort.

    try_row_order: the caller expects each group's values to be in ascending order already
    (times of rows stored in time order); then the stable sort of the codes alone is the
    answer, checked in one pass, and the sort of the values is done only if the check fails.
    Equal values may come out in another order than without the hint; ranks, medians and
    order statistics do not depend on that order.
    """
    if try_row_order and len(values) > 1:
        order = stable_group_order(group, n_groups)
        sv, sg = values[order], group[order]
        if bool(np.all((sv[1:] >= sv[:-1]) | (sg[1:] != sg[:-1]))):
            return order
    by_value = np.argsort(values)
    codes = _small_codes(group[by_value], n_groups)
    return by_value[np.argsort(codes, kind="stable")]


def refine_order(order: np.ndarray, fine_group: np.ndarray, n_fine: int) -> np.ndarray:
    """From rows ordered by (group, value), the order by (fine group, value), where fine groups
    split groups (e.g. a test's two arms): one stable radix sort instead of a sort of values.

    Gives exactly sort_within_groups(values, fine_group, n_fine) when `order` came from
    sort_within_groups(values, group, ...): both keep each fine group's rows in the order of
    the same sort of the values.
    """
    return order[np.argsort(_small_codes(fine_group[order], n_fine), kind="stable")]


@dataclass(frozen=True, eq=False)
class GroupedRanks:
    """Values sorted by (group, value) with their average ranks inside each group.

    order: row indices in sorted order; sorted_values, sorted_group: the rows in that order.
    ranks_sorted: 1-based rank of each sorted row within its group, ties given their average
        rank (scipy.stats.rankdata method="average").
    counts: values per group; starts: offset of each group's first row in the sorted arrays.
    tie_term: sum over runs of equal values in a group of t**3 - t (t = the run's length), the
        numerator of the Kruskal-Wallis tie correction.
    """

    order: np.ndarray
    sorted_values: np.ndarray
    sorted_group: np.ndarray
    ranks_sorted: np.ndarray
    counts: np.ndarray
    starts: np.ndarray
    tie_term: np.ndarray

    def ranks(self) -> np.ndarray:
        """The average ranks in the rows' original order."""
        out = np.empty_like(self.ranks_sorted)
        out[self.order] = self.ranks_sorted
        return out


def grouped_sort(
    values: np.ndarray, group: np.ndarray, n_groups: int, order: np.ndarray | None = None, *, try_row_order: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(order, sorted values, sorted group codes, counts, starts) for checked inputs.

    order: indices that already order the rows by (group, value), e.g. from refine_order; the
    caller vouches for it.
    """
    if order is None:
        order = sort_within_groups(values, group, n_groups, try_row_order=try_row_order)
    sv = values[order]
    sg = group[order]
    counts = np.bincount(sg, minlength=n_groups).astype(np.int64)
    starts = np.zeros(n_groups, dtype=np.int64)
    if n_groups > 1:
        np.cumsum(counts[:-1], out=starts[1:])
    return order, sv, sg, counts, starts


def grouped_ranks(
    values: np.ndarray, group: np.ndarray, n_groups: int, order: np.ndarray | None = None, *, try_row_order: bool = False
) -> GroupedRanks:
    """Average ranks within groups, by one sort and run-length encoding of equal values.

    order, try_row_order: as for grouped_sort.
    """
    order, sv, sg, counts, starts = grouped_sort(values, group, n_groups, order, try_row_order=try_row_order)
    n = len(sv)
    if n == 0:
        empty = np.zeros(0, dtype=np.float64)
        return GroupedRanks(order, sv, sg, empty, counts, starts, np.zeros(n_groups))
    # A run of ties is a maximal stretch of equal values inside one group. Without ties, the
    # rank is the place in the group; only the tied stretches (usually few) get their average
    # rank, so that no array per stretch is built when nearly every value is distinct.
    continues = np.empty(n, dtype=bool)  # the row ties with the one before it
    continues[0] = False
    np.logical_and(sg[1:] == sg[:-1], sv[1:] == sv[:-1], out=continues[1:])
    # Sorted position s (0-based) holds rank s + 1, counted from the group's first row.
    ranks_sorted = np.arange(1, n + 1, dtype=np.float64)
    ranks_sorted -= starts[sg]
    tie_term = np.zeros(n_groups)
    if continues.any():
        edge = np.diff(continues.astype(np.int8), append=np.int8(0))
        tie_start = np.flatnonzero(edge == 1)  # the row that the next one ties with
        tie_end = np.flatnonzero(edge == -1) + 1  # one past the last continuing one
        tie_len = tie_end - tie_start
        tie_group = sg[tie_start]
        # Positions s..e-1 hold ranks s+1..e; their mean is (s + e + 1) / 2. Half-integers:
        # exact in float64, and the same arithmetic as for untied rows.
        avg_rank = (tie_start + tie_end + 1) / 2.0 - starts[tie_group]
        at = np.repeat(tie_start - np.cumsum(tie_len) + tie_len, tie_len) + np.arange(int(tie_len.sum()))
        ranks_sorted[at] = np.repeat(avg_rank, tie_len)
        t = tie_len.astype(np.float64)
        tie_term = np.bincount(tie_group, weights=t * t * t - t, minlength=n_groups)
    return GroupedRanks(order, sv, sg, ranks_sorted, counts, starts, tie_term)


@dataclass(frozen=True, eq=False)
class RowRanks:
    """The values of each row of a 2-d array sorted, with their average ranks within the row.

    order: (rows, n) column indices in sorted order; ranks_sorted: 1-based rank of each sorted
        value within its row, ties given their average rank (scipy.stats.rankdata
        method="average"); tie_term: per row, the sum over runs of equal values of t**3 - t.
    """

    order: np.ndarray
    ranks_sorted: np.ndarray
    tie_term: np.ndarray

    def ranks(self) -> np.ndarray:
        """The average ranks in the values' own places."""
        out = np.empty(self.order.shape)
        np.put_along_axis(out, self.order, self.ranks_sorted, axis=1)
        return out


def row_ranks(values: np.ndarray) -> RowRanks:
    """Average ranks within each row of a (rows, n) array, by one sort along the rows: the layout
    of many comparisons of equal sizes, where grouped_ranks serves groups of any sizes."""
    x = np.asarray(values, dtype=np.float64)
    rows, n = x.shape
    order = np.argsort(x, axis=1)  # ties get their average rank, so the sort need not be stable
    s = np.take_along_axis(x, order, axis=1)
    new = np.ones((rows, n), dtype=bool)
    new[:, 1:] = s[:, 1:] != s[:, :-1]
    if new.all():  # no ties anywhere (continuous values): ranks are places
        return RowRanks(order, np.broadcast_to(np.arange(1.0, n + 1.0), (rows, n)), np.zeros(rows))
    flat_new = new.ravel()
    starts = np.flatnonzero(flat_new)
    run = np.cumsum(flat_new) - 1  # one id per run of tied values, across all rows
    sizes = np.diff(np.append(starts, flat_new.size)).astype(np.float64)
    avg_rank = (starts % n) + (sizes + 1.0) / 2.0  # 1-based average rank of each run
    tie_term = np.bincount(starts // n, weights=sizes**3 - sizes, minlength=rows)
    return RowRanks(order, avg_rank[run].reshape(rows, n), tie_term)
