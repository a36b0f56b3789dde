"""Monte-Carlo validation of the flips of a comparison along a dimension of the contexts.

A declared comparison "a is better than b" is answered in each context and, since contexts
share dimensions, at each level of each dimension (every context at that level pooled; see
stats.compare.decide_levels), all corrected. `flips` is true when the winner changes between
contexts or between the levels of one dimension. This script measures, with benchsage's own
compare(), summarize_contexts() and decide_levels() (the functions the analysis calls):

1. the false-flip rate where no flip exists: a and b identical; a 20 % faster than b in every
   context; a 2x faster with a small environment and equal to b with a large one (the hardest:
   one side is a real effect, so a flip needs only one rejection in the wrong direction); it
   must stay at most alpha;
2. the power to find a real flip: a is f x b in the contexts with a small environment and g x b
   in those with a large one (the issue's case: f = 0.5, g = 1.5), by runs per arm and number
   of contexts; with the per-level answers and with the contexts alone.

Each experiment: C contexts, R runs per arm in each of the two order arms, each test once per
run, the runs spread evenly over the contexts (2R / C values of each test per context); two
dimensions: env_bytes (drawn afresh for each context: cut at its median into small and large)
and a link order of two levels, alternating; lognormal noise of CV 10 %. The first experiments
of each row also go through the analysis (analyze_treatments on a table) and must agree.

    python validation/flips.py [--quick] [--reps-null R] [--reps-power R] [--seed 1] [--json FILE]
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

from benchsage.analyze.treatments import CompareRequest, TreatmentOptions, analyze_treatments
from benchsage.stats.compare import compare, decide_levels, summarize_contexts
from benchsage.store.table import TrialTable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # montecarlo.py, beside this script
from montecarlo import Rate, rate  # noqa: E402

ALPHA = 0.05
CV = 0.10
CHECKED = 2  # experiments per row also analysed as a table
SHAPES = ((8, 8), (8, 16), (8, 32), (16, 16), (16, 32))  # (contexts, runs per arm)
NULLS = (("a = b", 1.0, 1.0), ("a 20 % faster everywhere", 0.8, 0.8), ("a 2x faster with small env, = b with large", 0.5, 1.0))
FLIPS = (("0.5 / 1.5 (the issue's)", 0.5, 1.5), ("0.8 / 1.25", 0.8, 1.25), ("0.9 / 1.1", 0.9, 1.1))






@dataclass(frozen=True)
class Row:
    scenario: str
    contexts: int
    runs: int
    per_context: int  # values of each test per context
    flips: Rate  # benchsage: contexts and the levels of each dimension
    contexts_only: Rate  # the contexts alone (before the per-level answers)
    along_env: Rate  # flip_dimension == "env_bytes"


def experiment(rng: np.random.Generator, contexts: int, runs: int, small: float, large: float) -> tuple[np.ndarray, np.ndarray]:
    """(a, b), each (contexts, values per context); the first half of the contexts have the small environments."""
    per = 2 * runs // contexts
    sigma = math.sqrt(math.log1p(CV * CV))
    scale = np.where(np.arange(contexts) < contexts // 2, small, large)
    return scale[:, None] * np.exp(sigma * rng.standard_normal((contexts, per))), np.exp(sigma * rng.standard_normal((contexts, per)))


def answered(a: np.ndarray, b: np.ndarray) -> tuple[bool, bool, str | None]:
    """(flips, flips between the contexts alone, flip_dimension) as the analysis decides them."""
    contexts = len(a)
    small = np.arange(contexts) < contexts // 2
    link = np.arange(contexts) % 2
    summary = summarize_contexts([compare(x, y, alpha=ALPHA) for x, y in zip(a, b)], ALPHA)
    per_level = {"env_bytes": {"small": compare(a[small].ravel(), b[small].ravel(), alpha=ALPHA),
                               "large": compare(a[~small].ravel(), b[~small].ravel(), alpha=ALPHA)},
                 "link_order": {f"order{o}": compare(a[link == o].ravel(), b[link == o].ravel(), alpha=ALPHA) for o in (0, 1)}}
    full = summary.with_dimensions(decide_levels(per_level, ALPHA))
    return full.flips, summary.flips, full.flip_dimension


def as_table(a: np.ndarray, b: np.ndarray) -> TrialTable:
    """The same values as an experiment's table: runs alternating between the arms, each in one context."""
    contexts, per = a.shape
    cols: dict[str, list[Any]] = {k: [] for k in ("test", "arm", "value", "run", "position", "metric")}
    dims: dict[str, list[str]] = {"context": [], "context:env_bytes": [], "context:link_order": []}
    for j in range(per):
        for c in range(contexts):
            run = 2 * (j * contexts + c)
            for pos, (test, v) in enumerate((("a", a[c, j]), ("b", b[c, j]))):
                cols["test"].append(test)
                cols["arm"].append(("fixed", "random")[(run // 2) % 2])
                cols["value"].append(float(v))
                cols["run"].append(run)
                cols["position"].append(pos)
                cols["metric"].append("wall_time")
                dims["context"].append(f"c{c + 1}")
                dims["context:env_bytes"].append(str(100 * c))
                dims["context:link_order"].append(f"order{c % 2}")
    return TrialTable.from_columns(**cols, treatments=dims)


def check(a: np.ndarray, b: np.ndarray, expected: tuple[bool, bool, str | None]) -> None:
    (row,) = analyze_treatments(as_table(a, b), options=TreatmentOptions(compare=(CompareRequest("a", "b"),))).comparisons
    got = (row.contexts.flips, row.contexts.flip_dimension)
    if got != (expected[0], expected[2]):
        sys.exit(f"the analysis disagrees with the simulation: {got} != {(expected[0], expected[2])}")


def run_row(scenario: str, small: float, large: float, contexts: int, runs: int, reps: int, rng: np.random.Generator) -> Row:
    flips = only = env = 0
    for r in range(reps):
        a, b = experiment(rng, contexts, runs, small, large)
        result = answered(a, b)
        if r < CHECKED:
            check(a, b, result)
        flips += result[0]
        only += result[1]
        env += result[2] == "env_bytes"
    return Row(scenario, contexts, runs, 2 * runs // contexts, rate(flips, reps), rate(only, reps), rate(env, reps))


def _pct(r: Rate) -> str:
    return f"{100 * r.rate:.1f} % [{100 * r.ci[0]:.1f}, {100 * r.ci[1]:.1f}]"


def render(nulls: Sequence[Row], powers: Sequence[Row], reps_null: int, reps_power: int) -> str:
    out = [f"False flips: no flip exists ({reps_null:,} experiments per row; 95 % Clopper-Pearson intervals; alpha = {ALPHA})", "",
           "| a vs b | contexts | runs per arm | values per test and context | flips (benchsage) | flips between contexts alone |",
           "|---|---|---|---|---|---|"]
    out += [f"| {r.scenario} | {r.contexts} | {r.runs} | {r.per_context} | {_pct(r.flips)} | {_pct(r.contexts_only)} |" for r in nulls]
    out += ["", f"Power: a is f x b with a small environment and g x b with a large one, f / g as given ({reps_power:,} experiments per row)", "",
            "| f / g | contexts | runs per arm | values per test and context | flips (benchsage) | along env_bytes | between contexts alone |",
            "|---|---|---|---|---|---|---|"]
    out += [f"| {r.scenario} | {r.contexts} | {r.runs} | {r.per_context} | {_pct(r.flips)} | {_pct(r.along_env)} | {_pct(r.contexts_only)} |"
            for r in powers]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few experiments: a smoke test")
    parser.add_argument("--reps-null", type=int, default=None, help="experiments per false-flip row (default 1000, --quick 50)")
    parser.add_argument("--reps-power", type=int, default=None, help="experiments per power row (default 300, --quick 30)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    reps_null = args.reps_null or (50 if args.quick else 1000)
    reps_power = args.reps_power or (30 if args.quick else 300)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    nulls = [run_row(name, s, g, c, r, reps_null, rng) for name, s, g in NULLS for c, r in SHAPES]
    powers = [run_row(name, s, g, c, r, reps_power, rng) for name, s, g in FLIPS for c, r in SHAPES]
    print(render(nulls, powers, reps_null, reps_power))
    print(f"\n({time.perf_counter() - started:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"null": [asdict(r) for r in nulls], "power": [asdict(r) for r in powers]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
