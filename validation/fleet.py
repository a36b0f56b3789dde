"""Monte-Carlo validation of benchsage's fleet analysis: the combined verdict stratified by worker.

Simulates fleet experiments whose truth is known: W workers whose levels differ (log-spaced from
1x to `--spread`x, as the paper's identical-looking servers 3x apart), k tests, N runs per arm
on every worker (each worker carries out the whole plan), lognormal noise with a CV of 2-5 %.
Each experiment is analysed with benchsage's own code (`analyze_table`, which stratifies by
worker: van Elteren's test) and, for comparison, with every worker pooled into one
Kruskal-Wallis test (OrderSage's way: the same table without its worker column). It prints:

1. the false-positive rate with no order effect (family-wise over the k tests, Bonferroni, and
   one test alone), on a balanced fleet and on fleets where the slowest worker lost a share of
   its random-arm runs (a lost worker: then the arms no longer hold the workers in equal shares);
2. the power against an order effect of x % (one test's fixed-arm values x (1 + x) on every
   worker), stratified vs pooled.

    python validation/fleet.py [--quick] [--reps-null R] [--reps-power R] [--workers 4]
                               [--spread 3] [--runs 10,20] [--effects 1,2,5] [--lost 0.5,0.8] [--seed 1] [--json FILE]

Many experiments are analysed in one call (each gets its own test names); the raw p-values are
then corrected experiment by experiment with benchsage's `adjust`, as `analyze_table` corrects one
experiment's family.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats as sps

from benchsage.analyze.order import analyze_table
from benchsage.stats import adjust
from benchsage.store.table import TrialTable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # montecarlo.py, beside this script
from montecarlo import Rate, rate  # noqa: E402

ALPHA = 0.05
MAX_ROWS_PER_BATCH = 2_000_000


@dataclass(frozen=True)
class Fleet:
    """One simulated fleet experiment's shape."""

    workers: int = 4
    spread: float = 3.0  # slowest worker's level / fastest's
    tests: int = 10
    runs: int = 10  # per arm, on every worker
    cv_low: float = 0.02
    cv_high: float = 0.05
    effect: float = 0.0  # relative shift of test 0's fixed-arm values, on every worker
    lost: float = 0.0  # share of the slowest worker's random-arm runs that are missing

    @property
    def levels(self) -> np.ndarray:
        return np.geomspace(1.0, self.spread, self.workers)


def simulate(fleet: Fleet, reps: int, rng: np.random.Generator) -> TrialTable:
    """`reps` experiments in one table; test r * k + j is test j of experiment r."""
    k, w, n = fleet.tests, fleet.workers, fleet.runs
    median = np.exp(rng.uniform(np.log(0.01), np.log(100.0), (reps, k)))
    sigma = np.sqrt(np.log1p(rng.uniform(fleet.cv_low, fleet.cv_high, (reps, k)) ** 2))
    # Axes: experiment, test, worker, arm, run.
    shape = (reps, k, w, 2, n)
    noise = rng.standard_normal(shape)
    value = median[:, :, None, None, None] * fleet.levels[None, None, :, None, None] * np.exp(sigma[:, :, None, None, None] * noise)
    value[:, 0, :, 0, :] *= 1.0 + fleet.effect
    keep = np.ones(shape, dtype=bool)
    if fleet.lost > 0:
        keep[:, :, w - 1, 1, : int(round(n * fleet.lost))] = False
    test = np.broadcast_to(np.arange(reps)[:, None, None, None, None] * k + np.arange(k)[None, :, None, None, None], shape)
    worker = np.broadcast_to(np.arange(w)[None, None, :, None, None], shape)
    arm = np.broadcast_to(np.arange(2)[None, None, None, :, None], shape)
    return TrialTable(
        test_names=tuple(f"e{r}t{j}" for r in range(reps) for j in range(k)),
        metric_names=("value",),
        worker_names=tuple(f"w{i}" for i in range(w)),
        test=test[keep].astype(np.int32),
        metric=np.zeros(int(keep.sum()), dtype=np.int32),
        arm=arm[keep].astype(np.int8),
        value=value[keep],
        run=np.full(int(keep.sum()), -1, dtype=np.int64),
        position=np.full(int(keep.sum()), -1, dtype=np.int32),
        predecessor=np.full(int(keep.sum()), -2, dtype=np.int32),
        worker=worker[keep].astype(np.int32),
        time=np.full(int(keep.sum()), np.nan),
        primary=np.ones(int(keep.sum()), dtype=bool),
    )


def pooled(table: TrialTable) -> TrialTable:
    """The same values with every worker's trials pooled (OrderSage's analysis)."""
    import dataclasses

    return dataclasses.replace(table, worker=np.zeros(len(table), dtype=np.int32), worker_names=("all",))


