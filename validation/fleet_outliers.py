"""Monte-Carlo validation of the fleet diagnostic's outliers: is the odd machine named, and only it?

Simulates fleets whose truth is known: W workers, one of them (the last) `odd` x slower on every
test (a build 50 % slower), k = 3 tests, each measured `values` times on every worker, lognormal
noise of a CV of 10-30 % (a loaded machine). Each fleet goes through benchsage's own
`fleet_rows` (the Kruskal-Wallis gate over the tests, then Dunn's pairs stepped down by
Shaffer's method at the gate's Bonferroni share; analyze/fleet.py), and for comparison through
the rule it replaces (Holm over the pairs at that share). It prints:

1. the share of (fleet, test) rows in which the odd worker is named, alone, and in which a normal
   worker is named;
2. the false-naming rate of an agreeing fleet: the share of fleets in which any worker is named
   for any test (family-wise; at most alpha is the promise).

    python validation/fleet_outliers.py [--quick] [--reps-null R] [--reps-power R] [--seed 1] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
from scipy import stats as sps

from benchsage.analyze.fleet import fleet_rows
from benchsage.stats import adjust, dunn
from benchsage.store.table import TrialTable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # montecarlo.py, beside this script
from montecarlo import Rate, rate  # noqa: E402

ALPHA = 0.05
TESTS = 3






@dataclass(frozen=True)
class Row:
    workers: int
    values: int
    cv: float
    odd: float
    named: Rate  # benchsage: the odd worker named, alone (per test row); agreeing fleets: any worker, per fleet
    named_holm: Rate  # the same with Holm over the pairs (the rule before)
    wrong: Rate  # a normal worker named (per test row)
    wrong_holm: Rate


def fleet(rng: np.random.Generator, workers: int, values: int, cv: float, odd: float) -> TrialTable:
    sigma = math.sqrt(math.log1p(cv * cv))
    level = np.ones(workers)
    level[-1] = odd
    shape = (workers, values, TESTS)
    value = level[:, None, None] * (1.0 + np.arange(TESTS))[None, None, :] * np.exp(sigma * rng.standard_normal(shape))
    w, r, t = np.indices(shape).reshape(3, -1)
    return TrialTable.from_columns(test=[f"t{x}" for x in t], arm=np.where(r % 2 == 0, "fixed", "random").tolist(),
                                   value=value.ravel(), worker=[f"w{x + 1}" for x in w], run=1000 * w + r, position=t)


def holm_outliers(table: TrialTable, significant: dict[str, bool], workers: int) -> dict[str, tuple[str, ...]]:
    """The rule before: Dunn's pairs, Holm over them at the Bonferroni share, after the same gate."""
    pairs = dunn(table.value, table.test.astype(np.int64), table.worker.astype(np.int64), len(table.test_names), workers)
    share = ALPHA / len(significant)
    out = {}
    for code, name in enumerate(table.test_names):
        mine = pairs.group == code
        differs = np.zeros(workers, dtype=np.int64)
        if significant.get(name):
            reject = adjust(pairs.pvalue[mine], "holm", share).reject
            np.add.at(differs, pairs.i[mine][reject], 1)
            np.add.at(differs, pairs.j[mine][reject], 1)
        out[name] = tuple(table.worker_names[x] for x in np.flatnonzero(differs > (workers - 1) / 2))
    return out


def run_row(workers: int, values: int, cv: float, odd: float, reps: int, rng: np.random.Generator) -> Row:
    odd_name = f"w{workers}"
    named = named_holm = wrong = wrong_holm = rows_seen = 0
    for _ in range(reps):
        table = fleet(rng, workers, values, cv, odd)
        rows = fleet_rows(table, alpha=ALPHA, correction="bonferroni")
        before = holm_outliers(table, {r.test: bool(r.significant) for r in rows}, workers)
        if odd == 1.0:  # an agreeing fleet: any name is false, counted per fleet
            named += any(r.outliers for r in rows)
            named_holm += any(before.values())
            rows_seen += 1
            continue
        for r in rows:
            rows_seen += 1
            named += r.outliers == (odd_name,)
            named_holm += before[r.test] == (odd_name,)
            wrong += any(x != odd_name for x in r.outliers)
            wrong_holm += any(x != odd_name for x in before[r.test])
    return Row(workers, values, cv, odd, rate(named, rows_seen), rate(named_holm, rows_seen), rate(wrong, rows_seen), rate(wrong_holm, rows_seen))


def _pct(r: Rate) -> str:
    return f"{100 * r.rate:.1f} % [{100 * r.ci[0]:.1f}, {100 * r.ci[1]:.1f}]"


def render(nulls: Sequence[Row], powers: Sequence[Row], reps_null: int, reps_power: int) -> str:
    out = [f"Agreeing fleets, {TESTS} tests: share of fleets in which any worker is named ({reps_null:,} fleets per row; "
           f"95 % Clopper-Pearson intervals; alpha = {ALPHA})", "",
           "| workers | values per worker and test | CV | benchsage (Shaffer after the gate) | Holm over the pairs |", "|---|---|---|---|---|"]
    out += [f"| {r.workers} | {r.values} | {100 * r.cv:g} % | {_pct(r.named)} | {_pct(r.named_holm)} |" for r in nulls]
    out += ["", f"One worker slower on every test: share of test rows naming it alone, and naming a normal worker ({reps_power:,} fleets "
            f"x {TESTS} tests per row)", "",
            "| workers | slower | values per worker and test | CV | odd one named (benchsage) | (Holm over the pairs) | "
            "normal one named (benchsage) | (Holm over the pairs) |", "|---|---|---|---|---|---|---|---|"]
    out += [f"| {r.workers} | {100 * (r.odd - 1):g} % | {r.values} | {100 * r.cv:g} % | {_pct(r.named)} | {_pct(r.named_holm)} | "
            f"{_pct(r.wrong)} | {_pct(r.wrong_holm)} |" for r in powers]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few fleets: a smoke test")
    parser.add_argument("--reps-null", type=int, default=None, help="fleets per agreeing row (default 2000, --quick 50)")
    parser.add_argument("--reps-power", type=int, default=None, help="fleets per odd-worker row (default 300, --quick 20)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    reps_null = args.reps_null or (50 if args.quick else 2000)
    reps_power = args.reps_power or (20 if args.quick else 300)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    nulls = [run_row(w, n, 0.2, 1.0, reps_null, rng) for w in (3, 4) for n in (5, 10, 20)]
    powers = [run_row(w, n, cv, 1.5, reps_power, rng) for w in (3, 4) for n in (5, 10, 20) for cv in (0.1, 0.2, 0.3)]
    powers += [run_row(3, 10, 0.1, odd, reps_power, rng) for odd in (1.1, 1.2)]
    print(render(nulls, powers, reps_null, reps_power))
    print(f"\n({time.perf_counter() - started:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"null": [asdict(r) for r in nulls], "power": [asdict(r) for r in powers]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
