"""The Monte-Carlo validation of sequential stopping (validation/sequential.py) at reduced size,
for decide = "verdict": on the same experiments as "each" it never makes a false effect decision
that "each" does not and never stops later, its family-wise error stays at most alpha, and on
the carry-over experiment of the docs it stops at the look that finds the victim."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "validation" / "sequential.py"


def _load():
    spec = importlib.util.spec_from_file_location("benchsage_validation_sequential", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sim = _load()


def _bound(reps: int) -> float:
    return 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)


def test_verdict_keeps_the_family_wise_error_and_never_stops_later() -> None:
    reps = 400
    for effects in ([0.0] * 5, [5.0, 5.0, 0.0, 0.0, 0.0]):
        r = sim.compare_rules("normal", np.array(effects), np.full(5, 0.02), 20, 4, reps, np.random.default_rng(21))
        for c in ("bonferroni", "holm"):
            assert r["paired"][c] == {"false_effect_only_verdict": 0, "verdict_later": 0}
            each, verdict = r[f"{c}|each"], r[f"{c}|verdict"]
            assert verdict["fwer"] <= each["fwer"] and verdict["fwer"] <= _bound(reps)
            assert verdict["mean_runs"] <= each["mean_runs"]
        if any(effects):
            # Found as often as by "each" (the first effect found settles the verdict), with fewer runs.
            assert r["bonferroni|verdict"]["power"] == r["bonferroni|each"]["power"] > 0.9
            assert r["bonferroni|verdict"]["mean_runs"] < r["bonferroni|each"]["mean_runs"]


def test_the_carryover_experiment_stops_at_the_look_that_found_the_victim() -> None:
    """The victim slowed 20 % in the fixed order, a test with 10 % noise and a quiet one; 40 runs
    per arm at most, 4 looks, min_effect 5 %: "each" waits for the noisy test to the end;
    "verdict" stops at 20 runs per arm, where the victim is found."""
    reps = 300
    r = sim.compare_rules("normal", np.array([20.0, 0.0, 0.0]), np.array([0.02, 0.10, 0.02]), 40, 4, reps,
                          np.random.default_rng(22), min_effect=5.0)
    each, verdict = r["bonferroni|each"], r["bonferroni|verdict"]
    assert verdict["power"] == each["power"] == 1.0
    assert verdict["mean_runs"] == 20.0 and each["mean_runs"] > 39.0
    assert verdict["undecided_share"] > 0.3  # the noisy test at least, reported undecided
    assert verdict["fwer"] <= _bound(reps)


def test_decide_agrees_with_the_vectorised_simulation_under_verdict() -> None:
    rng = np.random.default_rng(23)
    assert sim.check_api("normal", 4, 20, 3, 40, rng, 3.0, "verdict") == 0
