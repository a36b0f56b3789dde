"""What collectors cost a trial: the same experiment with and without them, in the same run.

A pair of roles on this machine (a server and a client, each its own agent) runs N trials of
`true` on the client, once with collectors on the server (its whole CPU time and a command's
number read with `delta`, so both the open and the close read) and once without. The windows'
round trips are on each trial's critical path, never inside its measured wall time:

- added per trial: (time with - time without) / N, from the trials' own start times (the
  span from the first trial's start to the last one's, so start-up and analysis do not count);
  budget 1 ms;
- the trials' median wall time with / without: budget 1.0 within noise (the window is opened
  before the trial is spawned and closed after it exits).

A command collector costs its command too (a fork and exec on the server, ~1-2 ms): the
budget is for the round trips, measured with the `cpu` collector alone; the command
collector's figure is printed beside it.

    python benchmarks/collector_cost.py [--trials 400] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

BUDGET_MS = 1.0
TESTS = 20


def spec_text(trials: int, collectors: str) -> str:
    runs = max(1, trials // (2 * TESTS))
    tests = "".join(f'[[test]]\nname = "t{i}"\nrole = "client"\ncommand = "true # {i}"\n' for i in range(TESTS))
    roles = (f'[[worker]]\nname = "pair"\n[worker.roles.server]\nkind = "local"\npython = "{sys.executable}"\n'
             f'[worker.roles.client]\nkind = "local"\npython = "{sys.executable}"\n')
    extra = {
        "none": "",
        "cpu": '[[collector]]\nname = "server_cpu"\nrole = "server"\nkind = "cpu"\n',
        "command": '[[collector]]\nname = "count"\nrole = "server"\nkind = "command"\ncommand = "cat /proc/loadavg"\ndelta = true\n',
    }[collectors]
    return f'[experiment]\nname = "collectors"\nruns = {runs}\nseed = 1\n[reset]\ncommand = "true"\n{roles}{tests}{extra}'


def measure(trials: int, collectors: str, workdir: str) -> tuple[float, float, int]:
    """(seconds from the first trial's start to the last one's, median wall time, trials)."""
    spec = os.path.join(workdir, f"spec-{collectors}.toml")
    with open(spec, "w") as fh:
        fh.write(spec_text(trials, collectors))
    out = os.path.join(workdir, f"out-{collectors}-{os.urandom(4).hex()}")
    subprocess.run([sys.executable, "-m", "benchsage", "run", spec, "-o", out, "--quiet", "--json"], check=True,
                   stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    conn = sqlite3.connect(os.path.join(out, "journal.sqlite"))
    try:
        runs = conn.execute("SELECT run_id, MIN(started), MAX(started), COUNT(*) FROM trials GROUP BY run_id").fetchall()
        walls = [w for (w,) in conn.execute("SELECT wall_time FROM trials")]
    finally:
        conn.close()
    # within runs only: the resets and snapshots between runs are not the trials' critical path
    span = sum(last - first for _, first, last, _ in runs)
    gaps = sum(n - 1 for _, _, _, n in runs)
    return span, statistics.median(walls), gaps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    per: dict[str, list[float]] = {"none": [], "cpu": [], "command": []}
    walls: dict[str, list[float]] = {"none": [], "cpu": [], "command": []}
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(args.repeat):
            for kind in per:  # interleaved, so drift on a shared machine reaches all three alike
                span, wall, gaps = measure(args.trials, kind, workdir)
                per[kind].append(span / gaps)
                walls[kind].append(wall)
    base = statistics.median(per["none"])
    added = {kind: (statistics.median(v) - base) * 1000 for kind, v in per.items() if kind != "none"}
    wall_ratio = statistics.median(walls["cpu"]) / statistics.median(walls["none"])
    print(f"trial to trial without collectors: {base * 1000:.3f} ms")
    print(f"added per trial by a cpu collector's window (two round trips): {added['cpu']:.3f} ms (budget {BUDGET_MS} ms)")
    print(f"added per trial by a command collector with delta (its command run twice): {added['command']:.3f} ms")
    print(f"median wall time of the trials, cpu collector / none: {wall_ratio:.3f} (budget 1.0, nothing added)")
    ok = added["cpu"] <= BUDGET_MS and wall_ratio < 1.10
    print("within budget" if ok else "OVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
