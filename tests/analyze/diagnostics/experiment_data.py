"""Experiments with planted effects for the tests of the diagnostics: every run from a reset, the
fixed order as the tests are given, the random arm shuffled."""

from __future__ import annotations

from typing import Callable

import numpy as np

from benchsage.store.table import TrialTable

Value = Callable[[str, int, "str | None", str, int, np.random.Generator], float]


def experiment(
    tests: list[str],
    runs: int,
    value: Value,
    *,
    seed: int = 1,
    interleave: bool = True,
    workers: int = 1,
    primary: bool = True,
) -> TrialTable:
    """runs per arm; every run from a reset; fixed order = tests as given, random = shuffled."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "worker", "time")}
    arms = ["fixed", "random"] * runs if interleave else ["fixed"] * runs + ["random"] * runs
    for run, arm in enumerate(arms):
        order = list(tests) if arm == "fixed" else list(rng.permutation(tests))
        for pos, test in enumerate(order):
            before = order[pos - 1] if pos else None
            cols["test"].append(test)
            cols["arm"].append(arm)
            cols["value"].append(value(test, pos, before, arm, run, rng))
            cols["run"].append(run)
            cols["position"].append(pos)
            cols["worker"].append(f"w{run % workers}")
            cols["time"].append(1000.0 * run + pos)
    n = len(cols["value"])
    return TrialTable.from_columns(**cols, primary=np.full(n, primary))


def noise(test: str, pos: int, before: str | None, arm: str, run: int, rng: np.random.Generator) -> float:
    return float(rng.normal(100.0, 1.0))
