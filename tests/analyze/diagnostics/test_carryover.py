"""Carry-over: a planted predecessor effect is found."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.diagnostics import diagnose

sys.path.insert(0, str(Path(__file__).parent))
from experiment_data import experiment  # noqa: E402


def test_carry_over_of_one_predecessor_is_found() -> None:
    def warm_cache(test: str, pos: int, before: str | None, arm: str, run: int, rng: np.random.Generator) -> float:
        return float(rng.normal(100.0, 1.0)) * (1.2 if (test == "c" and before == "a") else 1.0)

    d = diagnose(experiment(["a", "b", "c", "d"], 80, warm_cache))
    assert d is not None
    significant = [(c.test, c.after) for c in d.carryover if c.significant]
    assert ("c", "a") in significant
    hit = [c for c in d.carryover if (c.test, c.after) == ("c", "a")][0]
    assert hit.effect_pct == pytest.approx(20.0, abs=2.0)
    assert hit.median_after == pytest.approx(120.0, abs=1.5)
    assert all(t == "c" for t, _ in significant)
