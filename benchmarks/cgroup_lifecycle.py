"""Cost of a trial's cgroup (create, join, read, kill leftovers, remove) against the same trial without it.

Spawns `/bin/true` the way the agent does (fork, exec, wait4) N times with and N times without
a cgroup per trial, in alternating blocks so that drift hits both alike, and prints the median
time per trial of each, their difference (the overhead) and its ratio to the trial. It also
times each step of the lifecycle on its own (no process joins, so kill_all finds nothing),
and join in a child. Budget (issue "Measurement control"): under 0.3 ms per trial.

    python benchmarks/cgroup_lifecycle.py [--trials 2000] [--block 50] [--fresh]

--fresh gives every trial new cgroups (no recycling on v1), as v2 always does.

Needs a host where cgroups.probe() finds a method (root, or a delegated subtree).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from benchsage.agent import cgroups

BUDGET_MS = 0.3


def spawn(trial: cgroups.TrialCgroup | None) -> None:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child execs
        try:
            if trial is not None:
                trial.join()
            os.execv("/bin/true", ["true"])
        finally:
            os._exit(127)
    os.wait4(pid, 0)


def one(groups: cgroups.Cgroups | None) -> float:
    start = time.perf_counter()
    if groups is None:
        spawn(None)
    else:
        trial = groups.trial()
        spawn(trial)
        trial.kill_all()
        trial.read()
        trial.remove()
    return time.perf_counter() - start


def steps(groups: cgroups.Cgroups, n: int) -> dict[str, float]:
    """Median microseconds of each step, no process in the cgroup."""
    times: dict[str, list[float]] = {"create": [], "read": [], "kill_all (empty)": [], "remove": []}
    for _ in range(n):
        t0 = time.perf_counter()
        trial = groups.trial()
        t1 = time.perf_counter()
        trial.read()
        t2 = time.perf_counter()
        trial.kill_all()
        t3 = time.perf_counter()
        trial.remove()
        t4 = time.perf_counter()
        for key, value in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            value_us = value * 1e6
            times[key].append(value_us)
    return {key: statistics.median(values) for key, values in times.items()}


def join_cost(groups: cgroups.Cgroups, n: int) -> float:
    """Median microseconds of join() in a forked child, timed by the child."""
    r, w = os.pipe()
    samples = []
    for _ in range(n):
        trial = groups.trial()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - reports and exits
            t0 = time.perf_counter()
            trial.join()
            os.write(w, b"%.9f\n" % (time.perf_counter() - t0))
            os._exit(0)
        os.wait4(pid, 0)
        samples.append(float(os.read(r, 64)) * 1e6)
        trial.remove()
    os.close(r)
    os.close(w)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000, help="trials with and without a cgroup, each")
    parser.add_argument("--block", type=int, default=50, help="trials per block before switching")
    parser.add_argument("--fresh", action="store_true", help="new cgroups for every trial (no v1 recycling)")
    args = parser.parse_args()
    if args.fresh:
        cgroups.RECYCLE_BYTES = -1  # nothing qualifies

    support = cgroups.probe()
    print(f"method: {support.method}: {support.reason}")
    if not support.method:
        return 2
    groups = cgroups.Cgroups(support)
    try:
        for _ in range(20):  # warm up both paths
            one(None)
            one(groups)
        bare: list[float] = []
        with_cgroup: list[float] = []
        while len(bare) < args.trials:
            bare.extend(one(None) for _ in range(args.block))
            with_cgroup.extend(one(groups) for _ in range(args.block))
        parts = steps(groups, 500)
        join_us = join_cost(groups, 300)
    finally:
        groups.close()

    base_ms = statistics.median(bare) * 1e3
    cg_ms = statistics.median(with_cgroup) * 1e3
    overhead = cg_ms - base_ms
    print(f"trial of /bin/true (fork, exec, wait4): {base_ms:.3f} ms without a cgroup, {cg_ms:.3f} ms with one "
          f"(medians of {len(bare)} each)")
    print(f"overhead per trial: {overhead:.3f} ms ({cg_ms / base_ms:.2f}x the bare trial); budget {BUDGET_MS} ms: "
          + ("met" if overhead < BUDGET_MS else "MISSED"))
    print("steps (median us): " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()) + f", join (in the child) {join_us:.1f}")
    print(f"sum of the steps: {(sum(parts.values()) + join_us) / 1e3:.3f} ms")
    return 0 if overhead < BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
