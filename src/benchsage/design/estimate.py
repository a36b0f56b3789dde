"""Describe a plan before running it, with an honest estimate of how long it will take.

With no measurements the only defensible figure is an upper bound from the timeouts; when an
earlier experiment of the same spec sits in results/, its median trial and reset durations
give an estimate.
"""

from __future__ import annotations

import glob
import os
import statistics
from typing import Any

from benchsage.design.plan import draw_seed, make_plan, worker_seed
from benchsage.design.sequential import SequentialPlan
from benchsage.design.williams import Squares
from benchsage.spec import Spec, load_spec

RESULTS_ROOT = "results"


def describe_plan(spec_path: str, *, runs: int | None = None, seed: int | None = None) -> dict[str, Any]:
    spec = load_spec(spec_path)
    runs_per_arm = runs if runs is not None else spec.runs
    seed_given = seed if seed is not None else spec.seed
    seed_used = seed_given if seed_given is not None else draw_seed()
    from benchsage.design.treatments import treatment_cells
    from benchsage.spec.treatments import check_runs_cover

    check_runs_cover(spec.treatments, runs_per_arm, spec.path)
    names = [t.name for t in spec.tests]
    cells = treatment_cells(spec.treatments, seed_used)
    workers = []
    for w in spec.workers:
        plan = make_plan(names, runs_per_arm, worker_seed(seed_used, w.name, len(spec.workers)), spec.random_orders, cells)
        workers.append({
            "name": w.name,
            "kind": w.kind,
            "target": w.target,
            "seed": plan.seed,
            "runs": [{"run": r.index + 1, "arm": r.arm, "order": plan.describe_order(r),
                      **({"treatment": cells[r.treatment].describe()} if len(cells) > 1 else {})} for r in plan.runs],
        })
    n_runs = len(workers[0]["runs"])
    n_trials = n_runs * len(spec.tests) * len(workers)
    reset = None
    if spec.reset:
        reset = spec.reset.command if spec.reset.kind == "command" else f"reboot ({spec.reset.command}), verified by a new boot id"
    return {
        "name": spec.name,
        "spec": spec.path,
        "seed": seed_used,
        "seed_recorded": seed_given is not None,
        "runs_per_arm": runs_per_arm,
        "random_orders": spec.random_orders,
        "squares": _squares(plan.squares),
        "tests": [{"name": t.name, "command": t.command, "timeout": t.timeout} for t in spec.tests],
        "reset": reset,
        "total_runs": n_runs * len(workers),
        "total_trials": n_trials,
        "runs": workers[0]["runs"],
        "workers": workers,
        "estimate": _estimate(spec, n_runs),
        "warnings": list(spec.warnings),
        "treatments": [cell.describe() for cell in cells] if len(cells) > 1 else [],
        "compare": [{"a": c.a, "b": c.b, "metric": c.metric} for c in spec.treatments.compare],  # metric None: primary
        "stop": spec.stop,
        "sequential": _sequential(spec, runs_per_arm),
    }


def _sequential(spec: Spec, runs_per_arm: int) -> dict[str, Any] | None:
    """With stop = "sequential": when the looks happen (runs per arm on each worker) and how they decide."""
    plan = SequentialPlan.of(spec, runs_per_arm)
    if plan is None:
        return None
    family = sum(len(t.primary_metrics) for t in spec.tests)
    return {"looks": plan.looks, "look_points": list(plan.points), "max_runs": runs_per_arm, "min_effect": plan.min_effect,
            "method": plan.method(family)}


def _squares(squares: Squares | None) -> dict[str, int] | None:
    """Williams orders: rows per square, complete squares and extra rows of each worker's random runs."""
    if squares is None:
        return None
    return {"rows": squares.rows, "complete": squares.complete, "extra_runs": squares.extra}


def _estimate(spec: Spec, n_runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    timeouts = [t.timeout for t in spec.tests]
    if all(t is not None for t in timeouts):
        per_run = sum(t for t in timeouts if t is not None) + (spec.reset.timeout if spec.reset else 0.0)
        out["upper_bound_seconds"] = per_run * n_runs
    measured = _measured(spec)
    if measured is not None:
        per_run, source = measured
        out["expected_seconds"] = per_run * n_runs
        out["from"] = source
    return out


def _measured(spec: Spec) -> tuple[float, str] | None:
    """Median durations from the newest earlier experiment of this spec under results/."""
    from benchsage.store.journal import Journal

    candidates = sorted(glob.glob(os.path.join(RESULTS_ROOT, "*", "journal.sqlite")), key=os.path.getmtime, reverse=True)
    for path in candidates:
        try:
            journal = Journal.open(os.path.dirname(path))
        except Exception:
            continue
        try:
            meta = journal.meta()
            if meta.get("spec_hash") != spec.digest:
                continue
            durations: dict[int, list[float]] = {}
            for row in journal.trial_rows(analysed_only=False):
                durations.setdefault(row[4], []).append(row[9])
            resets = [a["reset_wall"] for a in journal.attempts() if a.get("reset_wall") is not None]
        finally:
            journal.close()
        if len(durations) < len(spec.tests):
            continue
        per_run = sum(statistics.median(d) for d in durations.values())
        if resets:
            per_run += statistics.median(resets)
        return per_run, os.path.dirname(path)
    return None
