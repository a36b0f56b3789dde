"""Controller CPU time while a trial runs: benchsage must block, not poll.

Runs one 5-second trial (`sleep 5`) through benchsage's local worker and reads the
controller's own CPU time (time.process_time: this process only, not the child) before and
after. The baseline in the same run is subprocess.run of the same command, which also just
waits. Budget: under 10 ms over a 5 s trial.

    python benchmarks/quiet_controller.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

from benchsage.execute.local import LocalWorker
from benchsage.execute.worker import ProcessRequest

BUDGET_MS = 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    command = f"sleep {args.seconds:g}"
    worker = LocalWorker()

    cpu0 = time.process_time()
    subprocess.run(["/bin/sh", "-c", command], check=True)
    baseline_ms = (time.process_time() - cpu0) * 1e3

    cpu0 = time.process_time()
    result = worker.run(ProcessRequest(command=command, cwd=os.getcwd(), timeout=args.seconds * 4))
    bench_ms = (time.process_time() - cpu0) * 1e3
    assert result.ok and result.wall_time >= args.seconds

    print(f"trial: `{command}`, wall {result.wall_time:.3f} s")
    print(f"controller CPU, subprocess.run baseline : {baseline_ms:.3f} ms")
    print(f"controller CPU, benchsage local worker  : {bench_ms:.3f} ms (budget {BUDGET_MS} ms)")
    print(f"ratio benchsage / baseline              : {bench_ms / baseline_ms:.2f}" if baseline_ms > 0 else "baseline used no measurable CPU")
    print("PASS" if bench_ms < BUDGET_MS else "OVER BUDGET")


if __name__ == "__main__":
    main()
