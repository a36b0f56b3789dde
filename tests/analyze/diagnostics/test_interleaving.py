"""Interleaving: arms one after the other, clustered in time, or one per worker are flagged;
recorded run starts win over trial times; the runs test by hand."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.diagnostics import diagnose
from benchsage.analyze.diagnostics.interleaving import interleaving_of_runs, run_starts, runs_test_lower
from benchsage.analyze.diagnostics.notes import (
    ArmFirst, InterleavingDetail, NoRunStarts, OneArm, OnWorker, RunsTest, RunsWithoutStart, WorkersInterleaved,
)
from benchsage.store.table import TrialTable

sys.path.insert(0, str(Path(__file__).parent))
from experiment_data import experiment, noise  # noqa: E402


def test_arms_one_after_the_other_are_flagged() -> None:
    d = diagnose(experiment(["a", "b"], 50, noise, interleave=False))
    assert d is not None and d.interleaving is not None
    assert d.interleaving.interleaved is False
    assert d.interleaving.detail == InterleavingDetail((ArmFirst("fixed", 50, "random", 50),))
    assert (d.interleaving.n_fixed_runs, d.interleaving.n_random_runs) == (50, 50)


def test_clustered_arms_are_flagged_by_the_runs_test() -> None:
    # Blocks of 10 runs of one arm, alternating: neither arm entirely first, but clustered.
    t = experiment(["a"], 40, noise)
    block_arm = ((t.run // 10) % 2).astype(np.int8)
    t = TrialTable.from_columns(test=["a"] * len(t), arm=block_arm, value=t.value, run=t.run, position=t.position, time=t.time)
    d = diagnose(t)
    assert d is not None and d.interleaving is not None
    assert d.interleaving.interleaved is False
    (test,) = d.interleaving.detail.parts
    assert isinstance(test, RunsTest) and test.interleaved is False
    assert (test.n_fixed, test.n_random, test.stretches, test.expected) == (40, 40, 8, 41.0) and test.p < 1e-10


def test_recorded_run_starts_win_over_trial_times() -> None:
    t = experiment(["a", "b"], 10, noise)  # interleaved by trial times
    ids = np.unique(t.run)
    arm_of = {int(r): int(t.arm[t.run == r][0]) for r in ids}
    # The source says: every fixed run started before every random run.
    starts = {r: (r if arm_of[r] == 0 else 1000 + r) for r in arm_of}
    t2 = TrialTable.from_columns(
        test=np.array(t.test_names)[t.test], arm=t.arm, value=t.value, run=t.run, position=t.position, time=t.time,
        provenance={"run_starts": starts},
    )  # fmt: skip
    assert run_starts(t2)[3] == starts[3]
    d = diagnose(t2)
    assert d is not None and d.interleaving is not None
    assert d.interleaving.interleaved is False and d.interleaving.detail == InterleavingDetail((ArmFirst("fixed", 10, "random", 10),))


def test_an_arm_per_worker_is_not_interleaving() -> None:
    d = diagnose(experiment(["a", "b"], 10, noise, workers=2))  # w0 runs fixed, w1 random
    assert d is not None and d.interleaving is not None
    assert d.interleaving.interleaved is False
    assert d.interleaving.detail == InterleavingDetail((OnWorker("w0", OneArm("fixed", 10)), OnWorker("w1", OneArm("random", 10))))


def test_many_workers_are_counted_and_untimed_runs_named() -> None:
    d = diagnose(experiment(["a", "b"], 10, noise, workers=5))
    assert d is not None and d.interleaving is not None and d.interleaving.interleaved is True
    parts = d.interleaving.detail.parts
    assert [p.worker for p in parts[:3]] == ["w0", "w1", "w2"] and parts[3] == WorkersInterleaved(5, 5)  # type: ignore[union-attr]
    arm, worker = np.array([0, 1, 0, 1, 0, 1, 1, 0]), np.zeros(8, dtype=np.int64)
    start = np.array([1.0, 2, 3, np.nan, 5, 6, 7, 8])
    one = interleaving_of_runs(arm, worker, start, ["a"], 0.05)
    assert one.interleaved is True and one.detail.parts[1:] == (RunsWithoutStart(1),)
    untimed = interleaving_of_runs(arm, worker, np.full(8, np.nan), ["a"], 0.05)
    assert untimed.interleaved is None and untimed.detail == InterleavingDetail((NoRunStarts(),))


def test_runs_test_by_hand() -> None:
    # F F R R: n1 = n2 = 2, R = 2, E[R] = 3, Var[R] = 2*2*2*(8-4) / (16*3) = 2/3.
    stretches, expected, p = runs_test_lower(np.array([0, 0, 1, 1]))
    assert (stretches, expected) == (2, 3.0)
    assert p == pytest.approx(0.5 * math.erfc((1 / math.sqrt(2 / 3)) / math.sqrt(2)))
    assert runs_test_lower(np.array([0, 1] * 20))[2] > 0.99
