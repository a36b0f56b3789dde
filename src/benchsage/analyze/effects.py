"""How large the order effect of each comparison is, and how large one the design could have
found: the shift of the fixed arm against the random arm with its interval, the least p-value
the row's test can give with these values, whether that reaches the corrected level, and the
smallest shift found with 80% power. Facts for TestVerdict; report/words/ says them.

Shift: the Hodges-Lehmann estimate of fixed against random with its distribution-free interval
(stats/shift.py), on logs as a ratio fixed/random when every value of the row is above 0,
otherwise as a difference fixed - random in the metric's unit. Its level is one minus the
family's corrected alpha (alpha / m; with Holm too, its strictest step, so the intervals are
simultaneous), and its rank k = floor(m n / 2 - z sd) + 1 (stats.shift.dual_rank, sd
tie-corrected) makes it dual to the analysis's own test: for untied values the interval
excludes no effect (1, or 0) exactly when the row is significant under Bonferroni; with ties,
an interval that excludes it still means significant, but a tied pair at no effect counts 1/2
in the test and not in the interval, so a significant row's interval may touch it. A fleet's
rows (stratified) are tested by van Elteren's test on ranks within workers and described on the
values with each worker's level removed: their shift is the two-sample one of those values, at
the same level, and is not dual to van Elteren's test.

Least p: the row's own test (kruskal_2, or van Elteren with its strata) on the two extreme
arrangements of the row's values (stats/detectable.py). Smallest detectable shift: bootstrap
experiments from the row's pooled values (stats.detectable.detectable_shift).

Work: the shift forms every pairwise difference (about 50 ns a pair) and the detectable shift
simulates 1,000 experiments per row; both are computed only while the analysis stays within
MAX_SHIFT_PAIRS and MAX_SIMULATION (all or nothing, so that an analysis of the same data gives
the same fields however it is batched); beyond that they are None. A paper-scale analysis
(1,880 tests of 612 runs per arm) is beyond both: its rows carry least_p and detectable only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np
from scipy import special

from benchsage.stats._grouped import GroupedRanks, refine_order
from benchsage.stats.detectable import critical_z, detectable_shift, least_p_kruskal, least_p_van_elteren, shift_percent
from benchsage.stats.permutation import least_p as split_floor
from benchsage.stats.permutation import log_assignments
from benchsage.stats.shift import dual_rank, pairwise_order_statistics
from benchsage.stats.stratified import pair_codes
from benchsage.vocabulary import SHIFT_DIFFERENCE, SHIFT_RATIO

# All rows' pairwise differences at most this many in all (about 1 s), or no row gets a shift.
MAX_SHIFT_PAIRS = 20_000_000
# The primary rows' simulation at most this much work in all, or none gets a detectable shift:
# each row counts its values plus SIMULATION_OVERHEAD (about 1 s per 10,000 on a quiet 2-core machine).
MAX_SIMULATION = 10_000
SIMULATION_OVERHEAD = 30
# The TestVerdict fields computed at the family's level within the budget (the rest are cheap).
SIZE_FIELDS = ("shift", "shift_ci", "shift_level", "shift_kind", "min_detectable_pct")


@dataclass(frozen=True)
class EffectOptions:
    """How analyze_table computes the effects of its rows.

    family_sizes: the number of testable comparisons (m) of the primary and of the other family
    the rows will be judged in, when that is not this table's (a batch of a larger analysis);
    None: this table's own. shift, simulate: compute the shifts, and the detectable shifts
    (True), never (False), or when this table is within the budget (None, within_budget)."""

    family_sizes: tuple[int, int] | None = None
    shift: bool | None = None
    simulate: bool | None = None


@dataclass(frozen=True, eq=False)
class OrderEffects:
    """Per comparison (NaN where undefined): the shift, its interval and level, whether it is
    a ratio, the least p-value, whether it is detectable, the smallest detectable shift in
    percent, and whether the row is primary (the last three are for primary rows only)."""

    shift: np.ndarray
    low: np.ndarray
    high: np.ndarray
    level: np.ndarray
    ratio: np.ndarray
    least_p: np.ndarray
    detectable: np.ndarray
    min_detectable: np.ndarray
    primary: np.ndarray

    def row(self, i: int) -> dict[str, Any]:
        """Comparison i's TestVerdict fields."""
        shift = _num(self.shift[i])
        low, high = _num(self.low[i]), _num(self.high[i])
        primary = bool(self.primary[i])
        return {
            "shift": shift,
            "shift_ci": (low, high) if shift is not None and low is not None and high is not None else None,
            "shift_level": _num(self.level[i]) if shift is not None else None,
            "shift_kind": (SHIFT_RATIO if self.ratio[i] else SHIFT_DIFFERENCE) if shift is not None else None,
            "least_p": _num(self.least_p[i]) if primary else None,
            "detectable": bool(self.detectable[i]) if primary else None,
            "min_detectable_pct": _num(self.min_detectable[i]) if primary else None,
        }


