"""Experiments written with the real journal as the measurement-controlled runner writes them:
every harness metric declared, peak_memory / cpu_time / energy journaled as values when the host
measured them, leftovers counted per trial, each run's snapshot with the max_rss floor.

Test "server" starts a daemon in some trials (its leftovers); "tiny" does almost nothing (its
max_rss sits at the floor); "big" holds memory well above the floor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from benchsage.store.journal import Journal, TrialRecord
from benchsage.store.table import HARNESS_METRIC_INFO

TESTS = ("server", "tiny", "big")
FLOOR_KIB = 7600
RSS_KIB = {"server": 7640.0, "tiny": 7620.0, "big": 52000.0}  # max_rss medians: two at the floor, one above
OPTIONAL = ("peak_memory", "cpu_time", "energy")


def _metrics() -> list[dict[str, Any]]:
    return [{"name": n, "unit": i.unit, "better": i.better, "primary": n == "wall_time"} for n, i in HARNESS_METRIC_INFO.items()]


def write_measured(
    directory: Path,
    *,
    runs_per_arm: int = 6,
    measured: Sequence[str] = OPTIONAL,
    leftovers: Mapping[str, int | None] | None = None,
    floor: int | None = FLOOR_KIB,
    seed: int = 0,
) -> Path:
    """A finished experiment in `directory`. `measured`: the optional harness metrics the host
    gave; `leftovers[test]`: processes each of its trials left (every second trial of "server"
    by default; None: not known, as an older journal).
    """
    rng = np.random.default_rng(seed)
    leftovers = {"server": 2, "tiny": 0, "big": 0} if leftovers is None else leftovers
    tests = [{"name": t, "command": f"./{t}", "metrics": _metrics()} for t in TESTS]
    runs = []
    for r in range(2 * runs_per_arm):
        arm = "fixed" if r % 2 == 0 else "random"
        runs.append({"id": r, "arm": arm, "arm_index": r // 2, "order": [0, 1, 2] if arm == "fixed" else rng.permutation(3).tolist()})
    journal = Journal.create(str(directory), {"name": "measured", "seed": seed, "alpha": 0.05, "correction": "bonferroni"}, tests, runs)
    clock = 1.7e9
    seen = dict.fromkeys(TESTS, 0)  # trials of each test so far
    for run in runs:
        attempt, _ = journal.begin_attempt(run["id"], "local")
        snap: dict[str, Any] = {"host": "h", "kernel": "6.1.0", "agent_pid": 100 + run["id"]}
        if floor is not None:
            snap["max_rss_floor_kib"] = floor + 8 * (run["id"] % 3)  # the floor moves a little from run to run
        journal.record_snapshot(attempt, snap)
        previous = None
        for position, test_id in enumerate(run["order"]):
            name = TESTS[test_id]
            wall = (0.01 + 0.02 * test_id) * float(rng.lognormal(0.0, 0.02))
            values = {
                "peak_memory": {"server": 900.0, "tiny": 300.0, "big": 51000.0}[name] * float(rng.lognormal(0.0, 0.01)),
                "cpu_time": wall * 0.95,
                "energy": wall * 20.0,
            }
            left = leftovers.get(name)
            if left is not None and name == "server" and seen[name] % 2:
                left = 0  # every second trial of the server leaves its daemon behind
            seen[name] += 1
            journal.add_trial(
                TrialRecord(
                    run_id=run["id"], attempt_id=attempt, worker="local", test_id=test_id, position=position,
                    predecessor_id=previous, started=clock, ended=clock + wall, duration=wall, exit_status=0, status="ok",
                    reason=None, wall_time=wall, user_time=wall * 0.9, sys_time=wall * 0.05,
                    max_rss=RSS_KIB[name] + float(rng.integers(-8, 8)), stdout_tail=b"", stderr_tail=b"", stdout_dropped=0,
                    stderr_dropped=0, values={k: v for k, v in values.items() if k in measured}, spawn="exec", leftovers=left,
                )
            )
            clock += wall + 0.001
            previous = test_id
        journal.finish_attempt(attempt, run["id"], "done")
    journal.close()
    return directory
