"""How far an A-vs-B comparison's words and its interval agree, as `compare` decides them today.

The baseline for issue #40 ("one answer per comparison"): `better` comes from the Mann-Whitney
test, the interval of the ratio of medians from Bonett-Price, two procedures that can
disagree. For each case, seeded samples from known distributions are compared with
`benchsage.stats.compare.compare` (its defaults: alpha 0.05, a 95% interval) and counted:

- **words vs interval**: a winner named beside an interval that holds 1, and "no significant
  difference" beside an interval that excludes 1;
- **false winner**: a winner named where the medians are equal (the claim the output makes is
  about medians);
- **coverage**: the interval holds the true ratio of medians (1 in every case here);
- **no interval**: the interval is missing, and how often a winner is named without one.

Cases: equal lognormals (continuous, the null); equal medians, different shapes (a symmetric
normal against a right-skewed shifted exponential); and equal lognormals rounded to a grid that
leaves about 20, and about 3, distinct values (ties). Each rate comes with its 95%
Clopper-Pearson interval.

    python validation/comparisons.py [--sims 2000] [--seed 40] [--n 10 20 50 100]

Prints one table; it asserts nothing (the test of #40's procedure will bound these rates).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from montecarlo import Rate, rate  # noqa: E402

from benchsage.stats.compare import compare  # noqa: E402

Draw = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]


def _lognormal(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.exp(rng.normal(0.0, 0.1, n)), np.exp(rng.normal(0.0, 0.1, n))


def _shapes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Both medians 1: a normal, and an exponential shifted so that its median is 1."""
    return 1.0 + 0.1 * rng.normal(0.0, 1.0, n), 1.0 + 0.1 * (rng.exponential(1.0, n) - math.log(2.0))


def _rounded(step: float) -> Draw:
    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = _lognormal(rng, n)
        return np.round(a / step) * step, np.round(b / step) * step

    return draw


CASES: dict[str, Draw] = {
    "continuous (equal lognormals)": _lognormal,
    "equal medians, other shapes": _shapes,
    "ties: about 20 distinct values": _rounded(0.02),
    "ties: about 3 distinct values": _rounded(0.2),
}


def run_case(draw: Draw, n: int, sims: int, rng: np.random.Generator) -> dict[str, Rate]:
    winner = np.zeros(sims, bool)
    has_ci = np.zeros(sims, bool)
    excludes_1 = np.zeros(sims, bool)
    for i in range(sims):
        a, b = draw(rng, n)
        c = compare(a, b)
        winner[i] = c.better is not None
        if c.ci is not None:
            has_ci[i] = True
            excludes_1[i] = not (c.ci[0] <= 1.0 <= c.ci[1])
    return {
        "winner, interval holds 1": rate(winner & has_ci & ~excludes_1),
        "no winner, interval excludes 1": rate(~winner & excludes_1),
        "false winner": rate(winner),
        "coverage": rate(int((has_ci & ~excludes_1).sum()), int(has_ci.sum())) if has_ci.any() else rate(0, 0),
        "no interval": rate(~has_ci),
        "winner without interval": rate(winner & ~has_ci),
    }


def _shown(r: Rate) -> str:
    if r.n == 0:
        return "-"
    return f"{r.rate:.3f} ({r.ci[0]:.3f}-{r.ci[1]:.3f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000, help="simulated pairs of samples per case and n (default 2000)")
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--n", type=int, nargs="+", default=[10, 20, 50, 100], help="values per sample (default 10 20 50 100)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    print(f"compare() with its defaults (Mann-Whitney at alpha 0.05, Bonett-Price 95% interval); {args.sims} simulations a cell, "
          f"seed {args.seed}; each rate with its 95% Clopper-Pearson interval")
    for name, draw in CASES.items():
        print(f"\n{name}")
        print(f"  {'n':>4} " + " ".join(f"{k:>21}" for k in ("winner, CI holds 1", "none, CI excludes 1", "false winner", "coverage",
                                                             "no interval", "winner, no interval")))
        for n in args.n:
            rates = run_case(draw, n, args.sims, rng)
            print(f"  {n:>4} " + " ".join(f"{_shown(r):>21}" for r in rates.values()))
    print(f"\n{time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
