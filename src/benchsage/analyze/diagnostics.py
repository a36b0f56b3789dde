"""Where does an order effect come from, and was the design sound? Diagnostics of a trial table.

In the random arm every test meets different positions and different predecessors, so the data
itself can say whether running first after the reset, or right after a particular test, moves
a test's values (position effects, carry-over). Across runs, the start times say whether the
two arms were interleaved in time and whether values drift (trends), so that slow drift is not
mistaken for an order effect.

Design choices (all vectorised over tests; the families are corrected as a whole):

Position effects. For each (test, metric) of the random arm and each position "bin", the values
in the bin are compared with the test's values elsewhere in the random arm: two-sample
Kruskal-Wallis, effect_pct = (median_at - median_other) / median_other x 100. A comparison is
examined when both sides hold at least `min_values` values. Every examined comparison (all
bins, tests and metrics) forms one family for the Bonferroni/Holm correction.
- Small experiments: when a typical test has at least `min_values` random-arm values per
  position on average, and there are at most MAX_SINGLE_POSITIONS positions, each position is its
  own bin (memcached, 3 tests x 50 runs: positions 0, 1, 2).
- Large experiments (hundreds of positions, a handful of values per position): position 0 is
  always a bin of its own, because the trial right after the reset is where cold caches, page
  faults and JIT warm-up show (the question "first in run vs later"); positions 1..P-1 are cut
  into at most MAX_LATER_BINS bins of equal width, fewer when a typical test has too few values
  to fill them (at least 2 x min_values expected per bin). This keeps the family small, so the
  correction does not drown real effects in thousands of hopeless comparisons.
  Because position 0 then holds only about runs/P values of each test, too few to test each
  test alone, the large-experiment mode also pools all tests of a metric ("(all tests)" rows):
  each value is replaced by its percentile rank within its own test's random-arm values, which
  makes the tests comparable (a stratified, van Elteren-like rank comparison), and the
  Kruskal-Wallis test compares the percentiles in the bin with the rest. Its effect_pct compares
  medians of value / (the test's random-arm median), i.e. a typical relative shift.

Carry-over. For each (test, metric) of the random arm and each predecessor (another test, or
"(reset)" for the first trial of a run), the values after that predecessor are compared with
the test's values after anything else; same test, same minimum, one corrected family.

Carry-over balance. Whether those estimates are balanced: on every worker, each test sat at each
position equally often and came right after each other test equally often among the random
arm's trials (one trial per run and position), as complete Williams squares make them
(design/williams.py); shuffled orders balance them only on average. Counted from the data, so
failed trials and incomplete squares show.

Interleaving. Each run's start is provenance["run_starts"][run] when the source recorded it,
else the earliest start of its trials. Per worker, runs are ordered by start: the arms are "not
interleaved" when one arm's runs all precede the other's (the hard flag), or when the arms are
clustered in time: the Wald-Wolfowitz runs test on the sequence of arms finds fewer stretches
of one arm than chance would give (one-sided p < alpha).

Trends. Within each arm, Spearman's rho of value against the run's start time (the trial's own
start when runs are unknown), per test and metric, as one corrected family: drift over hours
looks like an order effect whenever the arms were not interleaved.

Only primary metrics are examined (for imported data: every metric), as they decide the verdict.
A fleet's values are examined with each worker's level removed (see analyze/pipeline.py and
analyze/strata.py): medians are then in the units of a typical worker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import special

from benchsage.analyze.sorted_values import ValueOrder, comparisons
from benchsage.analyze.verdict import Carryover, CarryoverBalance, Diagnostics, Interleaving, PositionEffect, Rows, Trend
from benchsage.design.williams import Squares, square_rows
from benchsage.stats._grouped import GroupedRanks, grouped_ranks, refine_order, stable_group_order
from benchsage.stats.correction import adjust
from benchsage.stats.median_ci import grouped_median_ci
from benchsage.stats.ranksum import centred_ranks, rank_sum_test
from benchsage.stats.spearman import spearman_grouped
from benchsage.store.table import ARMS, FIRST, FIXED, NO_PREDECESSOR_INFO, RANDOM, TrialTable

MAX_SINGLE_POSITIONS = 32  # beyond this many positions, positions are binned
MAX_LATER_BINS = 9  # bins of positions 1..P-1 in large experiments (plus position 0 alone)
ALL_TESTS = "(all tests)"
RESET = "(reset)"
MAX_WORKER_DETAILS = 3  # interleaving details spelled out per worker


def diagnose(
    table: TrialTable,
    *,
    alpha: float = 0.05,
    correction: str = "bonferroni",
    min_values: int = 5,
    sorted_values: ValueOrder | None = None,
) -> Diagnostics | None:
    """Position effects, carry-over, interleaving and trends of a table (see the module docstring).

    None when the table knows neither runs, nor positions, nor times: nothing to diagnose.
    sorted_values: sorted_values.sort_values(table), shared with the order analysis; used when every
    row of the table is examined (all primary and finite), which spares two sorts.
    The work is in two halves that can run side by side: effects() and design().
    """
    parts = Parts(table, alpha=alpha, correction=correction, min_values=min_values, sorted_values=sorted_values)
    if not parts.anything:
        return None
    return parts.combine(parts.effects(), parts.design())


class Parts:
    """diagnose() in two independent halves, for callers that run them in two threads:
    effects() (position effects and carry-over) and design() (interleaving and trends)."""

    def __init__(
        self, table: TrialTable, *, alpha: float = 0.05, correction: str = "bonferroni", min_values: int = 5, sorted_values: ValueOrder | None = None
    ) -> None:
        self.table, self.alpha, self.correction, self.min_values = table, alpha, correction, min_values
        self.anything = bool((table.run >= 0).any() or (table.position >= 0).any() or np.isfinite(table.time).any())
        # The design (run starts, interleaving) is judged on every trial, the effects on primary values.
        keep = table.primary & np.isfinite(table.value)
        self.examined = table if keep.all() else table.select(keep)
        self.comp, self.comp_test, self.comp_metric = comparisons(self.examined)
        # The comparison codes here and in sorted_values.sort_values are the same numbering of (test, metric).
        fits = sorted_values is not None and sorted_values.fits(self.examined)
        self.by_value = sorted_values.order if fits else None  # type: ignore[union-attr]

    def effects(self) -> tuple[Sequence[PositionEffect], Sequence[Carryover]]:
        t, args = self.examined, (self.comp, self.comp_test, self.comp_metric, self.alpha, self.correction, self.min_values)
        ranked = _RankCache(t.value, self.comp, len(self.comp_test), self.by_value)
        return _position_effects(t, *args, ranked), _carryover(t, *args, ranked)

    def design(self) -> tuple[Interleaving | None, Sequence[Trend], CarryoverBalance | None]:
        starts = run_starts(self.table)
        interleaving = _interleaving(self.table, starts, self.alpha)
        trends = _trends(self.examined, starts, self.comp, self.comp_test, self.comp_metric, self.alpha, self.correction, self.min_values, self.by_value)
        return interleaving, trends, carryover_balance(self.examined, self.comp, self.comp_test)

    @staticmethod
    def combine(
        effects: tuple[Sequence[PositionEffect], Sequence[Carryover]], design: tuple[Interleaving | None, Sequence[Trend], CarryoverBalance | None]
    ) -> Diagnostics:
        return Diagnostics(interleaving=design[0], position_effects=effects[0], carryover=effects[1], trends=design[1], carryover_balance=design[2])


def _subset_order(order: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """`order` (a permutation of 0..n-1) restricted to `rows`, as indices into rows. A subset of
    rows sorted by some key stays sorted by it."""
    if len(rows) == n:  # rows = all rows, ascending
        return order
    position_in_rows = np.full(n, -1, dtype=np.int64)
    position_in_rows[rows] = np.arange(len(rows))
    sub = position_in_rows[order]
    return sub[sub >= 0]


class _RankCache:
    """Values of a set of rows ranked within their comparison, kept for the next user of the
    same rows: position effects and carry-over usually examine the same random-arm rows. With
    the table's rows ordered by (comparison, value), the ranking needs no sort."""

    def __init__(self, value: np.ndarray, comp: np.ndarray, n_comp: int, by_value: np.ndarray | None) -> None:
        self._value, self._comp, self._n_comp, self._by_value = value, comp, n_comp, by_value
        self._rows: np.ndarray | None = None
        self._ranks: GroupedRanks | None = None

    def __call__(self, rows: np.ndarray) -> GroupedRanks:
        if self._ranks is None or self._rows is None or not np.array_equal(rows, self._rows):
            order = None if self._by_value is None else _subset_order(self._by_value, rows, len(self._value))
            self._rows = rows
            self._ranks = grouped_ranks(self._value[rows], self._comp[rows], self._n_comp, order)
        return self._ranks