def p_values(fleet: Fleet, reps: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Raw p-values (reps, k) of every test, stratified and pooled, in batches."""
    per = max(1, MAX_ROWS_PER_BATCH // (fleet.tests * fleet.workers * 2 * fleet.runs))
    out: dict[str, list[np.ndarray]] = {"stratified": [], "pooled": []}
    for start in range(0, reps, per):
        size = min(per, reps - start)
        table = simulate(fleet, size, rng)
        for name, t in (("stratified", table), ("pooled", pooled(table))):
            analysis = analyze_table(t)
            p = np.array([v.kw_p if v.kw_p is not None else np.nan for v in analysis.tests])
            out[name].append(p.reshape(size, fleet.tests))
    return {name: np.concatenate(parts) for name, parts in out.items()}


def family_rejects(p: np.ndarray) -> np.ndarray:
    """Each experiment's tests corrected as one family (Bonferroni, benchsage's adjust)."""
    out = np.zeros(p.shape, dtype=bool)
    for r in range(p.shape[0]):
        out[r] = adjust(p[r], "bonferroni", ALPHA).reject
    return out






@dataclass(frozen=True)
class NullRow:
    runs: int
    lost: float
    family: dict[str, Rate]  # method -> share of experiments with any significant test
    single: dict[str, Rate]  # method -> share of tests with raw p <= alpha


@dataclass(frozen=True)
class PowerRow:
    runs: int
    effect: float
    power: dict[str, Rate]  # method -> share of experiments where the affected test is significant


def run_null(fleet: Fleet, reps: int, rng: np.random.Generator) -> NullRow:
    p = p_values(fleet, reps, rng)
    return NullRow(
        fleet.runs,
        fleet.lost,
        {m: rate(family_rejects(v).any(axis=1)) for m, v in p.items()},
        {m: rate(np.nan_to_num(v, nan=1.0) <= ALPHA) for m, v in p.items()},
    )


def run_power(fleet: Fleet, reps: int, rng: np.random.Generator) -> PowerRow:
    p = p_values(fleet, reps, rng)
    return PowerRow(fleet.runs, fleet.effect, {m: rate(family_rejects(v)[:, 0]) for m, v in p.items()})


def _pct(r: Rate) -> str:
    return f"{100 * r.rate:.1f} % [{100 * r.ci[0]:.1f}, {100 * r.ci[1]:.1f}]"


def render(base: Fleet, nulls: Sequence[NullRow], powers: Sequence[PowerRow], reps_null: int, reps_power: int) -> str:
    levels = ", ".join(f"{x:.2f}" for x in base.levels)
    out = [
        f"Fleet: {base.workers} workers at levels {levels} (x), {base.tests} tests, CV {100 * base.cv_low:g}-{100 * base.cv_high:g} %, "
        f"alpha = {ALPHA} family-wise (Bonferroni over the {base.tests} tests)",
        "",
        f"False positives, no order effect ({reps_null:,} experiments per row; 95 % Clopper-Pearson intervals):",
        "",
        "| N runs/arm per worker | fleet | stratified (benchsage), family-wise | pooled KW, family-wise | stratified, one test | pooled KW, one test |",
        "|---|---|---|---|---|---|",
    ]
    for row in nulls:
        kind = "balanced" if row.lost == 0 else f"slowest worker lost {100 * row.lost:g} % of its random runs"
        out.append(f"| {row.runs} | {kind} | {_pct(row.family['stratified'])} | {_pct(row.family['pooled'])} | "
                   f"{_pct(row.single['stratified'])} | {_pct(row.single['pooled'])} |")
    out += [
        "",
        f"Power: test 0's fixed-arm values x (1 + effect) on every worker; share of experiments in which it is significant "
        f"after the correction ({reps_power:,} experiments per row):",
        "",
        "| N runs/arm per worker | effect | stratified (benchsage) | pooled KW |",
        "|---|---|---|---|",
    ]
    for row in powers:
        out.append(f"| {row.runs} | {100 * row.effect:g} % | {_pct(row.power['stratified'])} | {_pct(row.power['pooled'])} |")
    return "\n".join(out)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions: a smoke run of a few seconds")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--spread", type=float, default=3.0, help="slowest worker / fastest worker (default %(default)s)")
    parser.add_argument("--tests", type=int, default=10)
    parser.add_argument("--runs", default="10,20", help="runs per arm per worker, comma-separated (default %(default)s)")
    parser.add_argument("--effects", default="1,2,5", help="order effects in %%, comma-separated (default %(default)s)")
    parser.add_argument("--lost", default="0.5,0.8", help="shares of random runs the slowest worker lost, one unbalanced row each (default %(default)s)")
    parser.add_argument("--reps-null", type=int, default=None, help="experiments per null row (default 4000, --quick 300)")
    parser.add_argument("--reps-power", type=int, default=None, help="experiments per power row (default 1000, --quick 150)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=None, help="also write the results as JSON to this file")
    args = parser.parse_args(argv)
    lost_shares = _floats(args.lost)
    if args.workers < 2 or args.spread < 1 or not all(0 <= x < 1 for x in lost_shares):
        print("fleet.py: error: --workers must be >= 2, --spread >= 1 and --lost in [0, 1)", file=sys.stderr)
        return 2
    reps_null = args.reps_null or (300 if args.quick else 4000)
    reps_power = args.reps_power or (150 if args.quick else 1000)
    rng = np.random.default_rng(args.seed)
    base = Fleet(workers=args.workers, spread=args.spread, tests=args.tests)
    started = time.perf_counter()
    nulls, powers = [], []
    for runs in _ints(args.runs):
        for lost in (0.0, *lost_shares):
            nulls.append(run_null(Fleet(**{**asdict(base), "runs": runs, "lost": lost}), reps_null, rng))
        for effect in _floats(args.effects):
            powers.append(run_power(Fleet(**{**asdict(base), "runs": runs, "effect": effect / 100}), reps_power, rng))
    print(render(base, nulls, powers, reps_null, reps_power))
    print(f"\n({time.perf_counter() - started:.0f} s; command: python validation/fleet.py {' '.join(argv if argv is not None else sys.argv[1:])})")
    if args.json:
        doc: dict[str, Any] = {"fleet": asdict(base), "levels": base.levels.tolist(), "null": [asdict(r) for r in nulls],
                               "power": [asdict(r) for r in powers], "reps_null": reps_null, "reps_power": reps_power, "seed": args.seed}
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
