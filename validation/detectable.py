"""Validation of what a test row says about the size of an order effect (analyze/effects.py):

1. the detectable shift (min_detectable_pct) has the power it claims: for pools of values
   (lognormal CV 5 %, t with 5 df for a difference) and arm sizes, stats.detectable's factor
   each way, then an independent simulation of bootstrap experiments from the same pool with
   scipy.stats.kruskal at alpha / m: the share that finds the effect at that factor (must be
   0.8 within the Monte-Carlo error of both simulations) and at 0.7 of it (clearly below);
   also over several seeds of benchsage's own draws (the mean must be 0.8);
2. the shift interval is dual to the row's test: random families of 20 tests of 5-24 values per
   arm, an effect of 0, 0.5, 1 or 1.5 sd in the fixed arm, analysed by analyze_table; how often
   "shift_ci excludes no effect" and `significant` agree, continuous and on a grid of half a
   standard deviation (heavy ties).

    python validation/detectable.py [--reps 20000] [--seeds 8] [--tables 15]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from benchsage.analyze.order import analyze_table  # noqa: E402
from benchsage.stats.detectable import critical_z, detectable_shift  # noqa: E402
from benchsage.store.table import TrialTable  # noqa: E402

CASES = [  # (ratio, n fixed, n random, alpha / m, pool)
    (True, 30, 30, 0.005, "lognormal CV 5 %, 60 values"),
    (False, 12, 20, 0.005, "t(5), 40 values"),
    (True, 5, 5, 0.05, "lognormal CV 5 %, 60 values"),
    (True, 100, 100, 0.005, "lognormal CV 5 %, 60 values"),
]


def pool_of(ratio: bool) -> np.ndarray:
    rng = np.random.default_rng(21)
    return rng.lognormal(0.0, 0.05, 60) if ratio else rng.standard_t(5, 40)


def scipy_power(pool: np.ndarray, n0: int, n1: int, shift: float, alpha_test: float, ratio: bool, reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    x, y = rng.choice(pool, (reps, n0)), rng.choice(pool, (reps, n1))
    x = x * shift if ratio else x + shift
    return float(np.mean(sps.kruskal(x, y, axis=1).pvalue <= alpha_test))


def power_table(reps: int, seeds: int) -> None:
    print(f"1. Power at the detectable shift, scipy.stats.kruskal on {reps} bootstrap experiments "
          f"(Monte-Carlo sd {np.sqrt(0.16 / reps):.3f}; benchsage's own percentile has sd about 0.013)")
    print("| pool | shift | n per arm | alpha/m | up: factor, power, at 0.7x | down: factor, power, at 0.7x | "
          f"mean power over {seeds} seeds (up / down) |")
    print("|---|---|---|---|---|---|---|")
    for ratio, n0, n1, alpha, what in CASES:
        pool = pool_of(ratio)
        z = critical_z(alpha)
        null = 1.0 if ratio else 0.0
        found = detectable_shift(pool, n0, n1, z, ratio=ratio)
        cells = []
        for f in (found.up, found.down):
            at = scipy_power(pool, n0, n1, f, alpha, ratio, reps, 5)
            below = scipy_power(pool, n0, n1, null + 0.7 * (f - null), alpha, ratio, reps, 6)
            cells.append(f"{f:.4g}, {at:.3f}, {below:.3f}")
        ups, downs = [], []
        for seed in range(seeds):
            other = detectable_shift(pool, n0, n1, z, ratio=ratio, seed=seed)
            ups.append(scipy_power(pool, n0, n1, other.up, alpha, ratio, reps // 4, 7))
            downs.append(scipy_power(pool, n0, n1, other.down, alpha, ratio, reps // 4, 7))
        kind = "ratio" if ratio else "difference"
        print(f"| {what} | {kind} | {n0} / {n1} | {alpha:g} | {cells[0]} | {cells[1]} | {np.mean(ups):.3f} / {np.mean(downs):.3f} |")


def duality_table(tables: int) -> None:
    print(f"\n2. Shift interval vs significance: {tables} families of 20 tests, 5-24 values per arm")
    print("| values | rows | significant | interval excludes no effect | agree | significant, interval touches no effect | "
          "excludes, not significant |")
    print("|---|---|---|---|---|---|---|")
    for tied in (False, True):
        for positive in (True, False):
            rng = np.random.default_rng(1)
            rows = []
            for _ in range(tables):
                test, arm, value = [], [], []
                for i in range(20):
                    nf, nr = rng.integers(5, 25, size=2)
                    f, r = rng.normal(rng.choice([0, 0.5, 1.0, 1.5]), 1, nf), rng.normal(0, 1, nr)
                    if tied:
                        f, r = np.round(f * 2) / 2, np.round(r * 2) / 2
                    if positive:
                        f, r = np.exp(f), np.exp(r)
                    test += [f"t{i}"] * (nf + nr)
                    arm += ["fixed"] * nf + ["random"] * nr
                    value += list(f) + list(r)
                table = TrialTable.from_columns(test=test, arm=arm, value=value, metric=["value"] * len(value))
                rows += [v for v in analyze_table(table).tests if v.significant is not None]
            null = 1.0 if positive else 0.0
            excl = [v.shift_ci is not None and (v.shift_ci[0] > null or v.shift_ci[1] < null) for v in rows]
            sig = [bool(v.significant) for v in rows]
            agree = sum(a == b for a, b in zip(excl, sig))
            what = ("tied (grid of 0.5 sd)" if tied else "continuous") + (", ratio" if positive else ", difference")
            print(f"| {what} | {len(rows)} | {sum(sig)} | {sum(excl)} | {agree} | {sum(s and not e for s, e in zip(sig, excl))} | "
                  f"{sum(e and not s for s, e in zip(sig, excl))} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20000)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--tables", type=int, default=15)
    args = parser.parse_args()
    power_table(args.reps, args.seeds)
    duality_table(args.tables)
    return 0


if __name__ == "__main__":
    sys.exit(main())
