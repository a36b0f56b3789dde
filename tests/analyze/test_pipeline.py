"""analyze_loaded: sharing one sort of the values between the order analysis and the
diagnostics gives exactly what each computes on its own."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.analyze.diagnostics import diagnose
from benchsage.analyze.order import analyze_table
from benchsage.analyze.pipeline import Options, analyze_loaded
from benchsage.analyze.sorted_values import sort_values
from benchsage.store.table import TrialTable


def _table(seed: int, n_tests: int, runs: int, decimals: int, metrics: int) -> TrialTable:
    rng = np.random.default_rng(seed)
    rows: dict[str, list] = {k: [] for k in ("test", "arm", "value", "metric", "run", "position", "time")}
    for r in range(2 * runs):
        arm = ("fixed", "random")[r % 2]
        tests = np.arange(n_tests) if arm == "fixed" else rng.permutation(n_tests)
        for p, t in enumerate(tests.tolist()):
            for m in range(metrics):
                rows["test"].append(f"t{t}")
                rows["arm"].append(arm)
                # Coarse values give ties; a first-in-run slowdown gives something to find.
                rows["value"].append(round(float(rng.lognormal(t % 3)) * (1.2 if p == 0 else 1.0), decimals))
                rows["metric"].append(f"m{m}")
                rows["run"].append(r)
                rows["position"].append(p)
                rows["time"].append(1000.0 * r + p)
    return TrialTable.from_columns(**rows)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_tests=st.integers(2, 6), runs=st.integers(3, 20), decimals=st.integers(0, 3), metrics=st.integers(1, 2))
def test_shared_sort_changes_nothing(seed: int, n_tests: int, runs: int, decimals: int, metrics: int) -> None:
    table = _table(seed, n_tests, runs, decimals, metrics)
    shared = analyze_loaded(table, Options())
    alone = analyze_table(table)
    diagnostics = diagnose(table)
    assert json.dumps(shared.to_json()["tests"]) == json.dumps(alone.to_json()["tests"])
    assert shared.diagnostics == diagnostics
    # And the shared order handed to each part directly.
    order = sort_values(table)
    assert json.dumps(analyze_table(table, sorted_values=order).to_json()) == json.dumps(alone.to_json())
    assert diagnose(table, sorted_values=order) == diagnostics


def test_a_selection_of_the_table_does_not_use_another_tables_order() -> None:
    table = _table(1, 4, 6, 2, 1)
    order = sort_values(table)
    half = table.select(np.arange(len(table)) % 2 == 0)
    assert not order.fits(half)
    assert json.dumps(analyze_table(half, sorted_values=order).to_json()) == json.dumps(analyze_table(half).to_json())


def test_retain_freed_memory_takes_effect_under_glibc() -> None:
    # In a child process: the setting lasts for the life of the process.
    import platform
    import subprocess
    import sys

    code = "import sys; from benchsage._runtime import retain_freed_memory; sys.exit(0 if retain_freed_memory() else 1)"
    returncode = subprocess.run([sys.executable, "-c", code]).returncode
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        assert returncode == 0
    else:
        assert returncode == 1


def test_side_by_side_gives_what_one_after_the_other_gives(monkeypatch) -> None:
    from benchsage.analyze import pipeline

    table = _table(7, 5, 12, 1, 2)
    monkeypatch.setattr(pipeline, "PARALLEL_ROWS", 10**9)
    serial = analyze_loaded(table, Options())
    monkeypatch.setattr(pipeline, "PARALLEL_ROWS", 0)
    parallel = analyze_loaded(table, Options())
    assert parallel.to_json_text() == serial.to_json_text()
    assert parallel.diagnostics is not None and len(parallel.diagnostics.position_effects) > 0


def test_side_by_side_raises_what_either_side_raised() -> None:
    import pytest

    from benchsage.analyze.pipeline import _side_by_side

    def boom() -> int:
        raise KeyError("in the thread")

    with pytest.raises(KeyError, match="in the thread"):
        _side_by_side(lambda: 1, boom)
    with pytest.raises(ValueError, match="here"):
        _side_by_side(lambda: int("here"), lambda: 2)
    assert _side_by_side(lambda: 1, lambda: 2) == (1, 2)
