"""Each test's median in each measurement context, with its confidence interval: the points the
report draws per context. They come from the test's own values at the lightest observer level
(the rows the context analysis examines), not aligned on the factor levels: the figure shows
what was measured, the context effect what is left of it once the factors are taken out.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from benchsage.analyze.treatments import ContextEffect
from benchsage.stats.median_ci import grouped_median_ci
from benchsage.store.table import TrialTable
from benchsage.vocabulary import CONTEXT


def with_context_medians(effects: Sequence[ContextEffect], table: TrialTable, level: float, method: str) -> tuple[ContextEffect, ...]:
    """`effects` with their median_ci filled in: per context, the median of the test's finite
    values in `table` (the rows the context analysis examined, treatments.order_rows) and its
    distribution-free interval at confidence `level` by `method` (stats.median_ci), all from one
    sort."""
    found = table.levels(CONTEXT)
    if not effects or found is None:
        return tuple(effects)
    names, codes = found
    width = max(1, len(table.metric_names))
    tests = {name: i for i, name in enumerate(table.test_names)}
    metrics = {name: i for i, name in enumerate(table.metric_names)}
    # (test, metric) -> its effect, over the effects' keys only (not every test times every metric)
    of_key = {tests[e.test] * width + metrics[e.metric]: g for g, e in enumerate(effects) if e.test in tests and e.metric in metrics}
    keys = np.array(sorted(of_key), dtype=np.int64)
    row_key = table.test.astype(np.int64) * width + table.metric
    group = np.full(len(row_key), -1, dtype=np.int64)
    if len(keys):
        at = np.minimum(np.searchsorted(keys, row_key), len(keys) - 1)
        hit = keys[at] == row_key
        group[hit] = np.array([of_key[k] for k in sorted(of_key)], dtype=np.int64)[at[hit]]
    rows = (group >= 0) & (codes >= 0) & np.isfinite(table.value)
    n_contexts = len(names)
    cells = group[rows] * n_contexts + codes[rows].astype(np.int64)  # (effect, context)
    ci = grouped_median_ci(table.value[rows], cells, len(effects) * n_contexts, level, method)
    out = []
    for g, effect in enumerate(effects):
        first = g * n_contexts
        medians = {names[c]: (float(ci.median[first + c]), _known(ci.low[first + c]), _known(ci.high[first + c]))
                   for c in range(n_contexts) if ci.n[first + c] > 0}
        out.append(dataclasses.replace(effect, median_ci=medians))
    return tuple(out)


def _known(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
