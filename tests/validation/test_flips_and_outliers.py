"""The flip and fleet-outlier validations (validation/flips.py, validation/fleet_outliers.py) at
reduced size: their experiments have the promised shape, the analysis agrees with the
simulation, and a row of each comes out as docs/validation.md reports it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"benchsage_validation_{name}", ROOT / "validation" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


flips = _load("flips")
outliers = _load("fleet_outliers")


def test_a_flip_experiment_has_its_values_per_context_and_the_analysis_agrees() -> None:
    rng = np.random.default_rng(0)
    a, b = flips.experiment(rng, contexts=8, runs=16, small=0.5, large=1.5)
    assert a.shape == b.shape == (8, 4)
    assert np.median(a[:4]) < np.median(b[:4]) and np.median(a[4:]) > np.median(b[4:])
    result = flips.answered(a, b)
    assert result == (True, False, "env_bytes")
    flips.check(a, b, result)  # exits when the analysis of the table disagrees
    table = flips.as_table(a, b)
    assert len(table) == 2 * 32 and set(table.dims) == {"context", "context:env_bytes", "context:link_order"}


def test_the_issues_flip_row_and_a_false_flip_row() -> None:
    rng = np.random.default_rng(1)
    power = flips.run_row("issue", 0.5, 1.5, 8, 16, 20, rng)
    assert power.flips.hits == 20 and power.along_env.hits == 20 and power.contexts_only.hits == 0
    null = flips.run_row("a = b", 1.0, 1.0, 8, 16, 40, rng)
    assert null.flips.hits <= 3


def test_the_odd_worker_rows() -> None:
    rng = np.random.default_rng(2)
    table = outliers.fleet(rng, 3, 10, 0.1, 1.5)
    assert len(table) == 3 * 10 * outliers.TESTS and table.worker_names == ("w1", "w2", "w3")
    row = outliers.run_row(3, 10, 0.1, 1.5, 5, rng)
    assert row.named.rate == 1.0 and row.named_holm.rate == 1.0 and row.wrong.hits == 0
    agreeing = outliers.run_row(3, 10, 0.2, 1.0, 20, rng)
    assert agreeing.named.hits <= 3 and agreeing.named.n == 20
