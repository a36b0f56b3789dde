"""What `benchsage time` costs a user: from the command line to the printed answer.

Times `benchsage time true true -r 10` (40 trials: 10 runs per arm, two commands, each run from
a reset) from its start to its exit with the answer printed (--no-report: the report is written
after the answer, and skipped here), and, in the same run, hyperfine timing the same 40 trials
(`hyperfine -N --runs 20 true true`, no warm-up) where hyperfine is installed. Repetitions
alternate the two; medians are printed. Budget: the answer within 2.0 s on a 2-core machine.

    python benchmarks/time_command.py [--repeat 5]

Exit status: 0 within the budget, 1 over it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BUDGET_S = 2.0


def benchsage_seconds(workdir: str) -> float:
    out = os.path.join(workdir, f"out-{time.monotonic_ns()}")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "benchsage", "time", "true", "true", "-r", "10", "-o", out, "--no-report", "--quiet"],
                   check=True, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    shutil.rmtree(out)
    return elapsed


def hyperfine_seconds(hyperfine: str, workdir: str) -> float:
    start = time.perf_counter()
    subprocess.run([hyperfine, "-N", "--runs", "20", "--style", "none", "true", "true"], check=True, cwd=workdir,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    hyperfine = shutil.which("hyperfine")
    ours: list[float] = []
    theirs: list[float] = []
    with tempfile.TemporaryDirectory(prefix="benchsage-time-") as workdir:
        benchsage_seconds(workdir)  # the first start compiles and warms the page cache
        for _ in range(args.repeat):
            ours.append(benchsage_seconds(workdir))
            if hyperfine:
                theirs.append(hyperfine_seconds(hyperfine, workdir))
    mine = statistics.median(ours)
    print(f"benchsage time true true -r 10 (40 trials, answer printed): {mine:.2f} s (median of {args.repeat}; "
          f"{min(ours):.2f}-{max(ours):.2f})")
    if theirs:
        peer = statistics.median(theirs)
        print(f"hyperfine -N --runs 20 true true (40 trials): {peer:.2f} s; benchsage / hyperfine = {mine / peer:.1f}x")
    else:
        print("hyperfine is not installed here: no comparison (Debian: apt-get install hyperfine)")
    verdict = "PASS" if mine <= BUDGET_S else "FAIL"
    print(f"answer within {BUDGET_S:.1f} s: {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
