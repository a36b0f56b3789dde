"""Each test's wall times summarised as hyperfine summarises a command's runs: every successful
trial's value in the order the trials started (both arms pooled), their mean, sample standard
deviation, median, minimum and maximum, and the means of user and system CPU time.

Descriptive numbers for readers of hyperfine's formats, no test: whether the arms may be pooled
is the order analysis's question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from benchsage.store.table import TrialTable
from benchsage.vocabulary import SWEEP_PREFIX

WALL, USER, SYSTEM = "wall_time", "user_time", "sys_time"


@dataclass(frozen=True)
class Timings:
    """One test's wall times, in `unit` (the table's unit of wall_time; user and system in
    `cpu_unit`, that of user_time).

    command: what the test ran (the provenance's "commands"), else its name; parameters: the
    sweep levels of an expanded test, name -> level as written ({} for a test that sweeps
    nothing); times: every successful trial's value, in the order the trials started (table
    order where start times are not known); stddev: the sample standard deviation (n - 1),
    None below two values, as hyperfine's; a test without a successful trial has no times and
    every statistic None."""

    test: str
    command: str
    parameters: Mapping[str, str]
    times: tuple[float, ...]
    mean: float | None
    stddev: float | None
    median: float | None
    min: float | None
    max: float | None
    user: float | None
    system: float | None
    unit: str
    cpu_unit: str


def per_test_timings(table: TrialTable) -> tuple[Timings, ...]:
    """A Timings per test of the table, in the table's test order (the spec's declared order,
    an expanded sweep's levels in place of its test)."""
    commands: Mapping[str, Any] = table.provenance.get("commands") or {}
    parameters = _parameters(table)
    times = _values_in_time_order(table, WALL)
    user = _means(table, USER)
    system = _means(table, SYSTEM)
    out = []
    for i, name in enumerate(table.test_names):
        # A loop over tests: each one's values are written out one by one anyway (hyperfine's "times").
        t = times[i]
        out.append(Timings(
            test=name,
            command=str(commands.get(name) or name),
            parameters=parameters[i],
            times=tuple(float(x) for x in t),
            mean=float(np.mean(t)) if len(t) else None,
            stddev=float(np.std(t, ddof=1)) if len(t) > 1 else None,
            median=float(np.median(t)) if len(t) else None,
            min=float(np.min(t)) if len(t) else None,
            max=float(np.max(t)) if len(t) else None,
            user=user[i],
            system=system[i],
            unit=table.metric_info(WALL).unit,
            cpu_unit=table.metric_info(USER).unit,
        ))
    return tuple(out)


def _rows(table: TrialTable, metric: str) -> np.ndarray:
    """The rows of `metric` with a finite value."""
    if metric not in table.metric_names:
        return np.zeros(0, dtype=np.int64)
    code = table.metric_names.index(metric)
    return np.flatnonzero((table.metric == code) & np.isfinite(table.value))


def _values_in_time_order(table: TrialTable, metric: str) -> list[np.ndarray]:
    """Each test's values of `metric`, ordered by the trials' start (stable: table order on ties
    and where the start is not known)."""
    rows = _rows(table, metric)
    start = np.nan_to_num(table.time[rows], nan=np.inf) if table.has_times else np.zeros(len(rows))
    order = rows[np.lexsort((start, table.test[rows]))]
    bounds = np.searchsorted(table.test[order], np.arange(len(table.test_names) + 1))
    return [table.value[order[bounds[i]:bounds[i + 1]]] for i in range(len(table.test_names))]


def _means(table: TrialTable, metric: str) -> list[float | None]:
    rows = _rows(table, metric)
    n = len(table.test_names)
    counts = np.bincount(table.test[rows], minlength=n)
    sums = np.bincount(table.test[rows], weights=table.value[rows], minlength=n)
    return [float(sums[i] / counts[i]) if counts[i] else None for i in range(n)]


def _parameters(table: TrialTable) -> list[dict[str, str]]:
    """Each test's sweep levels: as the experiment recorded them ("test_sweeps"), else from the
    table's sweep:NAME dimensions (a tidy file's columns), names sorted as hyperfine sorts them."""
    recorded: Mapping[str, Mapping[str, Any]] = table.provenance.get("test_sweeps") or {}
    out: list[dict[str, str]] = [{str(k): str(v) for k, v in (recorded.get(name) or {}).items()} for name in table.test_names]
    for d, dim in enumerate(table.dims):
        if not dim.startswith(SWEEP_PREFIX):
            continue
        codes = table.treatment[:, d]
        known = np.flatnonzero(codes >= 0)
        tests, first = np.unique(table.test[known], return_index=True)
        for t, row in zip(tests.tolist(), known[first].tolist()):
            out[t].setdefault(dim[len(SWEEP_PREFIX):], table.dim_levels[d][codes[row]])
    return [dict(sorted(p.items())) for p in out]
