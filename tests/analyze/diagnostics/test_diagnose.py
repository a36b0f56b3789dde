"""Diagnosing a table: nothing without runs, positions or times; clean data stays quiet; only primary,
finite values are examined; equal values are not testable; many tests stay small."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from benchsage.analyze.diagnostics import RESET, diagnose
from benchsage.store.table import TrialTable

sys.path.insert(0, str(Path(__file__).parent))
from experiment_data import experiment, noise  # noqa: E402


def test_nothing_to_diagnose_without_runs_positions_or_times() -> None:
    t = TrialTable.from_columns(test=["a"] * 10, arm=["fixed", "random"] * 5, value=np.arange(10.0))
    assert diagnose(t) is None


def test_clean_data_has_no_significant_diagnostics() -> None:
    d = diagnose(experiment(["a", "b", "c"], 40, noise))
    assert d is not None
    assert d.interleaving is not None and d.interleaving.interleaved is True
    assert {p.position for p in d.position_effects} == {0, 1, 2}
    assert all(p.position_last is None for p in d.position_effects)
    assert not any(p.significant for p in d.position_effects)
    assert not any(c.significant for c in d.carryover)
    assert not any(t.significant for t in d.trends)
    assert {c.after for c in d.carryover if c.test == "a"} == {"b", "c", RESET}


def test_only_primary_finite_values_are_examined() -> None:
    t = experiment(["a", "b"], 20, noise, primary=False)
    d = diagnose(t)
    assert d is not None and d.position_effects == () and d.carryover == () and d.trends == ()
    assert d.interleaving is not None  # the design is still judged
    v = experiment(["a", "b"], 20, noise)
    bad = v.value.copy()
    bad[::7] = np.nan
    t = TrialTable.from_columns(test=np.array(v.test_names)[v.test], arm=v.arm, value=bad, run=v.run, position=v.position, time=v.time)
    d = diagnose(t)
    assert d is not None and sum(p.n_at for p in d.position_effects if p.test == "a") == np.isfinite(bad[(v.arm == 1) & (v.test == 0)]).sum()


def test_all_equal_values_are_not_testable() -> None:
    d = diagnose(experiment(["a", "b"], 20, lambda *args: 5.0))
    assert d is not None
    assert d.position_effects and all(p.p is None and p.significant is None for p in d.position_effects)
    assert all(p.effect_pct == 0.0 for p in d.position_effects)


def test_diagnostics_of_many_tests_stay_small() -> None:
    # 40,000 tests with their predecessors: the carry-over counters must not be dense
    # (40,001 x 40,001 of them would take 12 GiB).
    import tracemalloc

    rng = np.random.default_rng(5)
    n_tests, runs = 40_000, 2
    test = np.concatenate([rng.permutation(n_tests) for _ in range(2 * runs)])
    arm = np.repeat([0, 1] * runs, n_tests)
    run = np.repeat(np.arange(2 * runs), n_tests)
    position = np.tile(np.arange(n_tests), 2 * runs)
    table = TrialTable.from_columns(
        test=[f"t{i}" for i in test], arm=np.where(arm == 0, "fixed", "random"), value=rng.lognormal(size=len(test)),
        run=run, position=position, time=run * 1000.0 + position,
    )
    tracemalloc.start()
    diag = diagnose(table)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert diag is not None
    assert peak < 500 * 2**20
