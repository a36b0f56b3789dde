"""Fleet experiments written with the real journal, for the tests of the analysis and reports.

Each worker carries out the whole plan (its own rows in `runs`, as the runner writes them):
fixed and random runs alternating, a reset (a new boot id) before every run, a snapshot per
run taken "on" the worker. Test "a" is slower right after the reset by `effect` (a cold cache:
always in the fixed arm, where a runs first, and in a third of the random runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from benchsage.store.journal import Journal, TrialRecord
from benchsage.store.table import TrialTable

TESTS = ("a", "b", "c")
BASE = {"a": 0.020, "b": 0.050, "c": 0.011}
HARNESS = [("wall_time", "s"), ("user_time", "s"), ("sys_time", "s"), ("max_rss", "KiB")]


def _metrics() -> list[dict[str, Any]]:
    return [{"name": n, "unit": u, "better": "lower", "primary": n == "wall_time"} for n, u in HARNESS]


def snapshot(worker: str, run: int, *, kernel: str = "6.1.0-18-amd64", app: str = "1" * 64, governor: str = "performance") -> dict[str, Any]:
    return {
        "time": 1.7e9 + run, "host": f"{worker}.example", "worker": worker, "worker_kind": "ssh", "transport": f"ssh {worker}",
        "boot_id": f"{worker}-boot-{run}", "kernel": kernel, "kernel_version": "#1 SMP Debian", "machine": "x86_64",
        "os": "Debian GNU/Linux 12", "cpu_model": "Xeon E5-2650 v2", "cpu_count": 32, "governor": governor, "turbo": "off",
        "smt": "off", "aslr": "full", "load_average": [0.1 * run, 0.1, 0.1], "python": "3.11.2", "benchsage": "0.1.0",
        "noise": {"load": {"value": "0.10", "state": "ok"}}, "dir": "/srv/exp", "agent_pid": 1000 + run,
        "files": {"/srv/exp/bin/app": app, "/usr/bin/python3": "2" * 64}, "spec_hash": "s" * 16,
    }


def write_fleet(
    directory: Path,
    levels: Mapping[str, float] = {"node1": 1.0, "node2": 1.0, "node3": 1.0},  # noqa: B006 - read only
    *,
    runs_per_arm: int = 8,
    effect: float = 0.0,
    cv: float = 0.02,
    seed: int = 0,
    snapshots: Mapping[str, Mapping[str, Any]] | None = None,
) -> Path:
    """A finished fleet experiment in `directory`; `snapshots[worker]` overrides snapshot fields."""
    rng = np.random.default_rng(seed)
    tests = [{"name": t, "command": f"./bin/app {t}", "metrics": _metrics()} for t in TESTS]
    runs = []
    workers = list(levels)
    for w_index, worker in enumerate(workers):
        for r in range(2 * runs_per_arm):
            arm = "fixed" if r % 2 == 0 else "random"
            order = [0, 1, 2] if arm == "fixed" else rng.permutation(3).tolist()
            runs.append({"id": w_index * 2 * runs_per_arm + r, "arm": arm, "arm_index": r // 2, "order": order, "worker": worker})
    journal = Journal.create(str(directory), {"name": "fleet-demo", "seed": seed, "alpha": 0.05, "correction": "bonferroni"}, tests, runs)
    clock = {w: 1.7e9 + 0.37 * i for i, w in enumerate(workers)}
    for run in runs:
        worker = run["worker"]
        attempt, _ = journal.begin_attempt(run["id"], worker)
        journal.record_snapshot(attempt, {**snapshot(worker, run["id"]), **dict((snapshots or {}).get(worker, {}))})
        previous = None
        for position, test_id in enumerate(run["order"]):
            name = TESTS[test_id]
            wall = levels[worker] * BASE[name] * float(rng.lognormal(0.0, cv))
            if name == "a" and position == 0:
                wall *= 1.0 + effect
            start = clock[worker]
            clock[worker] += wall + 0.001
            journal.add_trial(
                TrialRecord(
                    run_id=run["id"], attempt_id=attempt, worker=worker, test_id=test_id, position=position, predecessor_id=previous,
                    started=start, ended=start + wall, duration=wall, exit_status=0, status="ok", reason=None, wall_time=wall,
                    user_time=wall * 0.9, sys_time=wall * 0.05, max_rss=4096.0, stdout_tail=b"", stderr_tail=b"", stdout_dropped=0,
                    stderr_dropped=0, values={}, boot_id=f"{worker}-boot-{run['id']}", spawn="exec",
                )
            )
            previous = test_id
        journal.finish_attempt(attempt, run["id"], "done")
    journal.close()
    return directory


def tidy_fleet(levels: Mapping[str, float], *, runs_per_arm: int = 10, effect: float = 0.0, seed: int = 0, tests: int = 3) -> TrialTable:
    """The same kind of experiment as a table (no journal): every worker runs every test."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list[Any]] = {k: [] for k in ("test", "arm", "value", "worker", "run", "position", "time")}
    for w_index, (worker, level) in enumerate(levels.items()):
        for r in range(2 * runs_per_arm):
            arm = "fixed" if r % 2 == 0 else "random"
            order = list(range(tests)) if arm == "fixed" else rng.permutation(tests).tolist()
            for position, t in enumerate(order):
                value = level * (1.0 + t) * float(rng.lognormal(0.0, 0.02)) * ((1.0 + effect) if (t == 0 and position == 0) else 1.0)
                rows["test"].append(f"t{t}")
                rows["arm"].append(arm)
                rows["value"].append(value)
                rows["worker"].append(worker)
                rows["run"].append(w_index * 1000 + r)
                rows["position"].append(position)
                rows["time"].append(1.7e9 + 10.0 * r + position)
    return TrialTable.from_columns(**rows)
