"""A table's comparisons and its values sorted within them, shared by every analysis of it.

A comparison is one (test, metric) of a TrialTable, numbered test-major (the table's test order,
then its metric order), which is the order of the output. The order analysis, the strata of a
fleet, the diagnostics and the batches all number comparisons this way and share one sort of
the values (the sort is most of an analysis's work on a large table).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchsage.stats._grouped import check_grouped, sort_within_groups
from benchsage.store.table import FIXED_CODE, RANDOM_CODE, TrialTable


def _numbering(table: TrialTable) -> tuple[np.ndarray, np.ndarray, int]:
    """(comparison of each row, test * n_metrics + metric of each comparison, n_metrics)."""
    n_metrics = max(len(table.metric_names), 1)
    key = table.test.astype(np.int64) * n_metrics + table.metric.astype(np.int64)
    group, combos = comparison_codes(key, len(table.test_names) * n_metrics)
    return group, combos, n_metrics


def comparison_codes(key: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The comparisons that occur among keys test * n_metrics + metric (each below `size`, the
    tests times the metrics), ascending, and each key's comparison (its index among them).

    A dense count over every (test, metric) while that is small beside the rows; otherwise only
    the keys that occur, sorted: a table holds at most one comparison per row, while its tests
    times its metrics can be the square of its rows (20,000 tests, each with a metric of its own).
    """
    if len(key) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if size <= max(4 * len(key), 1 << 20):
        present = np.bincount(key, minlength=size) > 0
        return (np.cumsum(present) - 1)[key], np.flatnonzero(present)
    combos, group = np.unique(key, return_inverse=True)
    return group.ravel().astype(np.int64, copy=False), combos


def comparisons(table: TrialTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The comparison of each row, and the test and the metric of each comparison."""
    group, combos, n_metrics = _numbering(table)
    return group, combos // n_metrics, combos % n_metrics


@dataclass(frozen=True, eq=False)
class ValueOrder:
    """A table's values sorted once, for the order analysis and the diagnostics to share.

    value: the table's value column, kept to recognise the table (a selection of it has a
        new array); group: each row's comparison (see comparisons); combos: test * n_metrics +
        metric of each comparison.
    order: rows ordered by (comparison, value). Any finer grouping (comparison and arm) is one
        radix pass away (stats._grouped.refine_order), and the rows of one arm, taken in this
        order, are already ordered by (comparison, value).
    """

    value: np.ndarray
    group: np.ndarray
    combos: np.ndarray
    n_metrics: int
    order: np.ndarray

    def fits(self, table: TrialTable) -> bool:
        return self.value is table.value


def sort_values(table: TrialTable) -> ValueOrder:
    """Sort the table's values within each comparison: the one sort of the values that the
    analysis needs (ValueError if a value is NaN or the arm column is not 0/1)."""
    group, combos, n_metrics = _numbering(table)
    n_groups = len(combos)
    if len(table.arm) and not np.isin(table.arm, (FIXED_CODE, RANDOM_CODE)).all():
        raise ValueError("arm column must hold only FIXED_CODE (0) and RANDOM_CODE (1)")
    value, group = check_grouped(table.value, group, n_groups)
    return ValueOrder(table.value, group, combos, n_metrics, sort_within_groups(value, group, n_groups))
