"""Harness overhead per trial: benchsage vs a bare shell loop, measured in the same run.

Runs N and 2N trials of `true` through `benchsage run` (journal commits, snapshots and
progress included) and N and 2N iterations of `/bin/sh -c true` from a shell loop. The cost
per trial is the slope between the two sizes, so start-up (Python, imports, the first SQLite
open) does not count. Budget: benchsage adds under 0.5 ms per trial.

    python benchmarks/harness_overhead.py [--trials 1000] [--repeat 3]
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

TESTS_PER_RUN = 50
BUDGET_MS = 0.5


def spec_text(trials: int) -> str:
    runs_per_arm = max(1, trials // (2 * TESTS_PER_RUN))
    tests = "\n".join(f'[[test]]\nname = "t{i}"\ncommand = "true # {i}"\n' for i in range(TESTS_PER_RUN))
    return f'[experiment]\nname = "overhead"\nruns = {runs_per_arm}\nseed = 1\n[reset]\ncommand = "true"\n{tests}'


def time_benchsage(trials: int, workdir: str) -> float:
    spec = os.path.join(workdir, f"spec-{trials}.toml")
    with open(spec, "w") as fh:
        fh.write(spec_text(trials))
    out = os.path.join(workdir, f"out-{trials}-{time.monotonic_ns()}")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "benchsage", "run", spec, "-o", out, "--quiet", "--json"], check=True,
                   stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    shutil.rmtree(out)
    return elapsed


def time_shell(trials: int) -> float:
    start = time.perf_counter()
    subprocess.run(["/bin/bash", "-c", f"for i in $(seq {trials}); do /bin/sh -c true; done"], check=True)
    return time.perf_counter() - start


def time_spawn(trials: int) -> float:
    """The cheapest fork/exec Python can do: posix_spawn (vfork) + waitpid, nothing recorded."""
    code = (
        "import os\n"
        f"for _ in range({trials}):\n"
        "    os.waitpid(os.posix_spawn('/bin/sh', ['/bin/sh', '-c', 'true'], os.environ), 0)\n"
    )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000, help="the smaller size N (the larger is 2N)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of each measurement (median taken)")
    args = parser.parse_args()
    n1 = 2 * TESTS_PER_RUN * max(1, args.trials // (2 * TESTS_PER_RUN))
    n2 = 2 * n1
    with tempfile.TemporaryDirectory() as workdir:
        # Interleave the four measurements so machine drift hits them alike.
        samples: dict[str, list[float]] = {"b1": [], "b2": [], "s1": [], "s2": [], "p1": [], "p2": []}
        for _ in range(args.repeat):
            samples["s1"].append(time_shell(n1))
            samples["p1"].append(time_spawn(n1))
            samples["b1"].append(time_benchsage(n1, workdir))
            samples["s2"].append(time_shell(n2))
            samples["p2"].append(time_spawn(n2))
            samples["b2"].append(time_benchsage(n2, workdir))
    med = {k: statistics.median(v) for k, v in samples.items()}
    slope_b = (med["b2"] - med["b1"]) / (n2 - n1) * 1e3
    slope_s = (med["s2"] - med["s1"]) / (n2 - n1) * 1e3
    slope_p = (med["p2"] - med["p1"]) / (n2 - n1) * 1e3
    added = slope_b - slope_s
    print(f"trials: {n1} and {n2}; medians of {args.repeat} repetitions")
    print(f"shell loop   /bin/sh -c true : {slope_s:.3f} ms per trial   ({med['s1']:.2f} s, {med['s2']:.2f} s)")
    print(f"python posix_spawn + waitpid : {slope_p:.3f} ms per trial   ({med['p1']:.2f} s, {med['p2']:.2f} s)")
    print(f"benchsage run (journaled)    : {slope_b:.3f} ms per trial   ({med['b1']:.2f} s, {med['b2']:.2f} s)")
    print(f"added by benchsage           : {added:.3f} ms per trial (budget {BUDGET_MS} ms)")
    print(f"added over posix_spawn       : {slope_b - slope_p:.3f} ms per trial (the strictest baseline)")
    print(f"ratio benchsage / shell loop : {slope_b / slope_s:.2f}")
    print("PASS" if added < BUDGET_MS else "OVER BUDGET")


if __name__ == "__main__":
    main()
