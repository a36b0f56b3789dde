"""Each test's time over both orders, as a timing tool reports it: the median with its
distribution-free interval, the range, the mean and standard deviation, the CPU times.

`benchsage time` prints these per command (hyperfine's block per benchmark) before the order
verdict, and its hyperfine-format exports write them; both arms are pooled here, because the
order analysis says separately whether they may be.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchsage.stats.median_ci import grouped_median_ci
from benchsage.store.table import FIXED_CODE, RANDOM_CODE, TrialTable

WALL, USER, SYSTEM = "wall_time", "user_time", "sys_time"


@dataclass(frozen=True)
class Timing:
    """One test's successful trials, both arms pooled: n values of `metric` (its unit); the
    median and its interval at `level`, the range, mean and sample standard deviation; each
    arm's median; the means of the trials' user and system CPU time (None where not recorded)."""

    test: str
    metric: str
    unit: str
    n: int
    median: float
    ci: tuple[float, float] | None
    minimum: float
    maximum: float
    mean: float
    stddev: float | None  # None with one value
    median_fixed: float | None
    median_random: float | None
    user: float | None
    system: float | None


def timings(table: TrialTable, metric: str = WALL, level: float = 0.95, method: str = "exact-binomial") -> tuple[Timing, ...]:
    """A Timing per test with values of `metric`, in the table's test order."""
    if metric not in table.metric_names:
        return ()
    names = table.metric_names
    code = names.index(metric)
    rows = table.metric == code
    tests = table.test[rows]
    values = np.asarray(table.value[rows], dtype=np.float64)
    arms = table.arm[rows]
    n_tests = len(table.test_names)
    ci = grouped_median_ci(values, tests, n_tests, level, method)
    by_arm = grouped_median_ci(values, tests * 2 + arms.astype(np.int64), 2 * n_tests, level, method)
    cpu = {name: _means(table, name, n_tests) for name in (USER, SYSTEM)}
    unit = table.metric_info(metric).unit
    out = []
    for t in range(n_tests):
        own = values[tests == t]
        if not len(own):
            continue
        low, high = float(ci.low[t]), float(ci.high[t])
        out.append(Timing(
            test=table.test_names[t], metric=metric, unit=unit, n=len(own), median=float(ci.median[t]),
            ci=(low, high) if np.isfinite(low) and np.isfinite(high) else None,
            minimum=float(own.min()), maximum=float(own.max()), mean=float(own.mean()),
            stddev=float(own.std(ddof=1)) if len(own) > 1 else None,
            median_fixed=_finite(by_arm.median[2 * t + FIXED_CODE]), median_random=_finite(by_arm.median[2 * t + RANDOM_CODE]),
            user=cpu[USER][t], system=cpu[SYSTEM][t],
        ))
    return tuple(out)


def _means(table: TrialTable, metric: str, n_tests: int) -> list[float | None]:
    if metric not in table.metric_names:
        return [None] * n_tests
    rows = table.metric == table.metric_names.index(metric)
    sums = np.bincount(table.test[rows], weights=table.value[rows], minlength=n_tests)
    counts = np.bincount(table.test[rows], minlength=n_tests)
    return [float(s / c) if c else None for s, c in zip(sums, counts)]


def _finite(x: float) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def fastest(rows: tuple[Timing, ...], higher_is_better: bool = False) -> Timing | None:
    """The test with the best median (the lowest time)."""
    if not rows:
        return None
    return max(rows, key=lambda r: r.median) if higher_is_better else min(rows, key=lambda r: r.median)
