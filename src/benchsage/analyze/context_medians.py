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
    effect_of = np.full(len(table.test_names) * width, -1, dtype=np.int64)  # (test, metric) -> its effect
    for g, effect in enumerate(effects):
        if effect.test in tests and effect.metric in metrics:
            effect_of[tests[effect.test] * width + metrics[effect.metric]] = g
    group = effect_of[table.test.astype(np.int64) * width + table.metric]
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
