"""Trends: do a test's values drift over the experiment?

Within each arm, Spearman's rho of value against the run's start time (the trial's own start
when runs are unknown), per test and metric, as one corrected family: drift over hours looks
like an order effect whenever the arms were not interleaved.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from benchsage.analyze.diagnostics.columns import corrected, nums
from benchsage.analyze.diagnostics.one_vs_rest import subset_order
from benchsage.analyze.verdict import Rows, Trend
from benchsage.stats._grouped import refine_order
from benchsage.stats.spearman import spearman_grouped
from benchsage.store.table import ARMS, TrialTable


def trend_part(
    table: TrialTable,
    starts: np.ndarray,
    comp: np.ndarray,
    comp_test: np.ndarray,
    comp_metric: np.ndarray,
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
    y_order = None if by_value is None else refine_order(subset_order(by_value, rows, len(table)), group, 2 * n_comp)
    rho, p = spearman_grouped(x[rows], table.value[rows], group, 2 * n_comp, x_in_order=True, y_order=y_order)
    g = np.flatnonzero(n >= min_values)
    return comp_test[g // 2], comp_metric[g // 2], g % 2, n[g], rho[g], p[g]


def trend_rows(part: tuple[np.ndarray, ...], test_names: Sequence[str], metric_names: Sequence[str], alpha: float,
                correction: str) -> Sequence[Trend]:
    tests, metrics, arms, n, rho, p = part
    return Rows(
        Trend,
        {
            "test": [test_names[t] for t in tests.tolist()],
            "metric": [metric_names[m] for m in metrics.tolist()],
            "arm": [ARMS[a] for a in arms.tolist()],
            "n": n.tolist(),
            "spearman_rho": nums(rho),
            **corrected(p, correction, alpha),
        },
    )
