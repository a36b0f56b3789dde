"""The plan: every run of an experiment, its arm and its order, derived from the seed alone.

Algorithm 1 of Duplyakin et al. (ATC 2023): N runs per arm; the fixed arm runs the tests in
the spec's order, the random arm in a fresh permutation per run; the two arms are interleaved
in time by drawing, for each pair of runs, which arm goes first, so that drift over time
cannot masquerade as an order effect. A reset precedes every run. The random arm's orders are
shuffled (a fresh permutation per run) or Williams orders (design/williams.py: carry-over
balanced over every complete square).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from benchsage.design.treatments import Treatment, assign_cells
from benchsage.design.williams import Squares, square_rows, williams_orders
from benchsage.vocabulary import FIXED, RANDOM, RANDOM_ORDERS, SHUFFLE, WILLIAMS


@dataclass(frozen=True)
class PlannedRun:
    """One pass over all tests, in `order` (indices into the spec's tests)."""

    index: int  # position of the run in time, 0-based
    arm: str  # "fixed" or "random"
    arm_index: int  # the n-th run of its arm, 0-based
    order: tuple[int, ...]
    treatment: int = 0  # index into Plan.treatments (design/treatments.py); 0 without treatments


@dataclass(frozen=True)
class Plan:
    seed: int
    runs_per_arm: int
    test_names: tuple[str, ...]
    runs: tuple[PlannedRun, ...]
    random_orders: str = SHUFFLE
    treatments: tuple[Treatment, ...] = (Treatment(0),)  # the cells runs are assigned to

    @property
    def squares(self) -> Squares | None:
        """With Williams orders, how the random runs fill their squares; None for shuffled ones."""
        return Squares.of(self.runs_per_arm, len(self.test_names)) if self.random_orders == WILLIAMS else None

    def describe_order(self, run: PlannedRun) -> list[str]:
        return [self.test_names[i] for i in run.order]


def draw_seed() -> int:
    """A fresh seed for a spec that names none; it is recorded so the plan can be rebuilt."""
    return secrets.randbits(63)


def make_plan(test_names: tuple[str, ...] | list[str], runs_per_arm: int, seed: int, random_orders: str = SHUFFLE,
              treatments: tuple[Treatment, ...] | None = None) -> Plan:
    """Algorithm 1: for each of runs_per_arm pairs, a coin decides whether the fixed or the
    random run of the pair comes first; every random run gets its own order: a permutation
    (shuffle) or the next row of a randomized Williams square (williams). With treatments,
    both runs of a pair carry the same cell (`treatments`: the cells, from treatment_cells of
    the experiment's seed, shared by every worker), the pairs going through the cells in
    randomized complete blocks drawn from this plan's seed (design/treatments.py)."""
    if runs_per_arm < 1:
        raise ValueError("runs_per_arm must be at least 1")
    if random_orders not in RANDOM_ORDERS:
        raise ValueError(f"random_orders must be one of {', '.join(RANDOM_ORDERS)}, got {random_orders!r}")
    names = tuple(test_names)
    rng = np.random.Generator(np.random.PCG64(seed))
    identity = tuple(range(len(names)))
    # Both kinds draw from the one generator as they go, so shuffled plans stay what they were.
    williams: Iterator[tuple[int, ...]] | None = None
    if random_orders == WILLIAMS:
        square_rows(len(names))  # at least 2 tests
        williams = williams_orders(len(names), rng)
    cells = treatments or (Treatment(0),)
    if len(cells) > runs_per_arm:
        raise ValueError(f"{runs_per_arm} runs per arm cannot cover {len(cells)} treatments")
    cell_of = assign_cells(len(cells), runs_per_arm, seed)
    runs: list[PlannedRun] = []
    for pair in range(runs_per_arm):
        arms = (FIXED, RANDOM) if rng.random() < 0.5 else (RANDOM, FIXED)
        for arm in arms:
            if arm == FIXED:
                order = identity
            elif williams is not None:
                order = next(williams)
            else:
                order = tuple(int(i) for i in rng.permutation(len(names)))
            runs.append(PlannedRun(index=len(runs), arm=arm, arm_index=pair, order=order, treatment=cell_of[pair]))
    return Plan(seed=seed, runs_per_arm=runs_per_arm, test_names=names, runs=tuple(runs), random_orders=random_orders,
                treatments=cells)


def worker_seed(seed: int, worker: str, workers: int) -> int:
    """The seed of a worker's plan: the experiment's own with one worker; with several, drawn
    from the experiment seed and the worker's name, so each worker has its own random orders."""
    if workers <= 1:
        return seed
    digest = hashlib.sha256(f"{seed}\0{worker}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
