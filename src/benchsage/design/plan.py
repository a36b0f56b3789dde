"""The plan: every run of an experiment, its arm and its order, derived from the seed alone.

Algorithm 1 of Duplyakin et al. (ATC 2023): N runs per arm; the fixed arm runs the tests in
the spec's order, the random arm in a fresh permutation per run; the two arms are interleaved
in time by drawing, for each pair of runs, which arm goes first, so that drift over time
cannot masquerade as an order effect. A reset precedes every run.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

import numpy as np

FIXED = "fixed"
RANDOM = "random"


@dataclass(frozen=True)
class PlannedRun:
    """One pass over all tests, in `order` (indices into the spec's tests)."""

    index: int  # position of the run in time, 0-based
    arm: str  # "fixed" or "random"
    arm_index: int  # the n-th run of its arm, 0-based
    order: tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    seed: int
    runs_per_arm: int
    test_names: tuple[str, ...]
    runs: tuple[PlannedRun, ...]

    def describe_order(self, run: PlannedRun) -> list[str]:
        return [self.test_names[i] for i in run.order]


def draw_seed() -> int:
    """A fresh seed for a spec that names none; it is recorded so the plan can be rebuilt."""
    return secrets.randbits(63)


def make_plan(test_names: tuple[str, ...] | list[str], runs_per_arm: int, seed: int) -> Plan:
    """Algorithm 1: for each of runs_per_arm pairs, a coin decides whether the fixed or the
    random run of the pair comes first; every random run gets its own permutation."""
    if runs_per_arm < 1:
        raise ValueError("runs_per_arm must be at least 1")
    names = tuple(test_names)
    rng = np.random.Generator(np.random.PCG64(seed))
    identity = tuple(range(len(names)))
    runs: list[PlannedRun] = []
    for pair in range(runs_per_arm):
        arms = (FIXED, RANDOM) if rng.random() < 0.5 else (RANDOM, FIXED)
        for arm in arms:
            order = identity if arm == FIXED else tuple(int(i) for i in rng.permutation(len(names)))
            runs.append(PlannedRun(index=len(runs), arm=arm, arm_index=pair, order=order))
    return Plan(seed=seed, runs_per_arm=runs_per_arm, test_names=names, runs=tuple(runs))


def worker_seed(seed: int, worker: str, workers: int) -> int:
    """The seed of a worker's plan: the experiment's own with one worker; with several, drawn
    from the experiment seed and the worker's name, so each worker has its own random orders."""
    if workers <= 1:
        return seed
    digest = hashlib.sha256(f"{seed}\0{worker}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
