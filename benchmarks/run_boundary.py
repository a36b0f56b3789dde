"""Cost of a run boundary, and the gap between two trials of a run, against a bare exec loop in the same run.

Runs the same trials of `/bin/true` (exec'd without a shell, on the local worker, with the
agent's defaults: cgroups on where the host allows) through `benchsage run` twice per round:
TESTS tests per run (`--tests`, default 5, `--runs` runs, default 200) and the same number of
trials as one test per run (TESTS x RUNS runs). A reset of `true` runs before every run, as in
users' experiments. Between them, a bare loop of the same number of `/bin/true` execs
(posix_spawn + waitpid from Python: the cheapest exec and wait there is) is timed.

What is measured, from the journal's own times (start-up and analysis never count): the span
from the first trial's `started` to the last trial's `ended`, divided by the trials (the
per-trial cost of each layout), and the run boundary = (span of one test per run - span of
many per run) / (the extra runs): the reset, the snapshot and the journal's bookkeeping of a
run. Its budget is a bare exec + 5 ms. Also printed: the gap between two trials of a run,
`started` of a trial minus `ended` of the one before it in the same attempt (median; budget
0.5 ms), and the first trial's gap after its reset is not among them.

`--command` measures other trials the same way (e.g. `sleep 0.02`: the gap after trials that
leave the CPUs idle); the boundary is then compared with a bare exec of its reset, `true`.

    python benchmarks/run_boundary.py [--runs 200] [--tests 5] [--rounds 3] [--command "sleep 0.02"]
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

BOUNDARY_BUDGET_MS = 5.0  # above a bare exec
GAP_BUDGET_MS = 0.5


def spec_text(tests: int, runs_per_arm: int, command: str = "/bin/true", cpu_latency: int | None = None) -> str:
    body = "\n".join(f'[[test]]\nname = "t{i}"\ncommand = {json.dumps(command)}\n' for i in range(tests))
    latency = "" if cpu_latency is None else f"cpu_latency = {cpu_latency}\n"
    return f'[experiment]\nname = "run-boundary"\nruns = {runs_per_arm}\nseed = 1\n{latency}[reset]\ncommand = "true"\n{body}'


def on_a_terminal(argv: list[str]) -> tuple[int, bytes]:
    """Run argv with its stderr on a pseudo-terminal, as at a user's terminal (benchsage draws
    its progress bar there); (exit status, what it drew)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    return proc.wait(), drawn


