"""Carry-over: does a test's value depend on the test that ran right before it?

For each (test, metric) of the random arm and each predecessor (another test, or "(reset)" for
the first trial of a run), the values after that predecessor are compared with the test's values
after anything else (two-sample Kruskal-Wallis, effect_pct as for the position effects); a
comparison is examined when both sides hold at least `min_values` values, and all of them form
one family for the correction.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from benchsage.analyze.diagnostics.columns import corrected, effect_pct, nums
from benchsage.analyze.diagnostics.one_vs_rest import Part, RankCache, one_vs_rest
from benchsage.analyze.verdict import Carryover, Rows
from benchsage.store.table import FIRST, NO_PREDECESSOR_INFO, RANDOM_CODE, TrialTable

RESET = "(reset)"


def carryover_part(
    table: TrialTable, comp: np.ndarray, comp_test: np.ndarray, comp_metric: np.ndarray, min_values: int, ranked: RankCache
) -> Part | None:
    """The comparisons of the carry-over diagnostic, uncorrected."""
    rows = np.flatnonzero((table.arm == RANDOM_CODE) & (table.predecessor != NO_PREDECESSOR_INFO))
    if len(rows) == 0:
        return None
    n_tests = len(table.test_names)
    pred = table.predecessor[rows].astype(np.int64)
    cat = np.where(pred == FIRST, n_tests, pred)  # the reset is one more "predecessor"
    value = table.value[rows]
    res = one_vs_rest(value, value, comp[rows], cat, len(comp_test), n_tests + 1, min_values, ranked(rows))
    return res, comp_test[res.comp], comp_metric[res.comp]


def carryover_rows(part: Part, test_names: Sequence[str], metric_names: Sequence[str], alpha: float, correction: str) -> Sequence[Carryover]:
    res, tests, metrics = part
    n_tests = len(test_names)
    return Rows(
        Carryover,
        {
            "test": [test_names[t] for t in tests.tolist()],
            "metric": [metric_names[m] for m in metrics.tolist()],
            "after": [RESET if k == n_tests else test_names[k] for k in res.cat.tolist()],
            "n_after": res.n_at.tolist(),
            "n_other": res.n_other.tolist(),
            "median_after": nums(res.median_at),
            "median_other": nums(res.median_other),
            "effect_pct": nums(effect_pct(res.median_at, res.median_other)),
            **corrected(res.p, correction, alpha),
        },
    )
