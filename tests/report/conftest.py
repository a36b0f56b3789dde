"""Synthetic experiments for the report tests: a seeded trial table with real order effects
(a warm-up that slows the first tests of a run, a predecessor that speeds its successor), and
the Analysis of it.

`synthetic_table` is also the generator of the report's scale check (700 k trials, 1,880 tests).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

from benchsage.analyze.verdict import (
    Analysis,
    Carryover,
    Diagnostics,
    Interleaving,
    PositionEffect,
    TestVerdict,
    Trend,
)
from benchsage.store.table import MetricInfo, TrialTable

sys.path.insert(0, str(Path(__file__).parent))  # browser.py, the chromium driver

XSS_TEST = "<img src=x onerror=\"document.title='pwned'\">"
SCRIPT_TEST = "<script>document.title='pwned'</script>"
SCRIPT_METRIC = "ops</title><script>document.title='pwned'</script>"


def synthetic_table(
    n_tests: int = 12,
    runs_per_arm: int = 15,
    *,
    seed: int = 0,
    affected_share: float = 0.25,
    names: Sequence[str] | None = None,
    metric: str = "wall_time",
    unit: str = "s",
    better: str = "lower",
    provenance: dict[str, Any] | None = None,
) -> TrialTable:
    """A whole experiment as the harness would record it: 2 x runs_per_arm runs interleaved
    in pairs (Algorithm 1), the fixed arm in the given order, each random run a fresh
    permutation, one value per trial, start times accumulated from the values.

    A share of the tests carries order effects: 8% slower in the first tenth of a run (cold
    cache) and 5% faster right after the test listed before them (warm cache).
    """
    rng = np.random.default_rng(seed)
    names = list(names) if names is not None else [f"./bench_{i:04d}.sh --size {i % 7}" for i in range(n_tests)]
    n = len(names)
    n_runs = 2 * runs_per_arm
    random_first = rng.random(runs_per_arm) < 0.5
    run_arm = np.empty(n_runs, dtype=np.int8)
    run_arm[0::2], run_arm[1::2] = random_first, ~random_first
    orders = np.argsort(rng.random((n_runs, n)), axis=1)
    orders[run_arm == 0] = np.arange(n)

    test = orders.ravel().astype(np.int32)
    run = np.repeat(np.arange(n_runs, dtype=np.int64), n)
    position = np.tile(np.arange(n, dtype=np.int32), n_runs)
    arm = np.repeat(run_arm, n)
    predecessor = np.full(len(test), -1, dtype=np.int32)
    later = position > 0
    predecessor[later] = test[np.flatnonzero(later) - 1]

    base = rng.uniform(0.05, 2.0, n)
    value = base[test] * (1 + 0.02 * rng.standard_normal(len(test)))
    affected = rng.random(n) < affected_share
    early = position < max(1, n // 10)
    value *= np.where(affected[test] & early, 1.08, 1.0)
    warmed_by = (test - 1) % n
    value *= np.where(affected[test] & (predecessor == warmed_by), 0.95, 1.0)
    # A reset of 2 s before each run; trials start when the previous one ended.
    ends = np.cumsum(value + np.repeat(np.r_[2.0, np.zeros(n - 1)][None, :], n_runs, axis=0).ravel())
    time = 1.7e9 + ends - value

    return TrialTable(
        test_names=tuple(names),
        metric_names=(metric,),
        worker_names=("local",),
        test=test,
        metric=np.zeros(len(test), dtype=np.int32),
        arm=arm,
        value=value,
        run=run,
        position=position,
        predecessor=predecessor,
        worker=np.zeros(len(test), dtype=np.int32),
        time=time,
        primary=np.ones(len(test), dtype=bool),
        metrics_info={metric: MetricInfo(metric, unit, better)},
        sources=("synthetic",),
        provenance=provenance or {},
    )


# -- the Analysis of a table, built here until analyze.order.analyze_table is available ---------


def _median_ci(x: np.ndarray, level: float = 0.95) -> tuple[float, tuple[float, float] | None]:
    """Median and its exact binomial order-statistic interval [x(l), x(n-l+1)]."""
    from scipy.stats import binom

    x = np.sort(x)
    n = len(x)
    median = float(np.median(x))
    ls = np.arange(1, n // 2 + 1)
    cover = binom.cdf(n - ls, n, 0.5) - binom.cdf(ls - 1, n, 0.5)
    ok = ls[cover >= level]
    if len(ok) == 0:
        return median, None
    lo = int(ok.max())
    return median, (float(x[lo - 1]), float(x[n - lo]))


def _case(mf: float, cf: tuple[float, float] | None, mr: float, cr: tuple[float, float] | None) -> int | None:
    if cf is None or cr is None:
        return None
    if cf[1] < cr[0] or cr[1] < cf[0]:
        return 1
    if cr[0] <= mf <= cr[1] or cf[0] <= mr <= cf[1]:
        return 2
    return 3


def hand_analysis(table: TrialTable, alpha: float = 0.05, diagnostics: Diagnostics | None = None) -> Analysis:
    """Fixed vs random per (test, metric) with scipy, Bonferroni over all pairs."""
    from scipy.stats import kruskal

    key = table.test.astype(np.int64) * len(table.metric_names) + table.metric
    order = np.lexsort((table.arm, key))
    k = key[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    raw = []
    for lo, hi in zip(starts, np.r_[starts[1:], len(k)]):
        rows = order[lo:hi]
        t, m = int(table.test[rows[0]]), int(table.metric[rows[0]])
        f = table.value[rows][table.arm[rows] == 0]
        r = table.value[rows][table.arm[rows] == 1]
        h, p = kruskal(f, r)
        n = len(f) + len(r)
        mf, cf = _median_ci(f)
        mr, cr = _median_ci(r)
        info = table.metric_info(table.metric_names[m])
        raw.append(dict(
            test=table.test_names[t], metric=table.metric_names[m], primary=True,
            n_fixed=len(f), n_random=len(r), kw_h=float(h), kw_p=float(p),
            eta2=float((h - 1) / (n - 2)), delta_pct=float((f.mean() - r.mean()) / f.mean() * 100),
            cv_fixed=float(f.std(ddof=1) / f.mean()), cv_random=float(r.std(ddof=1) / r.mean()),
            mean_fixed=float(f.mean()), mean_random=float(r.mean()),
            median_fixed=mf, ci_fixed=cf, median_random=mr, ci_random=cr, ci_case=_case(mf, cf, mr, cr),
            unit=info.unit, better=info.better,
        ))
    m = len(raw)
    verdicts = tuple(
        TestVerdict(p_adjusted=min(1.0, d["kw_p"] * m), significant=d["kw_p"] * m < alpha, **d) for d in raw
    )
    return Analysis(
        tool_version="0.1.0",
        alpha=alpha,
        correction="bonferroni",
        alpha_corrected=alpha / m,
        ci_method="exact-binomial",
        ci_level=0.95,
        ci_case_rule="paper-prose",
        order_matters=any(v.significant for v in verdicts),
        tests=verdicts,
        warnings=tuple(table.warnings),
        diagnostics=diagnostics,
        sources=table.sources,
        excluded=table.excluded,
    )


def hand_diagnostics(table: TrialTable, names: Sequence[str]) -> Diagnostics:
    """A few diagnostics rows about `names`, enough to exercise every diagnostics table."""
    return Diagnostics(
        interleaving=Interleaving(True, "fixed and random runs alternate in pairs", 15, 15),
        position_effects=tuple(
            PositionEffect(n, "wall_time", 0, 3, 12, 1.08, 1.0, 8.0, 0.001, 0.01, True) for n in names
        ),
        carryover=tuple(
            Carryover(n, "wall_time", names[0], 4, 11, 0.95, 1.0, -5.0, 0.2, 1.0, False) for n in names
        ),
        trends=tuple(Trend(n, "wall_time", "fixed", 15, 0.1, 0.7, 1.0, False) for n in names),
        workers={"local": {"binary sha256": "<b>not bold</b>"}},
    )


@pytest.fixture(scope="session")
def small_table() -> TrialTable:
    return synthetic_table(12, 15, seed=3)


@pytest.fixture(scope="session")
def small_analysis(small_table: TrialTable) -> Analysis:
    return hand_analysis(small_table)
