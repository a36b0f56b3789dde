"""Describe a plan before running it, with an honest estimate of how long it will take.

With no measurements the only defensible figure is an upper bound from the timeouts; when an
earlier experiment of the same spec was measured, its median trial and reset durations give
an estimate (store/durations.py finds them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchsage.design.experiment import plan_experiment
from benchsage.design.sequential import SequentialPlan
from benchsage.design.williams import Squares
from benchsage.spec import Spec, missing_files
from benchsage.spec.provision import describe_allocation, planned_spec
from benchsage.stats.detectable import least_p_untied
from benchsage.vocabulary import FIXED_STOP, MIN_RUNS_PER_ARM

MAX_RUNS = 1000  # per arm: the search for the runs that can reach the level stops here


def describe_plan(spec: Spec, *, runs: int | None = None, seed: int | None = None,
                  measured: tuple[float, str] | None = None, deploy: dict[str, Any] | None = None) -> dict[str, Any]:
    """The plan `benchsage plan` prints, with its duration: an upper bound from the timeouts,
    and an expected figure from `measured`, (seconds per run, where measured) of an earlier
    experiment of the same spec, when there is one; `deploy`: what [deploy] ships, as read
    from the repository or folder (execute.deploy.DeploySource.describe()). Allocated workers
    are planned under placeholder names (node-1..node-N); `run` plans on the hosts it gets."""
    provisioning = _provisioning(spec)
    spec = planned_spec(spec)
    plan = plan_experiment(spec, runs=runs, seed=seed)
    cells = plan.cells
    workers = []
    specs = {ws.name: ws for ws in spec.workers}
    for w in plan.workers:
        workers.append({
            "name": w.name,
            "kind": w.kind,
            "target": w.target,
            **({"roles": _roles(spec, specs[w.name])} if specs[w.name].roles else {}),
            "seed": w.plan.seed,
            "runs": [{"run": r.index + 1, "arm": r.arm, "order": w.plan.describe_order(r),
                      **({"treatment": cells[r.treatment].describe()} if cells else {})} for r in w.plan.runs],
        })
    n_runs = len(workers[0]["runs"])
    n_trials = n_runs * len(spec.tests) * len(workers)
    reset = None
    if spec.reset:
        reset = spec.reset.command if spec.reset.kind == "command" else f"reboot ({spec.reset.command}), verified by a new boot id"
    return {
        "name": spec.name,
        "spec": spec.path,
        "seed": plan.seed,
        "seed_recorded": seed is not None or spec.seed is not None,
        "runs_per_arm": plan.runs_per_arm,
        "random_orders": spec.random_orders,
        "squares": _squares(plan.workers[0].plan.squares),
        "tests": [{"name": t.name, "command": t.command, "timeout": t.timeout} for t in spec.tests],
        "reset": reset,
        "total_runs": n_runs * len(workers),
        "total_trials": n_trials,
        "runs": workers[0]["runs"],
        "workers": workers,
        "estimate": _estimate(spec, n_runs, measured),
        "warnings": list(spec.warnings),
        "treatments": [cell.describe() for cell in cells],
        "compare": [{"a": c.a, "b": c.b, "metric": c.metric} for c in spec.treatments.compare],  # metric None: primary
        "stop": spec.stop,
        "provisioning": provisioning,
        "sequential": _sequential(plan.sequential, spec),
        "detectable": detectable_runs(spec, plan.runs_per_arm, len(workers)),
        "run_checks": _run_checks(spec),
        "sweeps": _sweeps(spec),
        "deploy": deploy,
        **({"cpu_latency": spec.cpu_latency} if spec.cpu_latency is not None else {}),
    }


def _roles(spec: Spec, ws: Any) -> list[dict[str, Any]]:
    """A group's roles: each one's host, and what runs or is measured there."""
    first = next((t.role for t in spec.tests if t.role), ws.role_names[0])
    out = []
    for role, member in ws.roles:
        out.append({
            "role": role,
            "name": member.name,
            "kind": member.kind,
            "target": member.target,
            "tests": [t.name for t in spec.tests if (t.role or first) == role],
            "collectors": [f"{c.name} ({c.kind})" for c in spec.collectors if c.role == role],
        })
    return out


def _sweeps(spec: Spec) -> list[dict[str, Any]]:
    """Each sweep's levels, the [[test]]s that name it, how many tests they became, and the
    other sweeps those tests cross it with."""
    out = []
    for s in spec.sweeps:
        expanded = [t for t in spec.tests if any(name == s.name for name, _ in t.sweep)]
        crossed = [o.name for o in spec.sweeps if o.name != s.name and any(any(n == o.name for n, _ in t.sweep) for t in expanded)]
        out.append({"name": s.name, "levels": list(s.levels), "tests": list(dict.fromkeys(t.base_name for t in expanded)),
                    "expanded": len(expanded), "crossed_with": crossed})
    return out


def _provisioning(spec: Spec) -> list[str]:
    """What `run` would allocate and initialize, one sentence each; plan contacts nothing."""
    out = [describe_allocation(ws) for ws in spec.workers if ws.allocated]
    if out:
        out.append("released at the end whatever happens (error, Ctrl-C, a lost worker); after a crash: `benchsage release DIR`")
    init = spec.init
    if init is not None:
        where = f"the {init.role} host of every worker" if init.role else "every role host of every worker" if spec.roles else "every worker"
        out.append(f"Init: `{init.command}` once on {where} before its first run (timeout {init.timeout:g} s); a failure loses that worker")
    return out


def _run_checks(spec: Spec) -> list[str]:
    """What `run` checks before the first trial and the plan does not: the plan needs neither
    the hosts nor their ssh configuration, so a fleet can be planned before it exists."""
    hosts = [m for w in spec.workers for _, m in w.roles] + [w for w in spec.workers if not w.roles]
    remote = [w for w in hosts if w.kind != "local"]
    if not remote:
        return []
    checks = [f"`run` connects to every worker first ({', '.join(_shown(w) for w in remote)}) and stops before the first "
              "trial, naming each, if one cannot be reached, refuses the login or its host key, or has no Python 3.8+; "
              "the plan checked none of that"]
    checks += [f"{missing}: `run` needs it" for missing in missing_files(spec)]
    return checks


def _shown(ws: Any) -> str:
    return f"{ws.name}: {ws.target}" if "/" in ws.name else ws.target


def _sequential(plan: SequentialPlan | None, spec: Spec) -> dict[str, Any] | None:
    """With stop = "sequential": when the looks happen (runs per arm on each worker) and how they decide."""
    if plan is None:
        return None
    family = sum(len(t.primary_metrics) for t in spec.tests)
    return {"looks": plan.looks, "look_points": list(plan.points), "max_runs": plan.runs_per_arm, "min_effect": plan.min_effect,
            "method": plan.method(family), "decide": plan.decide}


def detectable_runs(spec: Spec, runs_per_arm: int, workers: int) -> dict[str, Any]:
    """Can `runs_per_arm` runs per arm on each of `workers` workers show an order effect at all?

    The family is the spec's primary comparisons (each test's declared metrics, or wall_time),
    m of them, at alpha / m (Bonferroni; Holm's first, strictest step). least_p: the smallest
    p-value the analysis's test can give a comparison of untied values, whatever the data
    (stats.detectable.least_p_untied: Kruskal-Wallis, or van Elteren's test with each worker a
    stratum); None with fewer values per arm than the analysis tests (MIN_RUNS_PER_ARM, all
    workers' runs counted). least_runs_per_arm: the fewest runs per arm on each worker whose
    least p reaches the level (None beyond MAX_RUNS). With stop = "sequential" the runs are the
    most, and the looks' boundaries are stricter than alpha / m: runs that cannot reach alpha / m
    cannot decide there either. Treatment cells and observer levels are not counted: an
    analysis that examines a part of the runs (or stratifies by them) needs more.
    """
    m = sum(len(t.primary_metrics) for t in spec.tests)
    alpha_corrected = spec.alpha / m
    values = runs_per_arm * workers
    least = float(least_p_untied(runs_per_arm, runs_per_arm, workers)[0]) if values >= MIN_RUNS_PER_ARM else None
    return {
        "runs_per_arm": runs_per_arm,
        "workers": workers,
        "values_per_arm": values,
        "min_values_per_arm": MIN_RUNS_PER_ARM,
        "comparisons": m,
        "tests": len(spec.tests),
        "alpha": spec.alpha,
        "correction": spec.correction,
        "alpha_corrected": alpha_corrected,
        "least_p": least,
        "detectable": least is not None and min(1.0, least * m) <= spec.alpha,
        "least_runs_per_arm": _least_runs(m, spec.alpha, workers),
        "sequential": spec.stop != FIXED_STOP,
    }


def _least_runs(m: int, alpha: float, workers: int) -> int | None:
    """The fewest runs per arm on each worker whose least p-value reaches alpha / m (the
    least p only falls as runs are added)."""
    first = -(-MIN_RUNS_PER_ARM // workers)
    for start in range(first, MAX_RUNS + 1, 64):
        runs = np.arange(start, min(start + 64, MAX_RUNS + 1))
        reach = np.minimum(1.0, least_p_untied(runs, runs, workers) * m) <= alpha
        if reach.any():
            return int(runs[np.argmax(reach)])
    return None


def _squares(squares: Squares | None) -> dict[str, int] | None:
    """Williams orders: rows per square, complete squares and extra rows of each worker's random runs."""
    if squares is None:
        return None
    return {"rows": squares.rows, "complete": squares.complete, "extra_runs": squares.extra}


def _estimate(spec: Spec, n_runs: int, measured: tuple[float, str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    timeouts = [t.timeout for t in spec.tests]
    if all(t is not None for t in timeouts):
        per_run = sum(t for t in timeouts if t is not None) + (spec.reset.timeout if spec.reset else 0.0)
        out["upper_bound_seconds"] = per_run * n_runs
    if measured is not None:
        per_run, source = measured
        out["expected_seconds"] = per_run * n_runs
        out["from"] = source
    return out
