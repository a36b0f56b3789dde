"""Fidelity of the agent's measurements, against hyperfine -N measured in the same run.

Wall time of `/bin/true` (and of `sleep 0.02`) as benchsage's agent measures it, next to the
median of `hyperfine -N` for the same command, alternating in rounds so that drift of this
machine hits both alike; the max_rss a trial of `/bin/true` reports (its floor: what Linux
charges a child for the process it was forked from); and the gap between two trials (the
`started` of one minus the `ended` of the one before, as the journal records them). The
requests are trials, as in a run, through the path users get: the agent's default
measurement, so as root its cgroup per trial (checked: every result must carry the cgroup's
peak_memory, and an agent running as root without cgroups is not measured: exit 2), and its
leftover search. `--ssh` also measures `sleep 0.02` on an ssh worker of a one-host fake
fleet (examples/fleet/fakefleet.py; the same machine, through sshd and the agent there).

Budgets: wall time within 0.25 ms of hyperfine -N; max_rss of /bin/true under 12 MiB (the
agent's resident size, which Linux charges a posix_spawn'd child at its exec; under 8 MiB with
BENCHSAGE_AGENT_FORK=1, from a forked copy); the gap between trials under 0.5 ms (median);
remote `sleep 0.02` within 20.0-21.2 ms.

    python benchmarks/fidelity.py [--runs 300] [--rounds 3] [--python PYTHON] [--ssh]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchsage.execute.agentworker import AgentWorker
from benchsage.execute.local import LocalWorker
from benchsage.execute.transports import SshTransport
from benchsage.execute.worker import ProcessRequest

BUDGET_MS = 0.25
RSS_BUDGET_KIB = (8 if os.environ.get("BENCHSAGE_AGENT_FORK", "") not in ("", "0") else 12) * 1024
GAP_BUDGET_MS = 0.5
REMOTE_SLEEP_MS = (20.0, 21.2)
FLEET = Path(__file__).resolve().parents[1] / "examples" / "fleet"


class NotMeasured(Exception):
    """The path users get could not be measured (exit 2)."""


def hyperfine_median(command: str, runs: int) -> float:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            ["hyperfine", "-N", "--warmup", "20", "--runs", str(runs), "--export-json", out.name, command],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        return float(json.load(open(out.name))["results"][0]["median"])


def benchsage_median(worker: AgentWorker, command: str, runs: int, cgroups: bool) -> tuple[float, int, str, float]:
    """(median wall time, max max_rss, how it was spawned, median gap between trials) of `runs`
    trials of `command`, as a run's trials are requested."""
    request = ProcessRequest(command, "/", trial=True)  # as a run's trials: cgroup, leftovers
    for _ in range(20):
        worker.run(request)
    results = [worker.run(request) for _ in range(runs)]
    assert all(r.ok for r in results), results[0]
    if cgroups and any(r.peak_memory is None for r in results):
        raise NotMeasured(f"trials measured without their cgroup: {next(r.note for r in results if r.note) or 'no peak_memory'}")
    gaps = [b.started - a.ended for a, b in zip(results, results[1:])]
    return (statistics.median(r.wall_time for r in results), max(r.max_rss for r in results), results[0].spawn,
            statistics.median(gaps))


def cgroup_method(worker: AgentWorker) -> str | None:
    """The agent's cgroup method; NotMeasured when it runs as root without one."""
    measurement = worker.hello.get("measurement") or {}
    method = measurement.get("cgroup")
    print(f"agent on {worker.name}: cgroups {method or 'none (' + str(measurement.get('cgroup_reason')) + ')'}")
    if method is None and os.geteuid() == 0 and os.environ.get("BENCHSAGE_CGROUPS") != "off":
        raise NotMeasured(f"the agent runs as root without cgroups, not the path users get: {measurement.get('cgroup_reason')}")
    return method