def _num(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def detectable(least_p: float | None, m: int, alpha: float) -> bool:
    """Whether a least p-value reaches the corrected level of a family of m: min(1, m p) <=
    alpha, the form of stats.correction.adjust's Bonferroni decision (Holm's first step)."""
    return least_p is not None and m > 0 and min(1.0, least_p * m) <= alpha


def family_sizes(rows: Sequence[Any]) -> tuple[int, int]:
    """m of the primary and of the other family of TestVerdict rows: those with a p-value."""
    tested = [v.primary for v in rows if v.kw_p is not None]
    return sum(tested), len(tested) - sum(tested)


def rows_within_budget(rows: Sequence[Any]) -> tuple[bool, bool]:
    """within_budget for TestVerdict rows (an analysis done in batches)."""
    n = np.array([(v.n_fixed, v.n_random) for v in rows], dtype=np.int64).reshape(-1, 2)
    testable = np.array([v.kw_p is not None for v in rows], dtype=bool)
    primary = np.array([v.primary for v in rows], dtype=bool)
    return within_budget(n, testable, primary)



def within_budget(n: np.ndarray, testable: np.ndarray, primary: np.ndarray) -> tuple[bool, bool]:
    """(shift affordable, simulation affordable) for comparisons of n (G, 2) values per arm."""
    pairs = float(np.sum(np.where(testable, n[:, 0].astype(np.float64) * n[:, 1], 0.0)))
    work = float(np.sum(np.where(testable & primary, n.sum(axis=1) + SIMULATION_OVERHEAD, 0)))
    return pairs <= MAX_SHIFT_PAIRS, work <= MAX_SIMULATION


class Strata(Protocol):
    """A stratified analysis's blocks (analyze/strata.py's Stratified): each row's stratum code
    (0..n_strata-1), as van Elteren's test of the rows took them."""

    stratum: np.ndarray
    n_strata: int


def order_effects(
    value: np.ndarray,
    group: np.ndarray,
    arm: np.ndarray,
    ranked: GroupedRanks,
    by_arm: np.ndarray,
    n: np.ndarray,
    primary: np.ndarray,
    testable: np.ndarray,
    *,
    alpha: float,
    options: EffectOptions = EffectOptions(),
    strata: Strata | None = None,
) -> OrderEffects:
    """The effects of every comparison of the order analysis, from its values and sorts.

    value, group, arm: the rows (arm 0 fixed, 1 random; level-free values when stratified);
    ranked: their grouped_ranks by comparison; by_arm: the rows ordered by (comparison, arm,
    value); n: (G, 2) values per arm; primary, testable: per comparison, as the analysis found
    them (testable: a p-value exists); strata: a stratified analysis's blocks.
    """
    n_groups = len(n)
    m = options.family_sizes or (int(np.sum(primary & testable)), int(np.sum(~primary & testable)))
    alpha_row = np.where(primary, alpha / m[0] if m[0] else np.nan, alpha / m[1] if m[1] else np.nan)
    least = np.where(testable, _least_p(value, group, arm, ranked, n, n_groups, strata), np.nan)
    with np.errstate(invalid="ignore"):
        reach = testable & primary & (np.minimum(1.0, least * m[0]) <= alpha)
    shift_on, simulate_on = within_budget(n, testable, primary)
    shift_on = shift_on if options.shift is None else options.shift
    simulate_on = simulate_on if options.simulate is None else options.simulate
    nan = np.full(n_groups, np.nan)
    positive = np.zeros(n_groups, dtype=bool)
    some = ranked.counts > 0
    positive[some] = ranked.sorted_values[ranked.starts[some]] > 0
    shift, low, high = nan, nan.copy(), nan.copy()
    if shift_on and testable.any():
        shift, low, high = _shifts(value[by_arm], n, positive, testable, ranked.tie_term, alpha_row)
    found = nan.copy()
    if simulate_on and reach.any():
        found = _min_detectable(ranked, n, positive, reach, alpha / m[0])
    return OrderEffects(shift=shift, low=low, high=high, level=1.0 - alpha_row, ratio=positive, least_p=least,
                        detectable=reach, min_detectable=found, primary=primary)


def _least_p(value: np.ndarray, group: np.ndarray, arm: np.ndarray, ranked: GroupedRanks, n: np.ndarray, n_groups: int,
             strata: Strata | None) -> np.ndarray:
    """The least p of each comparison's test: kruskal_2 on the rows in ranked's sort, or van
    Elteren's test on them sorted by (comparison, stratum, value)."""
    if strata is None:
        return least_p_kruskal(ranked.sorted_values, ranked.sorted_group, n[:, 0], n_groups, ranks=ranked)
    pair, _, n_pairs = pair_codes(group, strata.stratum, strata.n_strata)
    by_pair = refine_order(ranked.order, pair, n_pairs)
    return least_p_van_elteren(value[by_pair], group[by_pair], strata.stratum[by_pair], arm[by_pair], n_groups, strata.n_strata)


def _shifts(by_arm_values: np.ndarray, n: np.ndarray, ratio: np.ndarray, testable: np.ndarray, tie_term: np.ndarray,
            alpha_row: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hodges-Lehmann shift of fixed against random and its interval of rank dual_rank, per
    testable comparison (NaN elsewhere; NaN bounds where no finite interval has the level).
    by_arm_values: the values ordered by (comparison, arm, value)."""
    n_groups = len(n)
    nf, nr = n[:, 0].astype(np.int64), n[:, 1].astype(np.int64)
    start = np.cumsum(n.ravel()) - n.ravel()
    start_f, start_r = start[0::2], start[1::2]
    work = np.where(np.repeat(ratio, n.sum(axis=1)), np.log(np.where(by_arm_values > 0, by_arm_values, 1.0)), by_arm_values)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = dual_rank(nf, nr, -special.ndtri(np.where(np.isfinite(alpha_row), alpha_row, 0.5) / 2.0), tie_term)
        # the test's p is never below one over the splits: where that exceeds the level, it never rejects
        floor = split_floor(log_assignments(nf + nr, special.gammaln(nf + 1.0) + special.gammaln(nr + 1.0)))
    k = np.where(np.isfinite(alpha_row) & (floor <= alpha_row), k, 0)
    est, low, high = np.full(n_groups, np.nan), np.full(n_groups, np.nan), np.full(n_groups, np.nan)
    todo = np.flatnonzero(testable)
    shapes = nf[todo] * (1 << 32) + nr[todo]
    for shape in np.unique(shapes):
        rows = todo[shapes == shape]
        a, b = int(nf[rows[0]]), int(nr[rows[0]])
        x = work[start_f[rows][:, None] + np.arange(a)]
        y = work[start_r[rows][:, None] + np.arange(b)]
        pairs = a * b
        kk = k[rows]
        ranks = np.stack([np.full(len(rows), (pairs + 1) // 2), np.full(len(rows), pairs // 2 + 1),
                          np.maximum(kk, 1), pairs + 1 - np.maximum(kk, 1)], axis=1)
        d = pairwise_order_statistics(x, y, ranks)
        est[rows] = (d[:, 0] + d[:, 1]) / 2.0
        low[rows] = np.where(kk >= 1, d[:, 2], np.nan)
        high[rows] = np.where(kk >= 1, d[:, 3], np.nan)
    with np.errstate(over="ignore"):
        est, low, high = (np.where(ratio, np.exp(v), v) for v in (est, low, high))
    return est, low, high


def _min_detectable(ranked: GroupedRanks, n: np.ndarray, ratio: np.ndarray, rows: np.ndarray, alpha_test: float) -> np.ndarray:
    """The smallest detectable shift in percent of each comparison in `rows` (a mask), from its
    pooled values (stats.detectable)."""
    out = np.full(len(n), np.nan)
    z = critical_z(alpha_test)
    for i in np.flatnonzero(rows).tolist():
        start, count = int(ranked.starts[i]), int(ranked.counts[i])
        pool = ranked.sorted_values[start:start + count]
        found = detectable_shift(pool, int(n[i, 0]), int(n[i, 1]), z, ratio=bool(ratio[i]))
        pct = shift_percent(found, float(np.median(pool)))
        out[i] = np.nan if pct is None else pct
    return out