# -- shared machinery -------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _OneVsRest:
    """Per examined (comparison, category): the category's values against the comparison's others."""

    comp: np.ndarray
    cat: np.ndarray
    n_at: np.ndarray
    n_other: np.ndarray
    median_at: np.ndarray
    median_other: np.ndarray
    h: np.ndarray
    p: np.ndarray


def _one_vs_rest(
    test_values: np.ndarray,
    effect_values: np.ndarray,
    comp: np.ndarray,
    cat: np.ndarray,
    n_comp: int,
    n_cat: int,
    min_values: int,
    ranks: GroupedRanks | None = None,
) -> _OneVsRest:
    """Kruskal-Wallis of "category k" vs "the rest of its comparison" for every (c, k) with at
    least min_values values on both sides, and the medians of effect_values on both sides.

    Each value is "inside" for its own category and "the rest" for every other one, so running
    kruskal_2 per pair would copy each value once per category (tens of millions of values in
    a paper-scale experiment). Instead every comparison is ranked once, and each pair's H comes
    from the rank sum of its category: the two-sample H of kruskal_2 (Kruskal & Wallis 1952,
    tie-corrected), H = 12 S^2 N (N - 1) / (n_at n_rest (N^3 - N - T)), with S the sum over the
    category of (rank - (N + 1) / 2) and T the comparison's tie term. It equals
    kruskal_2(values, pair, inside) exactly (tests/analyze/test_diagnostics.py checks it).
    The rest's median is read from the comparison's sorted values without copying them either.
    ranks: grouped_ranks(test_values, comp, n_comp), when the caller has it already.
    """
    n_c = np.bincount(comp, minlength=n_comp).astype(np.int64)
    pair_key = comp.astype(np.int64) * n_cat + cat
    # The (comparison, category) pairs that occur, ascending, with their counts and each row's
    # pair: a dense counter while it is small, else np.unique (n_comp * n_cat reaches 1.6e9
    # for 40,000 tests and their predecessors, while a table has at most one pair per row).
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
    pc, pk = key_comp[examined], keys[examined] % n_cat
    n_at, n_other = n_key[examined], n_other_key[examined]
    m = len(examined)
    if m == 0:
        empty = np.zeros(0)
        return _OneVsRest(pc, pk, n_at, n_other, empty, empty, empty, empty)
    # Row -> its examined pair (or -1).
    pair_of_key = np.full(len(keys), -1, dtype=np.int64)
    pair_of_key[examined] = np.arange(m)
    pair = pair_of_key[key_of_row]

    # Kruskal-Wallis from one ranking of each comparison.
    if ranks is None:
        ranks = grouped_ranks(test_values, comp, n_comp)
    pair_sorted = pair[ranks.order]
    inside = pair_sorted >= 0
    s = np.bincount(pair_sorted[inside], weights=centred_ranks(ranks)[inside], minlength=m)
    test = rank_sum_test(s, n_other, n_at, ranks.tie_term[pc])
    h, p = test.statistic, test.pvalue

    # Medians: sort each comparison's effect values once.
    if effect_values is test_values:
        sorted_rows = ranks.order
    else:
        sorted_rows = grouped_ranks(effect_values, comp, n_comp).order
    sorted_values = effect_values[sorted_rows]
    starts = np.zeros(n_comp, dtype=np.int64)
    np.cumsum(n_c[:-1], out=starts[1:])
    q_all = np.arange(len(sorted_rows)) - starts[comp[sorted_rows]]  # place within the comparison
    pair_sorted = pair[sorted_rows]
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

    median_at = (at((n_at - 1) // 2) + at(n_at // 2)) / 2.0
    # The rest's r-th value (0-based) sits at place r + #{members whose count of non-members
    # before them (q_j - j) is <= r} in the comparison's sorted values.
    stride = int(n_c.max()) + 2
    key = owner * stride + (q - j)

    def rest(rank0: np.ndarray) -> np.ndarray:
        before = np.searchsorted(key, np.arange(m) * stride + rank0, side="right") - first
        return sorted_values[base + rank0 + before]

    median_other = (rest((n_other - 1) // 2) + rest(n_other // 2)) / 2.0
    return _OneVsRest(pc, pk, n_at, n_other, median_at, median_other, h, p)


def _effect_pct(at: np.ndarray, other: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(other != 0, (at - other) / other * 100.0, np.nan)


def _num(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _nums(a: np.ndarray) -> list[float | None]:
    """_num of every element, as a list: one conversion for tens of thousands of rows."""
    isfinite = math.isfinite
    return [x if isfinite(x) else None for x in np.asarray(a, dtype=np.float64).tolist()]


def _significant(reject: np.ndarray, p: list[float | None]) -> list[bool | None]:
    """Each row's decision; None where there is no p-value to decide on."""
    return [r if pv is not None else None for r, pv in zip(reject.tolist(), p)]


def _decide(p: np.ndarray, correction: str, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    corr = adjust(p, correction, alpha)
    return corr.p_adjusted, corr.reject


# -- position effects -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Bins:
    first: np.ndarray  # first position of each bin
    last: np.ndarray  # last position of each bin
    of_position: np.ndarray  # bin index of each position 0..P-1
    single: bool  # one bin per position


def _position_bins(n_positions: int, typical_n: float, min_values: int) -> _Bins:
    if n_positions <= MAX_SINGLE_POSITIONS and typical_n / max(n_positions, 1) >= min_values:
        first = np.arange(n_positions)
        return _Bins(first, first, first.copy(), True)
    later = n_positions - 1
    k = int(min(MAX_LATER_BINS, max(1, typical_n // (2 * min_values)), max(later, 1)))
    # Equal-width bins over 1..P-1; position 0 alone.
    edges = 1 + np.floor(np.arange(k + 1) * later / k).astype(np.int64) if later > 0 else np.array([1, 1])
    first = np.concatenate([[0], edges[:-1]])
    last = np.concatenate([[0], edges[1:] - 1])
    nonempty = last >= first
    first, last = first[nonempty], last[nonempty]
    of_position = np.zeros(n_positions, dtype=np.int64)
    for b in range(len(first)):
        of_position[first[b] : last[b] + 1] = b
    return _Bins(first, last, of_position, False)


def _position_effects(
    table: TrialTable,
    comp: np.ndarray,
    comp_test: np.ndarray,
    comp_metric: np.ndarray,
    alpha: float,
    correction: str,
    min_values: int,
    ranked: _RankCache,
) -> Sequence[PositionEffect]:
    found = _position_parts(table, comp, comp_test, comp_metric, min_values, ranked)
    if found is None:
        return ()
    parts, bins = found
    return _position_rows(parts, bins, table.test_names, table.metric_names, alpha, correction)


# One part of the position-effect rows: the comparisons, and the test (-1: all tests) and metric of each.
_Part = tuple[_OneVsRest, np.ndarray, np.ndarray]


def position_bins(table: TrialTable, comp: np.ndarray, n_comp: int, min_values: int) -> _Bins | None:
    """The position bins of a table's random-arm rows (None when none has a position)."""
    rows = np.flatnonzero((table.arm == RANDOM) & (table.position >= 0))
    if len(rows) == 0:
        return None
    per_comp = np.bincount(comp[rows], minlength=n_comp)
    return bins_for(int(table.position[rows].max()) + 1, per_comp, min_values)


def bins_for(n_positions: int, per_comp: np.ndarray, min_values: int) -> _Bins:
    """The bins for positions 0..n_positions-1, from the random-arm values per comparison."""
    typical = float(np.median(per_comp[per_comp > 0]))
    return _position_bins(n_positions, typical, min_values)


def _position_parts(
    table: TrialTable,
    comp: np.ndarray,
    comp_test: np.ndarray,
    comp_metric: np.ndarray,
    min_values: int,
    ranked: _RankCache,
    *,
    bins: _Bins | None = None,
    pooled: list[tuple[np.ndarray, ...]] | None = None,
) -> tuple[list[_Part], _Bins] | None:
    """The comparisons of the position effects, uncorrected.

    bins: the bins to use (by default those of this table). pooled: where a caller that
    examines the tests in batches collects the pooled comparison's values (percentile, ratio,
    metric, bin of each row) to compare them once all batches are in (pooled_part); then only
    the per-test part is returned.
    """
    rows = np.flatnonzero((table.arm == RANDOM) & (table.position >= 0))
    if len(rows) == 0:
        return None
    n_comp = len(comp_test)
    c = comp[rows]
    position = table.position[rows].astype(np.int64)
    value = table.value[rows]
    per_comp = np.bincount(c, minlength=n_comp)
    if bins is None:
        bins = bins_for(int(position.max()) + 1, per_comp, min_values)
    b = bins.of_position[position]
    n_bins = len(bins.first)

    ranks = ranked(rows)
    per_test = _one_vs_rest(value, value, c, b, n_comp, n_bins, min_values, ranks)
    parts: list[_Part] = [(per_test, comp_test[per_test.comp], comp_metric[per_test.comp])]
    if not bins.single:
        # Pool the tests of each metric on a common scale: percentile ranks for the test,
        # value / the test's random-arm median for the effect size.
        percentile = (ranks.ranks() - 0.5) / per_comp[c]
        medians = grouped_median_ci(value, c, n_comp, order=ranks.order).median
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = value / medians[c]
        metric = comp_metric[c]
        usable = np.isfinite(ratio)
        if pooled is not None:
            small = np.int8 if n_bins <= 127 else np.int64
            pooled.append((percentile[usable], ratio[usable], metric[usable].astype(np.int32), b[usable].astype(small)))
        else:
            n_metrics = max(len(table.metric_names), 1)
            parts.append(pooled_part(percentile[usable], ratio[usable], metric[usable], b[usable], n_metrics, n_bins, min_values))
    return parts, bins


def pooled_part(percentile: np.ndarray, ratio: np.ndarray, metric: np.ndarray, b: np.ndarray, n_metrics: int, n_bins: int, min_values: int) -> _Part:
    """The "(all tests)" comparisons of every metric and bin. Rank sums of average ranks are
    sums of half-integers, exact in any order, and medians are order statistics: the rows may
    come in any order."""
    pooled = _one_vs_rest(percentile, ratio, metric, b, n_metrics, n_bins, min_values)
    return pooled, np.full(len(pooled.comp), -1), pooled.comp


def concat_parts(parts: Sequence[_Part]) -> _Part:
    """Parts of consecutive comparisons (batches of tests) as one part."""
    fields = ("comp", "cat", "n_at", "n_other", "median_at", "median_other", "h", "p")
    joined = _OneVsRest(*(np.concatenate([getattr(part, f) for part, _, _ in parts]) for f in fields))
    return joined, np.concatenate([t for _, t, _ in parts]), np.concatenate([m for _, _, m in parts])


def _position_rows(parts: Sequence[_Part], bins: _Bins, test_names: Sequence[str], metric_names: Sequence[str], alpha: float,
                   correction: str) -> Sequence[PositionEffect]:
    p = np.concatenate([part.p for part, _, _ in parts])
    p_adj, reject = _decide(p, correction, alpha)
    first, last = bins.first.tolist(), bins.last.tolist()
    names = [ALL_TESTS if t < 0 else test_names[t] for _, tests, _ in parts for t in tests.tolist()]
    cat = [k for part, _, _ in parts for k in part.cat.tolist()]

    def joined(column: str) -> np.ndarray:
        return np.concatenate([getattr(part, column) for part, _, _ in parts])

    median_at, median_other = joined("median_at"), joined("median_other")
    p_values = _nums(p)
    return Rows(
        PositionEffect,
        {
            "test": names,
            "metric": [metric_names[m] for _, _, metrics in parts for m in metrics.tolist()],
            "position": [first[k] for k in cat],
            "n_at": joined("n_at").tolist(),
            "n_other": joined("n_other").tolist(),
            "median_at": _nums(median_at),
            "median_other": _nums(median_other),
            "effect_pct": _nums(_effect_pct(median_at, median_other)),
            "p": p_values,
            "p_adjusted": _nums(p_adj),
            "significant": _significant(reject, p_values),
            "position_last": [None] * len(cat) if bins.single else [last[k] for k in cat],
        },
    )


# -- carry-over -------------------------------------------------------------------------------


def _carryover(
    table: TrialTable,
    comp: np.ndarray,
    comp_test: np.ndarray,
    comp_metric: np.ndarray,
    alpha: float,
    correction: str,
    min_values: int,
    ranked: _RankCache,
) -> Sequence[Carryover]:
    part = _carryover_part(table, comp, comp_test, comp_metric, min_values, ranked)
    if part is None:
        return ()
    return _carryover_rows(part, table.test_names, table.metric_names, alpha, correction)


def _carryover_part(
    table: TrialTable, comp: np.ndarray, comp_test: np.ndarray, comp_metric: np.ndarray, min_values: int, ranked: _RankCache
) -> _Part | None:
    """The comparisons of the carry-over diagnostic, uncorrected."""
    rows = np.flatnonzero((table.arm == RANDOM) & (table.predecessor != NO_PREDECESSOR_INFO))
    if len(rows) == 0:
        return None
    n_tests = len(table.test_names)
    pred = table.predecessor[rows].astype(np.int64)
    cat = np.where(pred == FIRST, n_tests, pred)  # the reset is one more "predecessor"
    value = table.value[rows]
    res = _one_vs_rest(value, value, comp[rows], cat, len(comp_test), n_tests + 1, min_values, ranked(rows))
    return res, comp_test[res.comp], comp_metric[res.comp]


def _carryover_rows(part: _Part, test_names: Sequence[str], metric_names: Sequence[str], alpha: float, correction: str) -> Sequence[Carryover]:
    res, tests, metrics = part
    n_tests = len(test_names)
    p_adj, reject = _decide(res.p, correction, alpha)
    p_values = _nums(res.p)
    return Rows(
        Carryover,
        {
            "test": [test_names[t] for t in tests.tolist()],
            "metric": [metric_names[m] for m in metrics.tolist()],
            "after": [RESET if k == n_tests else test_names[k] for k in res.cat.tolist()],
            "n_after": res.n_at.tolist(),
            "n_other": res.n_other.tolist(),
            "median_after": _nums(res.median_at),
            "median_other": _nums(res.median_other),
            "effect_pct": _nums(_effect_pct(res.median_at, res.median_other)),
            "p": p_values,
            "p_adjusted": _nums(p_adj),
            "significant": _significant(reject, p_values),
        },
    )


# -- carry-over balance -----------------------------------------------------------------------


def carryover_balance(table: TrialTable, comp: np.ndarray | None = None, comp_test: np.ndarray | None = None) -> CarryoverBalance | None:
    """Whether the random arm's first-order carry-over is balanced (see the module docstring).

    None when the table knows no run, position and predecessor of any random-arm trial.
    comp, comp_test: sorted_values.comparisons(table), when the caller has them.
    """
    tally = BalanceTally(len(table.test_names), len(table.worker_names))
    tally.add(table, comp, comp_test)
    return tally.result(table.provenance.get("random_orders"))


class BalanceTally:
    """The counts carryover_balance describes, added up over parts of a table, each part every
    analysed trial of a range of test codes, the ranges disjoint (analyze/batched.py's batches
    of tests). The counts are per (worker, test, position) and per (worker, predecessor, test)
    cell, so each cell is counted whole in the part of its test, and a part counts only the
    cells of its own tests: the fewest and most over all cells are those over the parts."""

    def __init__(self, n_tests: int, n_workers: int) -> None:
        self.n = n_tests
        self.trials = np.zeros(n_workers, dtype=np.int64)  # trials counted, per worker code
        self.run_worker = np.full(0, -1, dtype=np.int32)  # worker of each run with a counted trial
        self.covered = np.zeros(n_tests, dtype=bool)  # tests within the ranges of the parts so far
        # Per worker code, the fewest and most entries in a cell of the parts so far.
        most = np.iinfo(np.int64).max
        self.pos_min, self.pos_max = np.full(n_workers, most, dtype=np.int64), np.zeros(n_workers, dtype=np.int64)
        self.pair_min, self.pair_max = np.full(n_workers, most, dtype=np.int64), np.zeros(n_workers, dtype=np.int64)
        self.beyond = False  # a run with more trials than there are tests
        self.itself = False  # a test right after itself

    def add(self, table: TrialTable, comp: np.ndarray | None = None, comp_test: np.ndarray | None = None) -> None:
        """Count the random-arm trials of `table` (comp, comp_test: sorted_values.comparisons(table))."""
        if comp is None or comp_test is None:
            comp, comp_test, _ = comparisons(table)
        n = self.n
        known = (table.arm == RANDOM) & (table.run >= 0) & (table.position >= 0) & (table.predecessor != NO_PREDECESSOR_INFO)
        if not known.any():
            return
        # One row per trial: a trial has a row per metric; keep those of its test's first comparison.
        tests_seen, first = np.unique(comp_test, return_index=True)
        first_comp = np.full(n, -1, dtype=np.int64)
        first_comp[tests_seen] = first
        rows = np.flatnonzero(known & (comp == first_comp[table.test]))
        if len(rows) == 0:
            return
        test = table.test[rows].astype(np.int64)
        position = table.position[rows].astype(np.int64)
        predecessor = table.predecessor[rows].astype(np.int64)
        run = table.run[rows]
        worker = table.worker[rows].astype(np.int64)
        self.trials += np.bincount(worker, minlength=len(self.trials))
        size = int(run.max()) + 1
        if size > len(self.run_worker):  # grown by half at least: parts of later tests often have later runs
            grown = np.full(max(size, len(self.run_worker) * 3 // 2), -1, dtype=np.int32)
            grown[: len(self.run_worker)] = self.run_worker
            self.run_worker = grown
        self.run_worker[run] = worker
        if n < 2:
            return
        # The cells of tests lo..hi-1, test-major: (test - lo) * cells per test + cell.
        lo, hi = int(test.min()), int(test.max()) + 1
        if self.covered[lo:hi].any():
            raise ValueError("parts of a carry-over balance count must hold disjoint ranges of tests")
        self.covered[lo:hi] = True
        # Only the workers with trials here: every cell of the others here is empty.
        here = np.bincount(worker, minlength=len(self.trials)) > 0
        local = (np.cumsum(here) - 1)[worker]
        self.pos_min[~here] = self.pair_min[~here] = 0
        beyond = position >= n
        self.beyond |= bool(beyond.any())
        inside = ~beyond
        self._count(self.pos_min, self.pos_max, here, local[inside], (test[inside] - lo) * n + position[inside], (hi - lo) * n)
        follows = predecessor >= 0
        itself = follows & (predecessor == test)
        self.itself |= bool(itself.any())
        pairs = follows & ~itself
        a, b = predecessor[pairs], test[pairs]
        self._count(self.pair_min, self.pair_max, here, local[pairs], (b - lo) * (n - 1) + a - (a > b), (hi - lo) * (n - 1))

    @staticmethod
    def _count(least: np.ndarray, most: np.ndarray, here: np.ndarray, worker: np.ndarray, cell: np.ndarray, cells: int) -> None:
        """Fold one part's cell counts (workers numbered among those `here`) into least and most."""
        low, high = _cell_range(worker, cell, cells, int(here.sum()))
        least[here] = np.minimum(least[here], low)
        most[here] = np.maximum(most[here], high)

    def result(self, random_orders: object = None) -> CarryoverBalance | None:
        """The verdict on everything counted; None when nothing was."""
        present = np.flatnonzero(self.trials)
        if len(present) == 0:
            return None
        n, n_workers, trials = self.n, len(present), int(self.trials.sum())
        runs_w = np.bincount(self.run_worker[self.run_worker >= 0], minlength=len(self.trials))[present]
        runs = int(runs_w.sum())
        orders = str(random_orders) if random_orders is not None else None
        if n < 2:
            return CarryoverBalance(None, "one test: nothing carries over from one test to another", orders, runs, n, None, None, None, None)

        # The cells of tests in no part are empty.
        everywhere = bool(self.covered.all())
        pos_min = self.pos_min[present] if everywhere else np.zeros(n_workers, dtype=np.int64)
        pair_min = self.pair_min[present] if everywhere else np.zeros(n_workers, dtype=np.int64)
        pos_max, pair_max = self.pos_max[present], self.pair_max[present]
        balanced_w = (pos_min == pos_max) & (pos_min > 0) & (pair_min == pair_max) & (pair_min > 0)
        balanced = bool(balanced_w.all()) and not self.beyond and not self.itself

        squares = [Squares.of(int(r), n) for r in runs_w] if orders == "williams" else []
        rows_per_square = square_rows(n) if squares else None
        complete = sum(q.complete for q in squares) if squares else None
        where = f"the {runs} random runs" if n_workers == 1 else f"the {runs} random runs of {n_workers} workers (counted per worker)"
        if balanced:
            detail = (f"balanced: in {where} each test came right after each other test {_span(pair_min)} times "
                      f"and sat at each position {_span(pos_min)} times")
            if squares:
                detail += f" ({complete} complete Williams square{'s' if complete != 1 else ''} of {rows_per_square} rows)"
        else:
            detail = (f"not balanced: in {where} a test came right after another {int(pair_min.min())}-{int(pair_max.max())} times "
                      f"and sat at a position {int(pos_min.min())}-{int(pos_max.max())} times")
            missing = runs * n - trials
            if missing > 0:
                detail += f"; {missing} trial{'s are' if missing != 1 else ' is'} missing (failed or not analysed), and their pairs count less"
            if self.beyond or self.itself:
                detail += "; some runs repeat a test"
            if squares and n_workers == 1 and squares[0].extra:
                detail += "; " + squares[0].describe(runs)
            elif squares and any(q.extra for q in squares):
                detail += (f"; {complete} complete Williams squares of {rows_per_square} rows, and "
                           f"{sum(1 for q in squares if q.extra)} of {n_workers} workers have an incomplete last square: "
                           "carry-over is balanced only over complete squares")
            elif orders == "shuffle":
                detail += "; shuffled orders balance carry-over only on average (random_orders = \"williams\" balances it)"
        return CarryoverBalance(
            balanced, detail, orders, runs, n, int(pair_min.min()), int(pair_max.max()), int(pos_min.min()), int(pos_max.max()),
            rows_per_square, complete,
        )


def _span(counts: np.ndarray) -> str:
    low, high = int(counts.min()), int(counts.max())
    return str(low) if low == high else f"{low}-{high} (per worker)"


def _cell_range(worker: np.ndarray, cell: np.ndarray, cells: int, n_workers: int) -> tuple[np.ndarray, np.ndarray]:
    """The fewest and most entries in any of each worker's `cells` cells (an empty cell counts 0)."""
    keys = worker * cells + cell
    total = n_workers * cells
    if total <= max(4 * len(keys), 1 << 22):  # a dense count of up to 32 MiB
        counts = np.bincount(keys, minlength=total).reshape(n_workers, cells)
        return counts.min(axis=1), counts.max(axis=1)
    # Far more cells than entries (thousands of tests, few runs): count only the cells that occur.
    occurring, counts = np.unique(keys, return_counts=True)
    owner = occurring // cells
    most = np.zeros(n_workers, dtype=np.int64)
    np.maximum.at(most, owner, counts)
    least = np.full(n_workers, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(least, owner, counts)
    least[np.bincount(owner, minlength=n_workers) < cells] = 0
    return least, most


# -- run start times, interleaving, trends ----------------------------------------------------


def run_starts(table: TrialTable) -> np.ndarray:
    """Start time of every run id (index = run id; NaN when unknown).

    provenance["run_starts"] (what the source recorded) wins; otherwise the earliest start of
    the run's trials in the table.
    """
    known = table.run >= 0
    if not known.any():
        return np.zeros(0)
    size = int(table.run[known].max()) + 1
    starts = np.full(size, np.inf)
    timed = known & np.isfinite(table.time)
    np.minimum.at(starts, table.run[timed], table.time[timed])
    starts[np.isinf(starts)] = np.nan
    for run, start in dict(table.provenance.get("run_starts") or {}).items():
        if 0 <= int(run) < size and start is not None and math.isfinite(float(start)):
            starts[int(run)] = float(start)
    return starts


def _runs_test_lower(arms: np.ndarray) -> tuple[int, float, float]:
    """Wald-Wolfowitz runs test: (stretches of one arm, expected stretches, one-sided p).

    Wald & Wolfowitz (1940), "On a test whether two samples are from the same population",
    Ann. Math. Statist. 11(2). With n1, n2 runs of each arm and R maximal stretches of equal
    arms in time order, E[R] = 2 n1 n2 / n + 1 and Var[R] = 2 n1 n2 (2 n1 n2 - n) / (n^2 (n - 1));
    p = Phi((R - E[R]) / sd), small when the arms are clustered (too few stretches).
    """
    n1 = int((arms == FIXED).sum())
    n2 = int((arms == RANDOM).sum())
    n = n1 + n2
    stretches = 1 + int(np.count_nonzero(arms[1:] != arms[:-1])) if n else 0
    expected = 2.0 * n1 * n2 / n + 1.0 if n else float("nan")
    if n1 == 0 or n2 == 0 or n < 3:
        return stretches, expected, float("nan")
    var = 2.0 * n1 * n2 * (2.0 * n1 * n2 - n) / (n * n * (n - 1.0))
    if var <= 0:
        return stretches, expected, float("nan")
    z = (stretches - expected) / math.sqrt(var)
    return stretches, expected, float(special.ndtr(z))


def _interleaving(table: TrialTable, starts: np.ndarray, alpha: float) -> Interleaving | None:
    known = table.run >= 0
    if not known.any():
        return None
    # Each run's first row (np.unique would sort millions of run ids to find them).
    runs = table.run[known]
    place = np.full(int(runs.max()) + 1, len(runs), dtype=np.int64)
    np.minimum.at(place, runs, np.arange(len(runs)))
    ids = np.flatnonzero(place < len(runs))
    rows = np.flatnonzero(known)[place[ids]]
    return interleaving_of_runs(table.arm[rows].astype(np.int64), table.worker[rows], starts[ids], table.worker_names, alpha)


def interleaving_of_runs(arm: np.ndarray, worker: np.ndarray, start: np.ndarray, worker_names: Sequence[str], alpha: float) -> Interleaving:
    """The interleaving verdict from each run's arm, worker and start (runs in id order)."""
    n_fixed, n_random = int((arm == FIXED).sum()), int((arm == RANDOM).sum())
    timed = np.isfinite(start)
    if not timed.any():
        return Interleaving(None, "no run start times in the data: cannot tell whether the arms were interleaved", n_fixed, n_random)
    # Each worker has its own sequence of runs (and possibly its own clock).
    verdicts: list[bool] = []
    judged: list[tuple[bool, str]] = []
    workers = np.unique(worker[timed])
    for w in workers.tolist():
        sel = timed & (worker == w)
        order = np.argsort(start[sel], kind="stable")
        ok, detail = _judge(arm[sel][order], alpha)
        verdicts.append(ok)
        judged.append((ok, detail if len(workers) == 1 else f"worker {worker_names[w]}: {detail}"))
    # Problems first; a fleet of workers gets a count rather than a line per worker.
    judged.sort(key=lambda item: item[0])
    details = [d for _, d in judged[:MAX_WORKER_DETAILS]]
    if len(judged) > MAX_WORKER_DETAILS:
        details.append(f"{sum(verdicts)} of {len(verdicts)} workers interleaved")
    untimed = int((~timed).sum())
    if untimed:
        details.append(f"{untimed} run{'s' if untimed != 1 else ''} without a start time left out")
    return Interleaving(all(verdicts), "; ".join(details), n_fixed, n_random)


def _judge(seq: np.ndarray, alpha: float) -> tuple[bool, str]:
    """Interleaved or not, and why, for one worker's arms in time order."""
    n_fixed, n_random = int((seq == FIXED).sum()), int((seq == RANDOM).sum())
    if n_fixed == 0 or n_random == 0:
        only = ARMS[FIXED] if n_random == 0 else ARMS[RANDOM]
        return False, f"only {only} runs ({len(seq)}): the other arm ran elsewhere or not at all"
    where_f, where_r = np.flatnonzero(seq == FIXED), np.flatnonzero(seq == RANDOM)
    if where_f.max() < where_r.min():
        return False, f"all {n_fixed} fixed runs precede all {n_random} random runs"
    if where_r.max() < where_f.min():
        return False, f"all {n_random} random runs precede all {n_fixed} fixed runs"
    stretches, expected, p = _runs_test_lower(seq)
    test = f"{stretches} stretches of one arm, {expected:.1f} expected by chance (Wald-Wolfowitz runs test, one-sided p = {p:.3g})"
    if math.isfinite(p) and p < alpha:
        return False, f"{n_fixed} fixed and {n_random} random runs are clustered in time: {test}"
    return True, f"{n_fixed} fixed and {n_random} random runs are interleaved in time: {test}"


def _trends(
    table: TrialTable,
    starts: np.ndarray,
    comp: np.ndarray,
    comp_test: np.ndarray,
    comp_metric: np.ndarray,
    alpha: float,
    correction: str,
    min_values: int,
    by_value: np.ndarray | None = None,
) -> Sequence[Trend]:
    part = _trend_part(table, starts, comp, comp_test, comp_metric, alpha, correction, min_values, by_value)
    if part is None:
        return ()
    return _trend_rows(part, table.test_names, table.metric_names, alpha, correction)


def _trend_part(
    table: TrialTable,
    starts: np.ndarray,
    comp: np.ndarray,
    comp_test: np.ndarray,
    comp_metric: np.ndarray,
    alpha: float,
    correction: str,
    min_values: int,
    by_value: np.ndarray | None = None,
) -> tuple[np.ndarray, ...] | None:
    """The trend comparisons (test, metric, arm, n, rho, p of each), uncorrected."""
    x = np.full(len(table), np.nan)
    known = table.run >= 0
    if len(starts):
        x[known] = starts[table.run[known]]
    # Without a run start, the trial's own start time.
    x = np.where(np.isnan(x), table.time, x)
    rows = np.flatnonzero(np.isfinite(x))
    if len(rows) == 0:
        return None
    n_comp = len(comp_test)
    group = comp[rows] * 2 + table.arm[rows].astype(np.int64)
    n = np.bincount(group, minlength=2 * n_comp)
    # Rows are usually stored in time order, which spares the sort of the start times.
    # Rows by (comparison, value), refined by arm: by (group, value) without a sort.
    y_order = None if by_value is None else refine_order(_subset_order(by_value, rows, len(table)), group, 2 * n_comp)
    rho, p = spearman_grouped(x[rows], table.value[rows], group, 2 * n_comp, x_in_order=True, y_order=y_order)
    g = np.flatnonzero(n >= min_values)
    return comp_test[g // 2], comp_metric[g // 2], g % 2, n[g], rho[g], p[g]


def _trend_rows(part: tuple[np.ndarray, ...], test_names: Sequence[str], metric_names: Sequence[str], alpha: float,
                correction: str) -> Sequence[Trend]:
    tests, metrics, arms, n, rho, p = part
    p_adj, reject = _decide(p, correction, alpha)
    p_values = _nums(p)
    return Rows(
        Trend,
        {
            "test": [test_names[t] for t in tests.tolist()],
            "metric": [metric_names[m] for m in metrics.tolist()],
            "arm": [ARMS[a] for a in arms.tolist()],
            "n": n.tolist(),
            "spearman_rho": _nums(rho),
            "p": p_values,
            "p_adjusted": _nums(p_adj),
            "significant": _significant(reject, p_values),
        },
    )
