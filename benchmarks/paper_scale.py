"""Paper-scale analysis: benchsage vs the paper's notebook analysis, on the same file, in one run.

Generates the paper-shaped tidy CSV if it is missing (generate_paper_dataset.py: 1,880 tests,
2.3 M trials), then times, one after the other and each in its own process, two baselines
(notebook_baseline.py) and `benchsage analyze FILE --format tidy --json`, end to end
(interpreter start, imports and parsing included): the paper notebook's analysis cells, which
the budget names (at least 10x faster than it and under 1 GiB: PASS or FAIL), and
its Kruskal-Wallis and CI loops alone, a stricter yardstick whose ratio is printed too. Each
child's peak memory is its own ru_maxrss, read with wait4 on that child alone. Checks that all
call the same tests significant.

    python benchmarks/paper_scale.py [--tests 1880] [--trials 2300000] [--repeat 1] [--both | --no-diagnostics]

Exit status: 0 when both analyses reach the same decisions (whatever the timings), 1 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate_paper_dataset as gen  # noqa: E402

SPEEDUP_BUDGET = 10.0
MEMORY_BUDGET_MIB = 1024.0


@dataclass(frozen=True)
class Measurement:
    seconds: float
    peak_mib: float
    stdout: str


def measure(cmd: list[str], workdir: str) -> Measurement:
    """Run cmd to completion; wall time and the peak RSS of that child (and its waited-for children)."""
    stamp = time.monotonic_ns()
    out_path, err_path = os.path.join(workdir, f"stdout-{stamp}"), os.path.join(workdir, f"stderr-{stamp}")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        # wait4 on this pid alone: RUSAGE_CHILDREN would mix the peaks of all children so far.
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = Path(out_path).read_text()
    errors = Path(err_path).read_text().strip().splitlines()[-15:]
    os.unlink(out_path)
    os.unlink(err_path)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited with {proc.returncode}:\n" + "\n".join(errors))
    return Measurement(elapsed, usage.ru_maxrss / 1024.0, text)  # ru_maxrss is in KiB on Linux


def benchsage_command() -> list[str]:
    """`benchsage` from the interpreter's own environment, as a user would type it."""
    script = Path(sys.executable).with_name("benchsage")
    return [str(script)] if script.exists() else [sys.executable, "-m", "benchsage"]


def baseline_decisions(text: str) -> dict[tuple[str, str], tuple[bool, float]]:
    rows = list(csv.DictReader(text.splitlines()))
    return {(r["test"], r.get("metric", "value")): (r["significant"] == "True", float(r["kw_p"] or "nan")) for r in rows}


def benchsage_decisions(text: str) -> dict[tuple[str, str], tuple[bool, float]]:
    doc = json.loads(text)
    return {
        (t["test"], t["metric"]): (bool(t["significant"]), float("nan") if t["kw_p"] is None else float(t["kw_p"]))
        for t in doc["tests"]
        if t.get("primary", True)
    }


def compare(base: dict[tuple[str, str], tuple[bool, float]], ours: dict[tuple[str, str], tuple[bool, float]]) -> list[str]:
    """Lines describing every disagreement; empty when the decisions are identical."""
    problems: list[str] = []
    if set(base) != set(ours):
        only_b, only_o = sorted(set(base) - set(ours)), sorted(set(ours) - set(base))
        problems.append(f"different tests: {len(only_b)} only in the baseline {only_b[:3]}, {len(only_o)} only in benchsage {only_o[:3]}")
    for key in sorted(set(base) & set(ours)):
        if base[key][0] != ours[key][0]:
            problems.append(f"{key[0]} [{key[1]}]: baseline says {base[key][0]} (p={base[key][1]:.6g}), benchsage {ours[key][0]} (p={ours[key][1]:.6g})")
    return problems


def max_relative_p_difference(base: dict[tuple[str, str], tuple[bool, float]], ours: dict[tuple[str, str], tuple[bool, float]]) -> float:
    worst = 0.0
    for key in set(base) & set(ours):
        a, b = base[key][1], ours[key][1]
        if a == a and b == b and max(a, b) > 0:  # both defined
            worst = max(worst, abs(a - b) / max(a, b))
    return worst


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{cpu}; {os.cpu_count()} CPUs; load average {load}; Python {platform.python_version()}"


