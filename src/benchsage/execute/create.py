"""Create an experiment: its plan, and everything its analysis will need, in a new journal.

The journal is written before the first trial and holds the whole plan (every worker's runs,
orders and treatment cells, the sequential looks) and what the analysis reads besides the
trials: the claims to compare, the observer's lightest level, the factors' levels, the
context's dimensions and the sweeps' levels of each expanded test. An analysis then reads data only: it never loads the spec again, so a
journal analysed on another machine gives the same result and never runs anything of its spec.
"""

from __future__ import annotations

import time
from typing import Any

from benchsage.design.experiment import ExperimentPlan
from benchsage.spec import Spec, TestSpec
from benchsage.store.journal import Journal, check_directory_for
from benchsage.store.modes import make_folder
from benchsage.store.secrets import spec_secret_names
from benchsage.store.table import HARNESS_METRIC_INFO
from benchsage.vocabulary import VERSION


def create_experiment(spec: Spec, plan: ExperimentPlan, directory: str) -> Journal:
    """Write `plan` into a new journal in `directory` (which must not hold another experiment)."""
    check_directory_for(directory, plan.digest)
    collected = [{"name": c.name, "unit": c.unit, "better": c.better, "primary": False} for c in spec.collectors]
    tests = [{"name": t.name, "command": t.command, "metrics": _metrics_meta(t) + collected} for t in spec.tests]
    return Journal.create(directory, experiment_meta(spec, plan), tests, plan.runs(), private=is_private(spec))


def is_private(spec: Spec) -> bool:
    """Whether the experiment directory is the user's alone: its spec, which the journal keeps,
    holds an env value whose name looks like a secret (store/secrets.py)."""
    return bool(spec_secret_names(spec.text))


def make_directory(spec: Spec, directory: str) -> None:
    """The experiment directory, made before anything writes into it (the workers' connection
    logs, a pending allocation) as store/modes.py says: never writable by group or other, and
    private to the user when the spec holds a secret. One that exists keeps its mode."""
    make_folder(directory, is_private(spec))


def experiment_meta(spec: Spec, plan: ExperimentPlan) -> dict[str, Any]:
    """The journal's record of the experiment: the spec as written, the plan's settings, and
    what the analysis needs of the spec (analysis_meta)."""
    return {
        "name": spec.name,
        "spec_digest": plan.digest,
        "spec_hash": spec.digest,
        "spec_path": spec.path,
        "spec_text": spec.text,
        "generated": list(spec.generated),
        "seed": plan.seed,
        "runs_per_arm": plan.runs_per_arm,
        "random_orders": spec.random_orders,
        "spec_warnings": list(spec.warnings),
        "treatments": [cell.describe() for cell in plan.cells],
        "alpha": spec.alpha,
        "correction": spec.correction,
        "stop": spec.stop,
        "sequential": plan.sequential.to_meta() if plan.sequential is not None else None,
        "reset": spec.reset.command if spec.reset else None,
        "created": time.time(),
        "tool_version": VERSION,
        "workers": [{"name": w.name, "kind": w.kind, "target": w.target, "seed": w.plan.seed} for w in plan.workers],
        **({"roles": {ws.name: {role: m.target for role, m in ws.roles} for ws in spec.workers}} if spec.roles else {}),
        **analysis_meta(spec),
    }


def analysis_meta(spec: Spec) -> dict[str, Any]:
    """What the analyses of treatments read of the spec: the declared comparisons (metric None:
    the tests' primary), the observer's levels in declared order and its lightest, the
    factors' levels in declared order (with two: low, high), the context's dimensions, the
    sweeps' levels in declared order and each expanded test's levels (by test name)."""
    t = spec.treatments
    return {
        "compare": [{"a": c.a, "b": c.b, "metric": c.metric} for c in t.compare],
        "observer_levels": [name for name, _ in t.observer.levels] if t.observer else [],
        "observer_baseline": t.observer.baseline if t.observer else None,
        "factors": [{"name": f.name, "levels": list(f.levels)} for f in t.factors],
        "context_dimensions": list(t.context.dimensions) if t.context else [],
        "sweeps": [{"name": s.name, "levels": list(s.levels)} for s in spec.sweeps],
        "test_sweeps": {test.name: dict(test.sweep) for test in spec.tests if test.sweep},
    }


def _metrics_meta(test: TestSpec) -> list[dict[str, Any]]:
    primary = set(test.primary_metrics)
    declared = [{"name": m.name, "unit": m.unit, "better": m.better, "primary": m.name in primary} for m in test.metrics]
    harness = [
        {"name": n, "unit": info.unit, "better": info.better, "primary": n in primary} for n, info in HARNESS_METRIC_INFO.items()
    ]
    return declared + harness
