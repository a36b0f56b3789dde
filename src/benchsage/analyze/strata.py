"""The combined analysis across blocks: fixed vs random arm with each worker, and each treatment
cell, as a block.

Machines differ (the paper's authors found identical-looking servers 3x apart), and so do the
levels of a factor (a server written in Python and one in C); pooling their values, as
OrderSage does, buries an order effect under the spread between them. Each comparison is
therefore tested with van Elteren's stratified Wilcoxon test (ranks within each block, a block
being a worker's treatment cell; stats/stratified.py, analyze/cells.py), and its descriptive
fields are computed on the values with each block's level removed, so that they describe the
order effect and not the spread between blocks. With one block per comparison everything
reduces exactly to the single-worker analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchsage.analyze.cells import TreatmentCells
from benchsage.analyze.sorted_values import ValueOrder
from benchsage.stats._grouped import grouped_ranks, refine_order
from benchsage.stats.median_ci import grouped_median_ci
from benchsage.stats.stratified import pair_codes, van_elteren
from benchsage.store.table import TrialTable


def method(workers: bool, cells: bool) -> str:
    """What the rows of an analysis stratified by worker, by treatment cell, or by both hold."""
    block, within, removed, level, levels = {
        (True, False): ("worker", "each worker", "each worker's level", "the worker's median of the test", "the workers' medians"),
        (False, True): ("treatment cell", "each treatment cell", "each treatment cell's level", "the cell's median of the test",
                        "the cells' medians"),
        (True, True): ("worker and treatment cell", "each worker's treatment cell", "the level of each worker's treatment cell",
                       "the test's median in the worker's cell", "these medians"),
    }[(workers, cells)]
    return (
        f"stratified by {block}: van Elteren's stratified Wilcoxon test (ranks within {within}, "
        f"weights 1/(n+1), chi-square with 1 df; with one {'block' if cells else 'worker'} it is the Kruskal-Wallis test); "
        "kw_h and kw_p hold its statistic and p-value, eta2 = (chi2 - 1)/(n - 2); means, CVs, "
        f"delta_pct, medians, CIs and CI cases describe the values with {removed} removed "
        f"(each value x M/m, m {level} over both arms, M the median of {levels}; "
        "a shift x - m + M where a median is not positive)"
        + ("; cells: each treatment cell's own medians and CIs, pooled over workers" if workers and cells else
           "; cells: each treatment cell's own medians and CIs" if cells else "")
    )


METHOD = method(True, False)


@dataclass(frozen=True, eq=False)
class Blocks:
    """Each row's block (0..n - 1): its worker's treatment cell, or its worker without cells;
    and how many workers and treatment cells hold rows (analyze/cells.py)."""

    code: np.ndarray
    n: int
    workers: int
    cells: int

    @property
    def stratified(self) -> bool:
        """More than one worker or more than one cell: the rows are tested block by block."""
        return self.workers > 1 or self.cells > 1


def blocks(table: TrialTable, cells: TreatmentCells | None = None) -> Blocks:
    """The blocks of the table's rows: their workers, split by the rows' treatment cells
    (cells.treatment_cells(table); None: no cells)."""
    workers = workers_present(table)
    if cells is None or len(cells.cells) <= 1:
        return Blocks(table.worker, max(len(table.worker_names), 1), workers, 1)
    code, _, n = pair_codes(table.worker.astype(np.int64), cells.code, len(cells.cells))
    return Blocks(code, n, workers, len(cells.cells))


@dataclass(frozen=True, eq=False)
class Stratified:
    """Per comparison (numbered as ValueOrder.group): the stratified test and how many blocks
    held both arms; per row: the value with its block's level removed.

    single: every comparison's values come from one block. Then statistic and p are those of
    the two-sample Kruskal-Wallis test, `level_free` is the table's value column itself, and the
    caller may run the single-worker analysis unchanged.
    """

    single: bool
    statistic: np.ndarray
    pvalue: np.ndarray
    strata: np.ndarray
    level_free: np.ndarray
    by: Blocks | None = None  # the blocks (None: by worker)

    @property
    def stratum(self) -> np.ndarray:
        """Each row's block as the test took it (0..n_strata-1), for the effects (analyze/effects.py)."""
        assert self.by is not None
        return self.by.code.astype(np.int64, copy=False)

    @property
    def n_strata(self) -> int:
        assert self.by is not None
        return self.by.n


def workers_present(table: TrialTable) -> int:
    """How many workers hold rows of the table."""
    if len(table) == 0:
        return 0
    if len(table.worker_names) <= 1:
        return 1
    return int(np.count_nonzero(np.bincount(table.worker, minlength=len(table.worker_names))))


def comparison_workers(worker: np.ndarray, sv: ValueOrder) -> np.ndarray | None:
    """The worker (or any other per-row code: a block) of each comparison (numbered as
    sv.group) when every comparison's rows share one, else None: each row against its
    comparison's first row in the shared sort (no sort of its own)."""
    n_groups = len(sv.combos)
    if n_groups == 0:
        return np.zeros(0, dtype=np.int64)
    counts = np.bincount(sv.group, minlength=n_groups)
    starts = np.zeros(n_groups, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    lookup = np.zeros(n_groups, dtype=np.int64)
    lookup[counts > 0] = worker[sv.order[starts[counts > 0]]]
    return lookup if bool(np.all(worker == lookup[sv.group])) else None


def stratify(table: TrialTable, sv: ValueOrder, block: Blocks | None = None) -> Stratified:
    """The stratified test of every comparison of `table` (rows sorted as `sv`, finite values),
    each row in its block (default: its worker).

    The level of block b in comparison c is m_bc, the median of its values (both arms); the
    comparison's level M_c is the median of the m_bc. Each value becomes x M_c / m_bc, which
    keeps ratios within a block (an order effect of 3% stays 3%) and brings every block to the
    typical level; where some m_bc or M_c is not positive (a metric that can be zero or
    negative), x - m_bc + M_c. A comparison with one block keeps its values unchanged.
    """
    if block is None:
        block = blocks(table)
    value = np.asarray(table.value, dtype=np.float64)
    n_groups = len(sv.combos)
    code = block.code.astype(np.int64, copy=False)
    if comparison_workers(code, sv) is not None:
        nan = np.full(n_groups, np.nan)
        return Stratified(True, nan, nan, np.ones(n_groups, dtype=np.int64), value, block)
    pair, pair_group, n_pairs = pair_codes(sv.group, code, block.n)
    # Rows by (comparison, block, value): one radix pass over the shared sort.
    by_pair = refine_order(sv.order, pair, n_pairs)
    ranks = grouped_ranks(value, pair, n_pairs, by_pair)
    test = van_elteren(value, sv.group, code, table.arm.astype(np.int64), n_groups, block.n, ranks=ranks)

    level = grouped_median_ci(value, pair, n_pairs, order=by_pair).median
    typical = grouped_median_ci(level, pair_group, n_groups).median
    positive = np.bincount(pair_group, weights=(level > 0), minlength=n_groups) == np.bincount(pair_group, minlength=n_groups)
    positive &= typical > 0
    ratio = positive[pair_group]
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(ratio, typical[pair_group] / level, 1.0)
    shift = np.where(ratio, 0.0, typical[pair_group] - level)
    # Exactly x where a comparison has one block (factor 1, shift 0).
    alone = np.bincount(pair_group, minlength=n_groups)[pair_group] == 1
    factor[alone], shift[alone] = 1.0, 0.0
    level_free = value * factor[pair] + shift[pair]
    return Stratified(False, test.statistic, test.pvalue, test.strata, level_free, block)