def analysis_path(path: Path) -> str:
    """Which analysis `benchsage analyze` gives this file, by its size (api.STREAM_BYTES)."""
    from benchsage.api import STREAM_BYTES

    if path.stat().st_size >= STREAM_BYTES:
        return f"read block by block and analysed in batches (file >= {STREAM_BYTES / 2**20:.0f} MiB; in memory if the batched path declines it)"
    return f"read and analysed in memory (file < {STREAM_BYTES / 2**20:.0f} MiB)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=gen.DEFAULT_TESTS)
    parser.add_argument("--trials", type=int, default=gen.DEFAULT_TRIALS)
    parser.add_argument("--seed", type=int, default=gen.DEFAULT_SEED)
    parser.add_argument("--file", type=Path, default=None, help="analyze this tidy CSV instead of the generated one")
    parser.add_argument("--repeat", type=int, default=1, help="measure each command this many times, interleaved (median reported)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--no-diagnostics", action="store_true", help="time `benchsage analyze --no-diagnostics` instead of the default command")
    group.add_argument("--both", action="store_true", help="time the default command and --no-diagnostics")
    args = parser.parse_args()

    path = args.file or gen.default_path(args.tests, args.trials, args.seed)
    if not path.exists():
        print(f"generating {path} ...", flush=True)
        # In a child of its own: a child's ru_maxrss starts at its parent's peak (the exec
        # records the forked memory's high-water mark), and generating grows this process.
        subprocess.run([sys.executable, str(HERE / "generate_paper_dataset.py"), "--tests", str(args.tests), "--trials", str(args.trials),
                        "--seed", str(args.seed), "-o", str(path)], check=True, stdout=subprocess.DEVNULL)
    size_mib = path.stat().st_size / 2**20
    with open(path, "rb") as fh:  # both children then read the file from the page cache
        while fh.read(1 << 24):
            pass

    baselines = {
        "baseline: paper notebook": [sys.executable, str(HERE / "notebook_baseline.py"), str(path), "--cells", "notebook"],
        "baseline: its KW + CI loops only": [sys.executable, str(HERE / "notebook_baseline.py"), str(path), "--cells", "kruskal-ci"],
    }
    budget_base, strict_base = baselines
    default_cmd = [*benchsage_command(), "analyze", str(path), "--format", "tidy", "--json"]
    variants: dict[str, list[str]] = {}
    if not args.no_diagnostics:
        variants["benchsage analyze (default)"] = default_cmd
    if args.no_diagnostics or args.both:
        variants["benchsage analyze --no-diagnostics"] = [*default_cmd, "--no-diagnostics"]

    print(f"file: {path} ({size_mib:.0f} MiB)")
    print(f"machine: {machine()}")
    print(f"benchsage: {analysis_path(path)}")
    commands = {**baselines, **variants}
    results: dict[str, list[Measurement]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(max(1, args.repeat)):
            for name, cmd in commands.items():
                results[name].append(measure(cmd, workdir))

    seconds = {name: statistics.median(m.seconds for m in runs) for name, runs in results.items()}
    base_decisions = baseline_decisions(results[budget_base][-1].stdout)
    n_sig = sum(sig for sig, _ in base_decisions.values())
    print(f"tests compared: {len(base_decisions)}; baseline significant: {n_sig}")
    print(f"{'command':40s} {'seconds':>9s} {'speedup':>8s} {'vs loops':>9s} {'peak MiB':>9s}")
    agree = True
    verdicts: list[str] = []
    for name in baselines:
        problems = compare(base_decisions, baseline_decisions(results[name][-1].stdout))
        agree = agree and not problems
        verdicts.extend(f"{name}: {line}" for line in problems[:10])
    for name in commands:
        runs = results[name]
        t = seconds[name]
        peak = max(m.peak_mib for m in runs)
        ratio, strict = seconds[budget_base] / t, seconds[strict_base] / t
        print(f"{name:40s} {t:9.2f} {ratio:7.1f}x {strict:8.1f}x {peak:9.0f}")
        if name in baselines:
            continue
        ours = benchsage_decisions(runs[-1].stdout)
        problems = compare(base_decisions, ours)
        same = not problems
        agree = agree and same
        ok = same and ratio >= SPEEDUP_BUDGET and peak < MEMORY_BUDGET_MIB
        verdicts.append(
            f"{name}: decisions {'identical' if same else f'DIFFER in {len(problems)} cases'} "
            f"(max relative p difference {max_relative_p_difference(base_decisions, ours):.1e}); "
            f"speedup {ratio:.1f}x the paper notebook (budget >= {SPEEDUP_BUDGET:.0f}x), {strict:.1f}x its KW + CI loops alone; "
            f"peak {peak:.0f} MiB (budget < {MEMORY_BUDGET_MIB:.0f} MiB): {'PASS' if ok else 'FAIL'}"
        )
        for line in problems[:10]:
            verdicts.append(f"  {line}")
    if args.repeat > 1:
        print(f"(median of {args.repeat} interleaved repetitions; peak = the largest of them)")
    print("\n".join(verdicts))
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