def local(args: argparse.Namespace) -> bool:
    worker = LocalWorker(python=[args.python] if args.python else None)
    worker.connect()
    ok = True
    try:
        cgroups = cgroup_method(worker) is not None
        for command in ("/bin/true", "sleep 0.02"):
            ours, theirs, gaps, rss = [], [], [], 0
            spawn = ""
            for _ in range(args.rounds):
                theirs.append(hyperfine_median(command, args.runs))
                median, peak, spawn, gap = benchsage_median(worker, command, args.runs, cgroups)
                ours.append(median)
                gaps.append(gap)
                rss = max(rss, peak)
            b, h = statistics.median(ours), statistics.median(theirs)
            diff_ms = (b - h) * 1000
            verdict = "PASS" if abs(diff_ms) <= BUDGET_MS else "FAIL"
            ok &= verdict == "PASS"
            print(f"{command!r:14} benchsage {b * 1000:8.3f} ms ({spawn})  hyperfine -N {h * 1000:8.3f} ms  "
                  f"difference {diff_ms:+.3f} ms (budget ±{BUDGET_MS} ms): {verdict}  "
                  f"[per round: {', '.join(f'{(o - t) * 1000:+.3f}' for o, t in zip(ours, theirs))}]")
            gap_ms = statistics.median(gaps) * 1000
            gap_verdict = "PASS" if gap_ms <= GAP_BUDGET_MS else "FAIL"
            ok &= gap_verdict == "PASS"
            print(f"{'':14} gap between trials {gap_ms:.3f} ms, median (budget {GAP_BUDGET_MS} ms): {gap_verdict}")
            if command == "/bin/true":
                rss_verdict = "PASS" if rss < RSS_BUDGET_KIB else "FAIL"
                ok &= rss_verdict == "PASS"
                print(f"{'':14} max_rss {rss / 1024:.2f} MiB (budget < {RSS_BUDGET_KIB // 1024} MiB): {rss_verdict}")
    finally:
        worker.close()
    return ok


def remote(args: argparse.Namespace) -> bool:
    """`sleep 0.02` on an ssh worker of a one-host fake fleet, with hyperfine -N here beside it."""
    sys.path.insert(0, str(FLEET))
    import fakefleet

    command = "sleep 0.02"
    with tempfile.TemporaryDirectory() as folder:
        fleet = fakefleet.start(folder, 1)
        try:
            worker = AgentWorker("node1", SshTransport("node1", fleet.ssh_config, "python3"), python=["python3"])
            worker.connect()
            try:
                cgroups = cgroup_method(worker) is not None
                ours, theirs = [], []
                for _ in range(args.rounds):
                    theirs.append(hyperfine_median(command, args.runs // 3))
                    ours.append(benchsage_median(worker, command, args.runs // 3, cgroups)[0])
            finally:
                worker.close()
        finally:
            fleet.stop()
    b, h = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
    low, high = REMOTE_SLEEP_MS
    verdict = "PASS" if low <= b <= high else "FAIL"
    if verdict == "FAIL" and h > high:  # the command's own cost here, not the harness's
        verdict += f" (hyperfine -N here is above {high} ms too: no spawner meets it on this machine)"
    print(f"{command!r:14} on ssh worker {b:8.3f} ms  hyperfine -N here {h:8.3f} ms  difference {b - h:+.3f} ms  "
          f"(budget {low}-{high} ms): {verdict}  [per round: {', '.join(f'{(o - t) * 1000:+.3f}' for o, t in zip(ours, theirs))}]")
    return verdict == "PASS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", help="interpreter that runs the agent (default: this one)")
    parser.add_argument("--ssh", action="store_true", help="also remote `sleep 0.02` on a fake fleet's ssh worker")
    args = parser.parse_args()
    if shutil.which("hyperfine") is None:
        print("hyperfine is not installed (apt-get install hyperfine)", file=sys.stderr)
        return 2
    try:
        ok = local(args)
        if args.ssh:
            ok &= remote(args)
    except NotMeasured as exc:
        print(f"could not measure: {exc}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
