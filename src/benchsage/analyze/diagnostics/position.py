"""Position effects: does a test's value depend on where in the run it ran?

For each (test, metric) of the random arm and each position "bin", the values in the bin are
compared with the test's values elsewhere in the random arm: two-sample Kruskal-Wallis,
effect_pct = (median_at - median_other) / median_other x 100. A comparison is examined when both
sides hold at least `min_values` values. Every examined comparison (all bins, tests and metrics)
forms one family for the Bonferroni/Holm correction.
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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from benchsage.analyze.diagnostics.columns import corrected, effect_pct, nums
from benchsage.analyze.diagnostics.one_vs_rest import Part, RankCache, one_vs_rest
from benchsage.analyze.verdict import PositionEffect, Rows
from benchsage.stats.median_ci import grouped_median_ci
from benchsage.store.table import RANDOM_CODE, TrialTable

MAX_SINGLE_POSITIONS = 32  # beyond this many positions, positions are binned
MAX_LATER_BINS = 9  # bins of positions 1..P-1 in large experiments (plus position 0 alone)
ALL_TESTS = "(all tests)"


@dataclass(frozen=True)
class Bins:
    first: np.ndarray  # first position of each bin, ascending
    last: np.ndarray  # last position of each bin
    single: bool  # one bin per position
    table: np.ndarray | None = None  # the bin of each position 0..P-1, where P is at most LOOKUP_POSITIONS

    def of(self, position: np.ndarray) -> np.ndarray:
        """The bin of each position (the bins cover 0..P-1 in order): looked up in a table of
        the positions while there are few, else found by search (a data file can make P as
        large as it likes, and a table that long would be its memory)."""
        if self.table is not None:
            return self.table[position]
        return np.searchsorted(self.first, position, side="right") - 1


LOOKUP_POSITIONS = 1 << 16  # positions in a table (512 KiB) at most; a lookup is several times a search's speed


def _position_bins(n_positions: int, typical_n: float, min_values: int) -> Bins:
    if n_positions <= MAX_SINGLE_POSITIONS and typical_n / max(n_positions, 1) >= min_values:
        first = np.arange(n_positions)
        return Bins(first, first, True, first)
    later = n_positions - 1
    k = int(min(MAX_LATER_BINS, max(1, typical_n // (2 * min_values)), max(later, 1)))
    # Equal-width bins over 1..P-1; position 0 alone.
    edges = 1 + np.floor(np.arange(k + 1) * later / k).astype(np.int64) if later > 0 else np.array([1, 1])
    first = np.concatenate([[0], edges[:-1]])
    last = np.concatenate([[0], edges[1:] - 1])
    nonempty = last >= first
    first, last = first[nonempty], last[nonempty]
    table = np.repeat(np.arange(len(first)), last - first + 1) if n_positions <= LOOKUP_POSITIONS else None
    return Bins(first, last, False, table)


def position_bins(table: TrialTable, comp: np.ndarray, n_comp: int, min_values: int) -> Bins | None:
    """The position bins of a table's random-arm rows (None when none has a position)."""
    rows = np.flatnonzero((table.arm == RANDOM_CODE) & (table.position >= 0))
    if len(rows) == 0:
        return None
    per_comp = np.bincount(comp[rows], minlength=n_comp)
    return bins_for(int(table.position[rows].max()) + 1, per_comp, min_values)


def bins_for(n_positions: int, per_comp: np.ndarray, min_values: int) -> Bins:
    """The bins for positions 0..n_positions-1, from the random-arm values per comparison."""
    typical = float(np.median(per_comp[per_comp > 0]))
    return _position_bins(n_positions, typical, min_values)


def position_parts(
    table: TrialTable,
    comp: np.ndarray,
    comp_test: np.ndarray,
    comp_metric: np.ndarray,
    min_values: int,
    ranked: RankCache,
    *,
    bins: Bins | None = None,
    pooled: list[tuple[np.ndarray, ...]] | None = None,
) -> tuple[list[Part], Bins] | None:
    """The comparisons of the position effects, uncorrected.

    bins: the bins to use (by default those of this table). pooled: where a caller that
    examines the tests in batches collects the pooled comparison's values (percentile, ratio,
    metric, bin of each row) to compare them once all batches are in (pooled_part); then only
    the per-test part is returned.
    """
    rows = np.flatnonzero((table.arm == RANDOM_CODE) & (table.position >= 0))
    if len(rows) == 0:
        return None
    n_comp = len(comp_test)
    c = comp[rows]
    position = table.position[rows].astype(np.int64)
    value = table.value[rows]
    per_comp = np.bincount(c, minlength=n_comp)
    if bins is None:
        bins = bins_for(int(position.max()) + 1, per_comp, min_values)
    b = bins.of(position)
    n_bins = len(bins.first)

    ranks = ranked(rows)
    per_test = one_vs_rest(value, value, c, b, n_comp, n_bins, min_values, ranks)
    parts: list[Part] = [(per_test, comp_test[per_test.comp], comp_metric[per_test.comp])]
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


def pooled_part(percentile: np.ndarray, ratio: np.ndarray, metric: np.ndarray, b: np.ndarray, n_metrics: int, n_bins: int, min_values: int) -> Part:
    """The "(all tests)" comparisons of every metric and bin. Rank sums of average ranks are
    sums of half-integers, exact in any order, and medians are order statistics: the rows may
    come in any order."""
    pooled = one_vs_rest(percentile, ratio, metric, b, n_metrics, n_bins, min_values)
    return pooled, np.full(len(pooled.comp), -1), pooled.comp


def position_rows(parts: Sequence[Part], bins: Bins, test_names: Sequence[str], metric_names: Sequence[str], alpha: float,
                   correction: str) -> Sequence[PositionEffect]:
    first, last = bins.first.tolist(), bins.last.tolist()
    names = [ALL_TESTS if t < 0 else test_names[t] for _, tests, _ in parts for t in tests.tolist()]
    cat = [k for part, _, _ in parts for k in part.cat.tolist()]

    def joined(column: str) -> np.ndarray:
        return np.concatenate([getattr(part, column) for part, _, _ in parts])

    median_at, median_other = joined("median_at"), joined("median_other")
    return Rows(
        PositionEffect,
        {
            "test": names,
            "metric": [metric_names[m] for _, _, metrics in parts for m in metrics.tolist()],
            "position": [first[k] for k in cat],
            "n_at": joined("n_at").tolist(),
            "n_other": joined("n_other").tolist(),
            "median_at": nums(median_at),
            "median_other": nums(median_other),
            "effect_pct": nums(effect_pct(median_at, median_other)),
            **corrected(joined("p"), correction, alpha),
            "position_last": [None] * len(cat) if bins.single else [last[k] for k in cat],
        },
    )
