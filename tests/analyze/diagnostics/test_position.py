"""Position effects: a planted first-in-run effect is found with its size; large experiments bin
later positions and pool the first over the tests."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.diagnostics import ALL_TESTS, RESET, diagnose

sys.path.insert(0, str(Path(__file__).parent))
from experiment_data import experiment  # noqa: E402


def test_first_in_run_effect_is_found_with_its_size() -> None:
    def cold_start(test: str, pos: int, before: str | None, arm: str, run: int, rng: np.random.Generator) -> float:
        return float(rng.normal(100.0, 1.0)) * (0.9 if (test == "b" and pos == 0) else 1.0)

    d = diagnose(experiment(["a", "b", "c"], 60, cold_start))
    assert d is not None
    hit = [p for p in d.position_effects if p.test == "b" and p.position == 0][0]
    assert hit.significant is True
    assert hit.effect_pct == pytest.approx(-10.0, abs=1.5)
    assert hit.p_adjusted == pytest.approx(min(1.0, hit.p * len(d.position_effects)))
    assert hit.n_at + hit.n_other == 60
    others = [p for p in d.position_effects if p.test != "b"]
    assert not any(p.significant for p in others)
    # The same trials are "after the reset" in the carry-over view.
    reset = [c for c in d.carryover if c.test == "b" and c.after == RESET][0]
    assert reset.significant is True and reset.effect_pct == pytest.approx(hit.effect_pct)


def test_large_experiments_bin_later_positions_and_pool_the_first() -> None:
    tests = [f"t{i:02d}" for i in range(60)]

    def cold(test: str, pos: int, before: str | None, arm: str, run: int, rng: np.random.Generator) -> float:
        base = 10.0 * (1 + int(test[1:]))  # tests on different scales
        return float(rng.normal(base, base * 0.01)) * (1.1 if pos == 0 else 1.0)

    d = diagnose(experiment(tests, 30, cold))
    assert d is not None
    bins = sorted({(p.position, p.position_last) for p in d.position_effects})
    assert bins[0] == (0, 0)
    assert bins[1][0] == 1 and bins[-1][1] == 59
    later = [b for b in bins if b[0] > 0]
    assert len(later) == 3  # 30 random values per test: 30 // (2 * 5) bins of positions 1..59
    assert all(later[i][1] + 1 == later[i + 1][0] for i in range(len(later) - 1))
    # Position 0 holds about half a value per test: only the pooled row can test it.
    pooled = [p for p in d.position_effects if p.test == ALL_TESTS]
    first = [p for p in pooled if p.position == 0][0]
    assert first.n_at == 30 and first.significant is True
    assert first.effect_pct == pytest.approx(10.0, abs=1.5)
    assert not any(p.significant for p in pooled if p.position > 0)
    assert not any(p.test != ALL_TESTS and p.position == 0 for p in d.position_effects)
