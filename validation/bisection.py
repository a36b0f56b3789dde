"""Monte-Carlo validation of `benchsage bisect` (benchsage.design.bisect).

Simulates searches whose truth is known — n candidate commits, the first bad one drawn
uniformly, every commit from it on performing like bad — through the same code the command uses
(`run_search`, with `measure` drawing values instead of running experiments). A probe's runs hold good,
bad and the probe, each value M (1 + cv e) with e from the named noise shape (median 0), times
(1 + effect) from the first bad commit on. It prints a markdown table: per setting, the
probability of naming a wrong commit (with its 95 % Monte-Carlo interval), how often the
search found the commit, the mean probes (builds - 2) and runs.

    python validation/bisection.py [--reps 400] [--seed 1] [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from benchsage.design.bisect import look_points, run_search

NOISES = ("normal", "lognormal", "t3", "bimodal")


def noise(rng: np.random.Generator, shape: str, size: tuple[int, ...]) -> np.ndarray:
    """Standardised noise of median 0 (scale 1 for the normal)."""
    if shape == "normal":
        return rng.standard_normal(size)
    if shape == "lognormal":  # right-skewed, as latencies are
        return (np.exp(0.8 * rng.standard_normal(size)) - 1.0) / 0.9
    if shape == "t3":  # heavy tails
        return rng.standard_t(3, size) / math.sqrt(3.0)
    if shape == "bimodal":  # a slow mode in one run out of five
        return rng.standard_normal(size) * 0.5 + np.where(rng.random(size) < 0.2, 2.5, 0.0)
    raise ValueError(shape)


@dataclass(frozen=True)
class Outcome:
    named: int | None  # the candidate named first bad, None for "no change" or a range
    probes: int
    runs: int


def simulate_search(rng: np.random.Generator, n: int, first_bad: int | None, effect: float, cv: float, shape: str,
                    alpha: float = 0.05, min_effect: float = 2.0, max_runs: int = 30, looks: int = 3, bias: float = 0.0) -> Outcome:
    """One search over candidates 1..n whose first bad commit is `first_bad` (None: no change),
    through benchsage's own run_search, with simulated values instead of experiments. `bias`:
    each commit's build is off its level by a constant drawn uniformly in +-bias (the same code
    built in another worktree: measurement bias), the same in every run."""
    offset = np.log1p(rng.uniform(-bias, bias, n + 1))

    def level(index: int | None) -> float:
        i = 0 if index is None else index
        return offset[i] + (math.log1p(effect) if first_bad is not None and index is not None and index >= first_bad else 0.0)

    def measure(index: int | None, look: int, count: int) -> np.ndarray:
        columns = (0, n) if index is None else (0, n, index)
        e = noise(rng, shape, (count, len(columns)))
        return np.maximum(1.0 + cv * e, 0.05) * np.exp([level(i) for i in columns])

    out = run_search(n, alpha, min_effect, look_points(max_runs, looks), measure, lambda index: None)
    runs = out.check.values.shape[0] + sum(p.values.shape[0] for p in out.probes)
    named = out.range[1] if out.range is not None and out.range[0] == out.range[1] else None
    return Outcome(named, len(out.probes), runs)


def table(reps: int, seed: int, settings: list[tuple[int, float, float, str, float]], alpha: float = 0.05) -> list[dict[str, object]]:
    rng = np.random.Generator(np.random.PCG64(seed))
    rows = []
    for n, effect, cv, shape, bias in settings:
        wrong = found = probes = runs = 0
        for _ in range(reps):
            truth = int(rng.integers(1, n + 1)) if effect > 0 else None
            out = simulate_search(rng, n, truth, effect, cv, shape, alpha, bias=bias)
            wrong += out.named is not None and out.named != truth
            found += out.named is not None and out.named == truth
            probes += out.probes
            runs += out.runs
        p = wrong / reps
        mc = 1.96 * math.sqrt(max(p * (1 - p), alpha * (1 - alpha)) / reps)
        rows.append({"n": n, "effect": effect, "cv": cv, "noise": shape, "bias": bias, "wrong": p, "mc": mc, "found": found / reps,
                     "probes": probes / reps, "runs": runs / reps})
    return rows


SETTINGS = [(n, eff, 0.03, shape, 0.0) for n in (10, 100, 1000) for eff in (0.06, 0.03) for shape in NOISES] + [
    (48, 0.0, 0.03, shape, 0.0) for shape in NOISES] + [(48, 0.015, 0.03, "normal", 0.0), (48, 0.2, 0.03, "normal", 0.0)] + [
    (48, eff, 0.03, "normal", bias) for bias in (0.015, 0.025) for eff in (0.06, 0.2, 0.4)]  # each build off by up to 1.5 or 2.5 %


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="a few settings, 100 searches each")
    args = ap.parse_args(argv)
    settings = SETTINGS[:4] + SETTINGS[-1:] if args.quick else SETTINGS
    reps = 100 if args.quick else args.reps
    start = time.perf_counter()
    rows = table(reps, args.seed, settings)
    for title, part in (("", [r for r in rows if not r["bias"]]),
                        ("\nOutside the model: every commit's build off its level by a constant (measurement bias)\n",
                         [r for r in rows if r["bias"]])):
        if not part:
            continue
        print(title + "| commits | effect | noise | builds off by | P(wrong commit) | found | probes | runs |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|")
        for r in part:
            off = f"±{float(r['bias']) * 100:.1f} %" if r["bias"] else "-"
            print(f"| {r['n']} | {r['effect'] * 100:.1f} % | {r['noise']} | {off} | "
                  f"{r['wrong']:.3f} (± {r['mc']:.3f}) | {r['found']:.2f} | {r['probes']:.1f} | {r['runs']:.0f} |")
    print(f"\n{reps} searches per row, cv 3 %, alpha 0.05, at most 30 runs per probe in 3 looks; "
          f"{time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