def run_experiment(spec: str, workdir: str, terminal: bool = False) -> tuple[float, int, int, list[float]]:
    """(span in s, trials, runs, gaps within runs in s) of one `benchsage run`: quiet, or
    with its progress bar on a (pseudo-)terminal."""
    out = os.path.join(workdir, f"out-{time.monotonic_ns()}")
    argv = [sys.executable, "-m", "benchsage", "run", spec, "-o", out, "--json"]
    if terminal:
        status, said = on_a_terminal(argv)
    else:
        done = subprocess.run(argv + ["--quiet"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        status, said = done.returncode, done.stderr
    if status != 0:
        sys.exit(f"benchsage run exited {status}: {said.decode(errors='replace').strip()[-2000:]}")
    db = sqlite3.connect(os.path.join(out, "journal.sqlite"))
    try:
        span, trials, bad = db.execute("SELECT MAX(ended) - MIN(started), COUNT(*), SUM(status != 'ok') FROM trials").fetchone()
        runs = db.execute("SELECT COUNT(DISTINCT attempt_id) FROM trials").fetchone()[0]
        gaps = [g for (g,) in db.execute(
            "SELECT started - LAG(ended) OVER (PARTITION BY attempt_id ORDER BY id) FROM trials") if g is not None]
    finally:
        db.close()
        shutil.rmtree(out)
    if bad:
        sys.exit(f"{bad} of {trials} trials did not succeed")
    return span, trials, runs, gaps


def bare_loop(n: int, command: str = "/bin/true") -> float:
    """Seconds per exec of `command` by posix_spawn + waitpid, in a fresh Python."""
    argv = shlex.split(command)
    argv[0] = shutil.which(argv[0]) or argv[0]
    code = (
        "import os, time\n"
        "t = time.perf_counter()\n"
        f"for _ in range({n}):\n"
        f"    os.waitpid(os.posix_spawn({argv[0]!r}, {argv!r}, os.environ), 0)\n"
        "print(time.perf_counter() - t)\n"
    )
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="runs of the many-tests layout (even: half per arm)")
    parser.add_argument("--tests", type=int, default=5, help="tests per run of the many-tests layout")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians printed)")
    parser.add_argument("--command", default="/bin/true", help="every test's command, exec'd without a shell (default /bin/true; "
                        "e.g. 'sleep 0.02': the gap after trials that leave the CPUs idle)")
    parser.add_argument("--terminal", action="store_true", help="run the experiments with their progress bar on a "
                        "pseudo-terminal, as at a user's terminal (default: --quiet)")
    parser.add_argument("--cpu-latency", type=int, metavar="US", help="hold this PM QoS CPU latency limit: the experiments "
                        "with [experiment] cpu_latency, the bare loops under the same limit held by this script (root)")
    args = parser.parse_args()
    held = -1
    if args.cpu_latency is not None:  # the bare loops measured under the limit the experiments hold
        held = os.open("/dev/cpu_dma_latency", os.O_WRONLY | os.O_CLOEXEC)
        os.write(held, args.cpu_latency.to_bytes(4, "little", signed=True))
    runs_per_arm = max(1, args.runs // 2)
    trials = 2 * runs_per_arm * args.tests
    many, single, bare, bare_reset, gaps = [], [], [], [], []
    extra_runs = 0
    with tempfile.TemporaryDirectory() as workdir:
        specs = {}
        for name, tests, per_arm in (("many", args.tests, runs_per_arm), ("single", 1, trials // 2)):
            specs[name] = os.path.join(workdir, f"{name}.toml")
            with open(specs[name], "w") as fh:
                fh.write(spec_text(tests, per_arm, args.command, args.cpu_latency))
        for _ in range(args.rounds):
            bare.append(bare_loop(trials, args.command))
            # a run boundary holds the reset (`true`): what it costs above that exec
            bare_reset.append(bare[-1] if args.command == "/bin/true" else bare_loop(trials, "/bin/true"))
            span_m, n_m, runs_m, gaps_m = run_experiment(specs["many"], workdir, args.terminal)
            span_s, n_s, runs_s, _ = run_experiment(specs["single"], workdir, args.terminal)
            if n_m != n_s:
                sys.exit(f"the layouts ran {n_m} and {n_s} trials")
            many.append(span_m / n_m)
            single.append(span_s / n_s)
            gaps.extend(gaps_m)
            extra_runs = runs_s - runs_m
    med = statistics.median
    bare_ms = med(bare) * 1e3
    boundary_ms = (med(single) - med(many)) * trials / extra_runs * 1e3
    gap_ms = med(gaps) * 1e3
    latency = "" if args.cpu_latency is None else f"; CPU latency limit {args.cpu_latency} us held"
    latency += "; progress bar on a terminal" if args.terminal else ""
    print(f"{trials} trials of {args.command}, {args.rounds} rounds (medians); cgroups as the agent's default{latency}")
    print(f"bare loop (posix_spawn + waitpid)     : {bare_ms:7.3f} ms per exec")
    print(f"{f'{args.tests} tests per run ({2 * runs_per_arm} runs)':38}: {med(many) * 1e3:7.3f} ms per trial "
          f"({med(many) * 1e3 / bare_ms:.1f}x the bare loop)")
    print(f"{f'1 test per run ({trials} runs)':38}: {med(single) * 1e3:7.3f} ms per trial "
          f"({med(single) * 1e3 / bare_ms:.1f}x the bare loop)")
    over = boundary_ms - med(bare_reset) * 1e3
    print(f"run boundary                          : {boundary_ms:7.3f} ms ({over:+.3f} ms above a bare exec of its reset; "
          f"budget +{BOUNDARY_BUDGET_MS} ms): {'PASS' if over <= BOUNDARY_BUDGET_MS else 'FAIL'}")
    print(f"gap between trials of a run, median   : {gap_ms:7.3f} ms (budget {GAP_BUDGET_MS} ms): "
          f"{'PASS' if gap_ms <= GAP_BUDGET_MS else 'FAIL'}")
    return 0 if over <= BOUNDARY_BUDGET_MS and gap_ms <= GAP_BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
