"""Trends: drift over the runs is a trend, not a position effect."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from benchsage.analyze.diagnostics import diagnose

sys.path.insert(0, str(Path(__file__).parent))
from experiment_data import experiment  # noqa: E402


def test_drift_is_a_trend_not_a_position_effect() -> None:
    def drift(test: str, pos: int, before: str | None, arm: str, run: int, rng: np.random.Generator) -> float:
        return float(rng.normal(100.0, 1.0)) + 0.2 * run

    d = diagnose(experiment(["a", "b", "c"], 40, drift))
    assert d is not None
    trends = {(t.test, t.arm): t for t in d.trends}
    assert len(trends) == 6
    assert all(t.significant and t.spearman_rho is not None and t.spearman_rho > 0.8 for t in trends.values())
    assert not any(p.significant for p in d.position_effects)
