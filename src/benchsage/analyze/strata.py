"""The combined analysis of a fleet: fixed vs random arm with each worker as a block.

Machines differ (the paper's authors found identical-looking servers 3x apart), and pooling
their values, as OrderSage does, buries an order effect under machine-to-machine spread. Each
comparison is therefore tested with van Elteren's stratified Wilcoxon test (ranks within each
worker; stats/stratified.py), and its descriptive fields are computed on the values with each
worker's level removed, so that they describe the order effect and not the fleet's spread.
With one worker per comparison everything reduces exactly to the single-worker analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchsage.analyze.sorted_values import ValueOrder
from benchsage.stats._grouped import grouped_ranks, refine_order
from benchsage.stats.median_ci import grouped_median_ci
from benchsage.stats.stratified import pair_codes, van_elteren
from benchsage.store.table import TrialTable

METHOD = (
    "stratified by worker: van Elteren's stratified Wilcoxon test (ranks within each worker, "
    "weights 1/(n+1), chi-square with 1 df; with one worker it is the Kruskal-Wallis test); "
    "kw_h and kw_p hold its statistic and p-value, eta2 = (chi2 - 1)/(n - 2); means, CVs, "
    "delta_pct, medians, CIs and CI cases describe the values with each worker's level removed "
    "(each value x M/m, m the worker's median of the test over both arms, M the median of the "
    "workers' medians; a shift x - m + M where a median is not positive)"
)


@dataclass(frozen=True, eq=False)
class Stratified:
    """Per comparison (numbered as ValueOrder.group): the stratified test and how many workers
    held both arms; per row: the value with its worker's level removed.

    single: every comparison's values come from one worker. Then statistic and p are those of
    the two-sample Kruskal-Wallis test, `level_free` is the table's value column itself, and the
    caller may run the single-worker analysis unchanged.
    """

    single: bool
    statistic: np.ndarray
    pvalue: np.ndarray
    strata: np.ndarray
    level_free: np.ndarray
    # Each row's stratum as the test took it (0..n_strata-1), for the effects (analyze/effects.py).
    stratum: np.ndarray | None = None
    n_strata: int = 0


def workers_present(table: TrialTable) -> int:
    """How many workers hold rows of the table."""
    if len(table) == 0:
        return 0
    if len(table.worker_names) <= 1:
        return 1
    return int(np.count_nonzero(np.bincount(table.worker, minlength=len(table.worker_names))))


def comparison_workers(worker: np.ndarray, sv: ValueOrder) -> np.ndarray | None:
    """The worker of each comparison (numbered as sv.group) when every comparison's rows share
    one worker, else None: each row against its comparison's first row in the shared sort (no
    sort of its own)."""
    n_groups = len(sv.combos)
    if n_groups == 0:
        return np.zeros(0, dtype=np.int64)
    counts = np.bincount(sv.group, minlength=n_groups)
    starts = np.zeros(n_groups, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    lookup = np.zeros(n_groups, dtype=np.int64)
    lookup[counts > 0] = worker[sv.order[starts[counts > 0]]]
    return lookup if bool(np.all(worker == lookup[sv.group])) else None


def stratify(table: TrialTable, sv: ValueOrder) -> Stratified:
    """The stratified test of every comparison of `table` (rows sorted as `sv`, finite values).

    The level of worker w in comparison c is m_wc, the median of its values (both arms); the
    fleet's level M_c is the median of the m_wc. Each value becomes x M_c / m_wc, which keeps
    ratios within a worker (an order effect of 3% stays 3%) and brings every worker to the
    fleet's typical level; where some m_wc or M_c is not positive (a metric that can be zero or
    negative), x - m_wc + M_c. A comparison with one worker keeps its values unchanged.
    """
    value = np.asarray(table.value, dtype=np.float64)
    n_groups = len(sv.combos)
    if comparison_workers(table.worker, sv) is not None:
        nan = np.full(n_groups, np.nan)
        return Stratified(True, nan, nan, np.ones(n_groups, dtype=np.int64), value)
    n_workers = max(len(table.worker_names), 1)
    pair, pair_group, n_pairs = pair_codes(sv.group, table.worker.astype(np.int64), n_workers)
    # Rows by (comparison, worker, value): one radix pass over the shared sort.
    by_pair = refine_order(sv.order, pair, n_pairs)
    ranks = grouped_ranks(value, pair, n_pairs, by_pair)
    test = van_elteren(value, sv.group, table.worker, table.arm.astype(np.int64), n_groups, n_workers, ranks=ranks)

    level = grouped_median_ci(value, pair, n_pairs, order=by_pair).median
    fleet = grouped_median_ci(level, pair_group, n_groups).median
    positive = np.bincount(pair_group, weights=(level > 0), minlength=n_groups) == np.bincount(pair_group, minlength=n_groups)
    positive &= fleet > 0
    ratio = positive[pair_group]
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(ratio, fleet[pair_group] / level, 1.0)
    shift = np.where(ratio, 0.0, fleet[pair_group] - level)
    # Exactly x where a comparison has one worker (factor 1, shift 0).
    alone = np.bincount(pair_group, minlength=n_groups)[pair_group] == 1
    factor[alone], shift[alone] = 1.0, 0.0
    level_free = value * factor[pair] + shift[pair]
    return Stratified(False, test.statistic, test.pvalue, test.strata, level_free, table.worker.astype(np.int64), n_workers)
