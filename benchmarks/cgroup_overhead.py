"""Cost of a trial's cgroup in a real experiment: `benchsage run` with and without cgroups, in one run.

Runs the same experiment (trials of `/bin/true N`, exec'd without a shell, on the local
worker) through `benchsage run` with the agent's cgroups on and with BENCHSAGE_CGROUPS=off
(set in the environment of `benchsage`, which the agent inherits), in blocks that alternate
on, off, off, on, on, off, ... so that drift of the machine hits both alike. Budget: the
cgroup (create or reuse, join, read, kill leftovers, remove) adds under 0.3 ms per trial.

What is measured: the spacing of consecutive trials of a run, `started` of trial i+1 minus
`started` of trial i in the journal (both taken by the agent's clock, `time.time()` as
run_process begins, before it prepares the trial's cgroup). One spacing is one whole cycle:
cgroup create and fork, the child joining the cgroup and exec'ing, the wait, reading and
removing the cgroup, the reply, the controller's journal commit and the next request. Only
trials of the same attempt are paired, so resets and start-up never enter, but the first
trial after a reset does. The verdict is on the mean spacing with cgroups minus the mean
without (the time the cgroups add to an experiment, divided by its trials); the medians are
printed too, as the cost of a typical trial. They would differ if the cost were uneven: moving
a process into a cgroup through cgroup.procs takes the kernel's cgroup_threadgroup_rwsem for
writing, and when no process has moved between cgroups on the host for a while (tens of ms:
after a reset, or between trials longer than that) the kernel first waits for an RCU grace
period, 5-20 ms here (rcu_sync_enter -> synchronize_rcu). On cgroup v1 the agent's child joins
through `tasks` instead (it moves one thread, all a forked child has, without that lock), and the
first trial of each run, printed on its own, shows whether that holds. That wait would be
outside the trial's wall_time (the child joins before the exec that starts the clock) but not
outside the experiment.
`--command 'sleep 0.05{i:02d}'` shows the case of longer trials.

Cross-checks, printed with the verdict: the difference split into `started` to `ended`
(cgroup create, fork, join, the trial; `ended` is taken before the agent reads and removes the
cgroup) and `ended` to the next `started` (read, kill leftovers, remove, journal); the first
trial of each run on its own; the trials' own wall_time (the cgroup must not change what a
trial measures); and the elapsed time of each `benchsage run` divided by its trials (start-up
and analysis included, so only the difference means something).

"Without cgroups" is what the agent really does then: it becomes the child subreaper and lists
its children (/proc/self/task/PID/children) before and after each trial to find leftovers. That
work is in the baseline, so the difference is the cgroup's cost above that fallback, which is
what turning cgroups on costs a user.

Each block is checked: with cgroups every trial has `peak_memory` and `cpu_time` in
trial_values and the snapshot names the cgroup method; without, none has them. Exit 0 within
budget, 1 over it, 2 when it could not measure (no cgroups on this host, a run failed, or a
block measured the wrong way).

    python benchmarks/cgroup_overhead.py [--trials 500] [--blocks 6] [--tests 50] [--command '/bin/true {i}']
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

BUDGET_MS = 0.3
CGROUPS_ENV = "BENCHSAGE_CGROUPS"


class NotMeasured(Exception):
    """The benchmark could not measure what it should (exit 2); str() says why."""


@dataclass(frozen=True)
class Block:
    """One `benchsage run` of the experiment and what its journal recorded."""

    cgroups: bool
    trials: int
    spacing: list[float]  # seconds, started(i+1) - started(i) within an attempt
    inside: list[float]  # ended(i) - started(i)
    between: list[float]  # started(i+1) - ended(i)
    first: list[float]  # ended - started of each run's first trial (after the reset)
    wall_time: list[float]  # the trials' own wall_time
    elapsed: float  # the benchsage process, start to exit
    method: str | None  # the cgroup method in the snapshot, None without


def spec_text(command: str, tests: int, runs_per_arm: int) -> str:
    body = "\n".join(f'[[test]]\nname = "t{i}"\ncommand = "{command.format(i=i)}"\n' for i in range(tests))
    return f'[experiment]\nname = "cgroup-overhead"\nruns = {runs_per_arm}\nseed = 1\n[reset]\ncommand = "true"\n{body}'


def run_block(spec: str, workdir: str, cgroups: bool) -> Block:
    out = os.path.join(workdir, f"out-{time.monotonic_ns()}")
    env = dict(os.environ)
    env.pop(CGROUPS_ENV, None)
    if not cgroups:
        env[CGROUPS_ENV] = "off"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", spec, "-o", out, "--quiet", "--json"],
                          env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise NotMeasured(f"benchsage run exited {done.returncode}: {done.stderr.decode(errors='replace').strip()}")
    try:
        return read_block(os.path.join(out, "journal.sqlite"), cgroups, elapsed)
    finally:
        shutil.rmtree(out)


def read_block(journal: str, cgroups: bool, elapsed: float) -> Block:
    db = sqlite3.connect(journal)
    try:
        rows = db.execute(
            "SELECT started - LAG(started) OVER w, started - LAG(ended) OVER w, ended - started, wall_time, status,"
            " position"
            " FROM trials WINDOW w AS (PARTITION BY attempt_id ORDER BY id) ORDER BY id"
        ).fetchall()
        measured = dict(db.execute(
            "SELECT metric, COUNT(*) FROM trial_values WHERE metric IN ('peak_memory', 'cpu_time') GROUP BY metric"
        ).fetchall())
        snapshots = [json.loads(s) for (s,) in db.execute("SELECT snapshot FROM attempts WHERE snapshot IS NOT NULL")]
    finally:
        db.close()
    bad = [r[4] for r in rows if r[4] != "ok"]
    if bad:
        raise NotMeasured(f"{len(bad)} of {len(rows)} trials did not succeed (first: {bad[0]})")
    methods = {(s.get("measurement") or {}).get("cgroup") for s in snapshots}
    method = methods.pop() if len(methods) == 1 else None
    want = len(rows) if cgroups else 0
    if measured.get("peak_memory", 0) != want or measured.get("cpu_time", 0) != want or (method is not None) != cgroups:
        reason = next(((s.get("measurement") or {}).get("cgroup_reason") for s in snapshots), None)
        raise NotMeasured(
            f"the run {'with' if cgroups else 'without'} cgroups recorded peak_memory for "
            f"{measured.get('peak_memory', 0)} and cpu_time for {measured.get('cpu_time', 0)} of {len(rows)} trials "
            f"(cgroup method in the snapshots: {sorted(map(str, methods | {method}))}; agent says: {reason})")
    pairs = [r for r in rows if r[0] is not None]
    return Block(
        cgroups=cgroups,
        trials=len(rows),
        spacing=[r[0] for r in pairs],
        inside=[r[2] for r in rows],
        between=[r[1] for r in pairs],
        first=[r[2] for r in rows if r[5] == 0],
        wall_time=[r[3] for r in rows],
        elapsed=elapsed,
        method=method,
    )


def pooled(blocks: list[Block], field: str, how: Callable[[Iterable[float]], float] = statistics.median) -> float:
    """`how` (median, mean) over every trial of `blocks`, in ms."""
    return how(v for b in blocks for v in getattr(b, field)) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=500, help="trials per block (rounded to whole runs)")
    parser.add_argument("--blocks", type=int, default=6, help="blocks of each kind (with and without cgroups)")
    parser.add_argument("--tests", type=int, default=50, help="tests per run (trials per run)")
    parser.add_argument("--command", default="/bin/true {i}",
                        help="each test's command, {i} its number (commands must differ): e.g. 'sleep 0.05{i:02d}'")
    parser.add_argument("--warmup", type=int, default=1, help="untimed pairs of blocks first")
    args = parser.parse_args()
    runs_per_arm = max(1, args.trials // (2 * args.tests))
    per_block = 2 * runs_per_arm * args.tests
    on: list[Block] = []
    off: list[Block] = []
    try:
        with tempfile.TemporaryDirectory() as workdir:
            spec = os.path.join(workdir, "spec.toml")
            with open(spec, "w") as fh:
                fh.write(spec_text(args.command, args.tests, runs_per_arm))
            for _ in range(args.warmup):
                run_block(spec, workdir, True)
                run_block(spec, workdir, False)
            for pair in range(args.blocks):
                # on, off, off, on, ...: a linear drift adds the same to both kinds
                for cgroups in ((True, False) if pair % 2 == 0 else (False, True)):
                    block = run_block(spec, workdir, cgroups)
                    (on if cgroups else off).append(block)
    except NotMeasured as exc:
        print(f"could not measure: {exc}", file=sys.stderr)
        return 2

    mean, median = statistics.fmean, statistics.median
    added = pooled(on, "spacing", mean) - pooled(off, "spacing", mean)
    steady = pooled(on, "spacing") - pooled(off, "spacing")
    verdict = "PASS" if added < BUDGET_MS else "FAIL"
    print(f"experiment: {per_block} trials of {args.command!r} per block ({args.tests} tests x "
          f"{2 * runs_per_arm} runs), {args.blocks} blocks with and {args.blocks} without cgroups, alternating; "
          f"cgroup method: {on[0].method}")
    print(f"{'ms':52} {'cgroups':>9} {CGROUPS_ENV + '=off':>22} {'added':>8}")
    rows = [
        ("spacing of consecutive trials, median", pooled(on, "spacing"), pooled(off, "spacing")),
        ("spacing of consecutive trials, mean", pooled(on, "spacing", mean), pooled(off, "spacing", mean)),
        ("  started -> ended (create, fork, join, trial), mean", pooled(on, "inside", mean), pooled(off, "inside", mean)),
        ("  ended -> next started (read, remove, journal), mean", pooled(on, "between", mean), pooled(off, "between", mean)),
        ("first trial of each run, started -> ended, median", pooled(on, "first"), pooled(off, "first")),
        ("trial wall_time (what the trial reports), median", pooled(on, "wall_time"), pooled(off, "wall_time")),
        ("whole benchsage run / trials (start-up included)", median(b.elapsed for b in on) / per_block * 1e3,
         median(b.elapsed for b in off) / per_block * 1e3),
    ]
    for name, with_, without in rows:
        print(f"{name:52} {with_:9.3f} {without:22.3f} {with_ - without:+8.3f}")
    pair_diffs = [(mean(a.spacing) - mean(b.spacing)) * 1e3 for a, b in zip(on, off)]
    print(f"added per pair of blocks (mean spacing): {', '.join(f'{d:+.3f}' for d in pair_diffs)}")
    print(f"ratio of mean spacings: {pooled(on, 'spacing', mean) / pooled(off, 'spacing', mean):.3f}; "
          f"of medians: {pooled(on, 'spacing') / pooled(off, 'spacing'):.3f}")
    print(f"typical trial (median spacing): {steady:+.3f} ms: {'within' if steady < BUDGET_MS else 'over'} budget")
    print(f"added by the cgroup per trial (mean spacing): {added:.3f} ms (budget {BUDGET_MS} ms): {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
