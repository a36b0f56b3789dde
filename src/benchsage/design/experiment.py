"""The whole plan of an experiment, drawn from its spec before anything runs.

Every worker's runs with their arms, orders and treatment cells, and the looks of a sequential
experiment: the journal records it all at creation, and the executor and `resume` read it
back rather than drawing anything again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from benchsage.design.plan import Plan, draw_seed, make_plan, worker_seed
from benchsage.design.sequential import SequentialPlan
from benchsage.design.treatments import Treatment, treatment_cells
from benchsage.errors import SpecError
from benchsage.spec import Spec
from benchsage.spec.treatments import check_runs_cover


@dataclass(frozen=True)
class WorkerPlan:
    """One worker's runs: its name, kind and target (as the spec gives them), and its plan."""

    name: str
    kind: str
    target: str
    plan: Plan


@dataclass(frozen=True)
class ExperimentPlan:
    """Everything an experiment carries out. `cells` are the treatment cells the runs refer to
    (empty without treatments: then every run's treatment is None); `digest` identifies the
    experiment (its spec, runs per arm and seed), so a directory holding another is refused."""

    seed: int
    runs_per_arm: int
    cells: tuple[Treatment, ...]
    workers: tuple[WorkerPlan, ...]
    sequential: SequentialPlan | None
    digest: str

    def runs(self) -> list[dict[str, object]]:
        """Every run of every worker in journal order (worker by worker, each in time order),
        numbered from 0 across workers."""
        out: list[dict[str, object]] = []
        for w in self.workers:
            for r in w.plan.runs:
                out.append({"id": len(out), "arm": r.arm, "arm_index": r.arm_index, "order": r.order, "worker": w.name,
                            "treatment": r.treatment if self.cells else None})
        return out


def resolve_runs_and_seed(spec: Spec, runs: int | None, seed: int | None) -> tuple[int, int]:
    """Runs per arm and seed: the command line's, else the spec's; a seed is drawn if neither
    names one (and recorded in the journal)."""
    runs_per_arm = runs if runs is not None else spec.runs
    if runs_per_arm < 1:
        raise SpecError(f"--runs must be at least 1, got {runs_per_arm}")
    check_runs_cover(spec.treatments, runs_per_arm, spec.path)
    SequentialPlan.of(spec, runs_per_arm)  # a `looks` above --runs is bad input before anything starts
    return runs_per_arm, seed if seed is not None else spec.seed if spec.seed is not None else draw_seed()


def experiment_digest(spec: Spec, runs_per_arm: int, seed: int) -> str:
    return hashlib.sha256(f"{spec.digest}\0{runs_per_arm}\0{seed}".encode()).hexdigest()


def plan_experiment(spec: Spec, *, runs: int | None = None, seed: int | None = None) -> ExperimentPlan:
    """The plan of `spec` with `runs` per arm and `seed` (the spec's when None; a seed is drawn
    when neither names one). Every worker shares the treatment cells (drawn from the
    experiment's seed) and draws its own random orders (from its own seed)."""
    runs_per_arm, seed = resolve_runs_and_seed(spec, runs, seed)
    names = [t.name for t in spec.tests]
    cells = treatment_cells(spec.treatments, seed)
    workers = tuple(
        WorkerPlan(w.name, w.kind, w.target,
                   make_plan(names, runs_per_arm, worker_seed(seed, w.name, len(spec.workers)), spec.random_orders, cells))
        for w in spec.workers
    )
    return ExperimentPlan(
        seed=seed,
        runs_per_arm=runs_per_arm,
        cells=cells if spec.treatments.cells > 1 else (),
        workers=workers,
        sequential=SequentialPlan.of(spec, runs_per_arm),
        digest=experiment_digest(spec, runs_per_arm, seed),
    )
