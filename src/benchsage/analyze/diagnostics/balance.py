"""Carry-over balance: were the carry-over estimates balanced by the design?

On every worker, each test should sit at each position equally often and come right after each
other test equally often among the random arm's trials (one trial per run and position), as
complete Williams squares make them (design/williams.py); shuffled orders balance them only on
average. Counted from the data, so failed trials and incomplete squares show.
"""

from __future__ import annotations

import numpy as np

from benchsage.analyze.diagnostics.notes import (
    BalanceDetail, Balanced, Imbalance, IncompleteSquare, IncompleteSquares, NotBalanced, OneTest, ShuffledOrders,
)
from benchsage.analyze.sorted_values import comparisons
from benchsage.analyze.verdict import CarryoverBalance
from benchsage.design.williams import Squares, square_rows
from benchsage.store.table import NO_PREDECESSOR_INFO, RANDOM_CODE, TrialTable
from benchsage.vocabulary import SHUFFLE, WILLIAMS


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
        known = (table.arm == RANDOM_CODE) & (table.run >= 0) & (table.position >= 0) & (table.predecessor != NO_PREDECESSOR_INFO)
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
            return CarryoverBalance(None, OneTest(), orders, runs, n, None, None, None, None)

        # The cells of tests in no part are empty.
        everywhere = bool(self.covered.all())
        pos_min = self.pos_min[present] if everywhere else np.zeros(n_workers, dtype=np.int64)
        pair_min = self.pair_min[present] if everywhere else np.zeros(n_workers, dtype=np.int64)
        pos_max, pair_max = self.pos_max[present], self.pair_max[present]
        balanced_w = (pos_min == pos_max) & (pos_min > 0) & (pair_min == pair_max) & (pair_min > 0)
        balanced = bool(balanced_w.all()) and not self.beyond and not self.itself

        squares = [Squares.of(int(r), n) for r in runs_w] if orders == WILLIAMS else []
        rows_per_square = square_rows(n) if squares else None
        complete = sum(q.complete for q in squares) if squares else None
        detail: BalanceDetail
        if balanced:
            detail = Balanced(runs, n_workers, int(pair_min.min()), int(pair_min.max()), int(pos_min.min()), int(pos_min.max()),
                              complete, rows_per_square)
        else:
            detail = NotBalanced(runs, n_workers, int(pair_min.min()), int(pair_max.max()), int(pos_min.min()), int(pos_max.max()),
                                 max(runs * n - trials, 0), self.beyond or self.itself, _imbalance(squares, runs, orders))
        return CarryoverBalance(
            balanced, detail, orders, runs, n, int(pair_min.min()), int(pair_max.max()), int(pos_min.min()), int(pos_max.max()),
            rows_per_square, complete,
        )


def _imbalance(squares: list[Squares], runs: int, orders: str | None) -> Imbalance | None:
    """What the random orders have to do with an imbalance: one worker's incomplete last
    Williams square, a fleet's workers with one, or shuffled orders; None when nothing."""
    if len(squares) == 1 and squares[0].extra:
        return IncompleteSquare(squares[0], runs)
    incomplete = sum(1 for q in squares if q.extra)
    if len(squares) > 1 and incomplete:
        return IncompleteSquares(sum(q.complete for q in squares), squares[0].rows, incomplete, len(squares))
    if orders == SHUFFLE:
        return ShuffledOrders()
    return None


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
