"""Synthetic experiments for the report tests: a seeded trial table with real order effects
(a warm-up that slows the first tests of a run, a predecessor that speeds its successor), and
the Analysis of it.

`synthetic_table` is also the generator of the report's scale check (700 k trials, 1,880 tests).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pytest

from benchsage.analyze.diagnostics.notes import InterleavingDetail, RunsTest
from benchsage.analyze.order import analyze_table
from benchsage.analyze.pipeline import Options, analyze_loaded
from benchsage.analyze.verdict import Analysis, Carryover, Diagnostics, Interleaving, PositionEffect, Trend
from benchsage.store.table import MetricInfo, TrialTable

sys.path.insert(0, str(Path(__file__).parent))  # browser.py, the chromium driver
sys.path.insert(0, str(Path(__file__).parent / "html"))  # reports.py, what the HTML tests share


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


def analysis_of(table: TrialTable, diagnostics: Diagnostics | None = None, **options: Any) -> Analysis:
    """benchsage's own analysis of `table` (as `benchsage analyze` does it, diagnostics
    included), or with the given hand-made `diagnostics` instead of the computed ones."""
    if diagnostics is None:
        return analyze_loaded(table, Options(**options))
    return dataclasses.replace(analyze_table(table, **options), diagnostics=diagnostics)


def hand_diagnostics(names: Sequence[str], metric: str = "wall_time") -> Diagnostics:
    """A few diagnostics rows about `names`, enough to exercise every diagnostics table."""
    return Diagnostics(
        interleaving=Interleaving(True, InterleavingDetail((RunsTest(True, 15, 15, 16, 16.0, 0.5),)), 15, 15),
        position_effects=tuple(
            PositionEffect(n, metric, 0, 3, 12, 1.08, 1.0, 8.0, 0.001, 0.01, True) for n in names
        ),
        carryover=tuple(
            Carryover(n, metric, names[0], 4, 11, 0.95, 1.0, -5.0, 0.2, 1.0, False) for n in names
        ),
        trends=tuple(Trend(n, metric, "fixed", 15, 0.1, 0.7, 1.0, False) for n in names),
        workers={"local": {"binary sha256": "<b>not bold</b>"}},
    )


# The helpers reach the tests as fixtures: several test folders have a conftest.py, so
# `from conftest import ...` could find another folder's.


@pytest.fixture(scope="session")
def make_table() -> Callable[..., TrialTable]:
    return synthetic_table


@pytest.fixture(scope="session")
def analyze() -> Callable[..., Analysis]:
    return analysis_of


@pytest.fixture(scope="session")
def make_diagnostics() -> Callable[..., Diagnostics]:
    return hand_diagnostics


@pytest.fixture(scope="session")
def small_table() -> TrialTable:
    return synthetic_table(12, 15, seed=3)


@pytest.fixture(scope="session")
def small_analysis(small_table: TrialTable) -> Analysis:
    return analysis_of(small_table)
