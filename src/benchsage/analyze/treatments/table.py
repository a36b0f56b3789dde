"""Reading the treatment dimensions of a TrialTable ("context", "context:env_bytes", ...,
"observer", "factor:NAME"), and the numbers the treatment analyses' rows hold.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np

from benchsage.store.table import TrialTable
from benchsage.vocabulary import CONTEXT, OBSERVER

CONTEXT_PREFIX = CONTEXT + ":"
# Context dimensions whose levels are magnitudes (bytes): tested for a monotone trend. The others
# (a CPU list, ASLR on/off, a link order) are categories.
NUMERIC_DIMENSIONS = ("env_bytes", "cwd_bytes")


@lru_cache(maxsize=8)
def numeric_levels(levels: Sequence[str]) -> bool:
    """Whether every level of a dimension reads as a number (and there is one)."""
    try:
        [float(v) for v in levels]
    except ValueError:
        return False
    return bool(levels)


def num(x: Any) -> float | None:
    """x as a JSON number: None when missing or not finite."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def provenance(table: TrialTable, key: str) -> Any:
    """A provenance entry of the table, or of the first of its combined parts that has it."""
    if key in table.provenance:
        return table.provenance[key]
    for part in table.provenance.get("parts") or ():
        if isinstance(part, Mapping) and key in part:
            return part[key]
    return None


def observer_baseline(table: TrialTable) -> str | None:
    """The lightest observer level: the one the experiment names (its level without a wrapper,
    else its first), else a level called "none", else the first in the data; None without
    observer levels."""
    found = table.levels(OBSERVER)
    if found is None or not found[0]:
        return None
    names = found[0]
    named = provenance(table, "observer_baseline")
    if named in names:
        return str(named)
    return "none" if "none" in names else names[0]


def order_rows(table: TrialTable) -> TrialTable:
    """The rows the order analysis examines.

    Values measured under an instrumentation wrapper (strace, perf) are not the test's own: a
    user who asks whether the order of tests matters asks it of the measurement as it is normally
    taken. Pooling the levels would also blur one distribution into another and could turn the
    wrapper's own after-effects into an "order effect". So with observer levels the order
    analysis keeps the baseline level (and rows whose level is not known); the other levels are
    answered by the observer analysis. Contexts and factor levels stay: the design balances
    them over the arms, conclusions that hold over contexts are the point of variant
    generation, and the order analysis ranks within each of their cells (analyze/cells.py).
    """
    baseline = observer_baseline(table)
    if baseline is None:
        return table
    names, codes = table.levels(OBSERVER)  # type: ignore[misc]
    return table.select((codes == names.index(baseline)) | (codes < 0))


def comparisons_of(table: TrialTable, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of the (test, metric) comparisons among the masked rows: (row indices, each row's
    group, the group's test * n_metrics + metric key); groups in test-major order."""
    rows = np.flatnonzero(mask)
    n_metrics = max(len(table.metric_names), 1)
    key = table.test[rows].astype(np.int64) * n_metrics + table.metric[rows]
    keys, group = np.unique(key, return_inverse=True)
    return rows, group.ravel(), keys


def names_of(table: TrialTable, key: int) -> tuple[str, str]:
    n_metrics = max(len(table.metric_names), 1)
    return table.test_names[key // n_metrics], table.metric_names[key % n_metrics]


def split_rows(group: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """The row positions of each group, in row order."""
    order = np.argsort(group, kind="stable")
    bounds = np.cumsum(np.bincount(group, minlength=n_groups))[:-1]
    return np.split(order, bounds)
