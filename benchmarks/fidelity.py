"""Fidelity of the local worker's measurements, against hyperfine -N measured in the same run.

Wall time of `/bin/true` (and of `sleep 0.02`) as benchsage's agent measures it, next to the
median of `hyperfine -N` for the same command, alternating in rounds so that drift of this
machine hits both alike; and the max_rss a trial of `/bin/true` reports (its floor: what
Linux charges a child for the process it was forked from). The requests are trials, as in a
run: the agent's cgroup per trial and leftover search are in what is measured (the agent's
cgroup method is printed).

Budgets: wall time within 0.25 ms of hyperfine -N; max_rss of /bin/true under
8 MiB.

    python benchmarks/fidelity.py [--runs 300] [--rounds 3] [--python PYTHON]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchsage.execute.local import LocalWorker
from benchsage.execute.worker import ProcessRequest

BUDGET_MS = 0.25
RSS_BUDGET_KIB = 8 * 1024


def hyperfine_median(command: str, runs: int) -> float:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            ["hyperfine", "-N", "--warmup", "20", "--runs", str(runs), "--export-json", out.name, command],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        return float(json.load(open(out.name))["results"][0]["median"])


def benchsage_median(worker: LocalWorker, command: str, runs: int) -> tuple[float, int, str]:
    request = ProcessRequest(command, "/", trial=True)  # as a run's trials: pinning, cgroup, leftovers
    for _ in range(20):
        worker.run(request)
    results = [worker.run(request) for _ in range(runs)]
    assert all(r.ok for r in results), results[0]
    return statistics.median(r.wall_time for r in results), max(r.max_rss for r in results), results[0].spawn


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", help="interpreter that runs the agent (default: this one)")
    args = parser.parse_args()
    if shutil.which("hyperfine") is None:
        print("hyperfine is not installed (apt-get install hyperfine)", file=sys.stderr)
        return 2
    worker = LocalWorker(python=[args.python] if args.python else None)
    worker.connect()
    measurement = worker.hello.get("measurement") or {}
    print(f"agent: cgroups {measurement.get('cgroup') or 'none (' + str(measurement.get('cgroup_reason')) + ')'}")
    ok = True
    try:
        for command in ("/bin/true", "sleep 0.02"):
            ours, theirs, rss = [], [], 0
            spawn = ""
            for _ in range(args.rounds):
                theirs.append(hyperfine_median(command, args.runs))
                median, peak, spawn = benchsage_median(worker, command, args.runs)
                ours.append(median)
                rss = max(rss, peak)
            b, h = statistics.median(ours), statistics.median(theirs)
            diff_ms = (b - h) * 1000
            verdict = "PASS" if abs(diff_ms) <= BUDGET_MS else "FAIL"
            ok &= verdict == "PASS"
            print(f"{command!r:14} benchsage {b * 1000:8.3f} ms ({spawn})  hyperfine -N {h * 1000:8.3f} ms  "
                  f"difference {diff_ms:+.3f} ms (budget ±{BUDGET_MS} ms): {verdict}")
            if command == "/bin/true":
                rss_verdict = "PASS" if rss < RSS_BUDGET_KIB else "FAIL"
                ok &= rss_verdict == "PASS"
                print(f"{'':14} max_rss {rss / 1024:.2f} MiB (budget < {RSS_BUDGET_KIB // 1024} MiB): {rss_verdict}")
    finally:
        worker.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
