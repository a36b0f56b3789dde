"""Each test's wall times summarised as hyperfine summarises a command's runs: every successful
trial's value in the order the trials started (both arms pooled), their mean, sample standard
deviation, median with its distribution-free interval, minimum and maximum, each arm's median,
and the means of user and system CPU time.

Descriptive numbers for `benchsage time`'s answer and hyperfine's formats, no test: whether the
arms may be pooled is the order analysis's question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from benchsage.stats.median_ci import grouped_median_ci
from benchsage.store.table import FIXED_CODE, RANDOM_CODE, TrialTable
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
    ci: tuple[float, float] | None = None  # the median's interval (at per_test_timings' level); None with too few values
    median_fixed: float | None = None
    median_random: float | None = None

    @property
    def n(self) -> int:
        return len(self.times)


def per_test_timings(table: TrialTable, level: float = 0.95, method: str = "exact-binomial") -> tuple[Timings, ...]:
    """A Timings per test of the table, in the table's test order (the spec's declared order,
    an expanded sweep's levels in place of its test); the medians' intervals at `level` by
    `method` (stats/median_ci.py)."""
    commands: Mapping[str, Any] = table.provenance.get("commands") or {}
    parameters = _parameters(table)
    times = _values_in_time_order(table, WALL)
    user = _means(table, USER)
    system = _means(table, SYSTEM)
    ci, arms = _medians(table, level, method)
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
            ci=ci[i],
            median_fixed=arms[i][FIXED_CODE],
            median_random=arms[i][RANDOM_CODE],
        ))
    return tuple(out)


def _medians(table: TrialTable, level: float, method: str) -> tuple[list[tuple[float, float] | None], list[tuple[float | None, float | None]]]:
    """Each test's median interval (both arms) and each arm's median, from two grouped sorts."""
    rows = _rows(table, WALL)
    n = len(table.test_names)
    tests = table.test[rows].astype(np.int64)
    both = grouped_median_ci(table.value[rows], tests, n, level, method)
    by_arm = grouped_median_ci(table.value[rows], tests * 2 + table.arm[rows].astype(np.int64), 2 * n, level, method)
    intervals = [(float(lo), float(hi)) if np.isfinite(lo) and np.isfinite(hi) else None for lo, hi in zip(both.low, both.high)]
    arms = [tuple(float(m) if np.isfinite(m) else None for m in by_arm.median[2 * i: 2 * i + 2]) for i in range(n)]
    return intervals, arms  # type: ignore[return-value]


def fastest(rows: tuple[Timings, ...]) -> Timings | None:
    """The test with the lowest median time (None when no test has one)."""
    timed = [r for r in rows if r.median is not None]
    return min(timed, key=lambda r: r.median) if timed else None  # type: ignore[arg-type, return-value]


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
