"""What the rows' effect sizes cost an analysis: the order analysis of the same table with and
without them, in the same run.

A table of T tests with R runs per arm (lognormal values, CV 3 %, the first test 8 % slower in
the fixed arm) is analysed by `analyze_table` as `benchsage analyze` does (the shift with its
interval, the least p-value and the detectable shift of every row: analyze/effects.py), and with
the shift and the detectable shift turned off (the least p-value and `detectable` stay, they are
cheap); repetitions alternate the two, medians are printed. The budget is for the effects alone
(with minus without) at 50 tests of 30 runs per arm: under 2 s on a 2-core machine. A second
table, one test of 1,000 runs per arm, shows that the work per row stays bounded where runs are
many (its detectable shift steps over the distinct values, not the pairs).

    python benchmarks/detectable.py [--tests 50] [--runs 30] [--repeat 5]

Exit status: 0 within the budget, 1 over it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import numpy as np  # noqa: E402

from benchsage.analyze.effects import EffectOptions  # noqa: E402
from benchsage.analyze.order import analyze_table  # noqa: E402
from benchsage.store.table import TrialTable  # noqa: E402

BUDGET_SECONDS = 2.0
WITHOUT = EffectOptions(shift=False, simulate=False)


def make_table(tests: int, runs: int, seed: int = 1) -> TrialTable:
    rng = np.random.default_rng(seed)
    test, arm, value = [], [], []
    for t in range(tests):
        for name, factor in (("fixed", 1.08 if t == 0 else 1.0), ("random", 1.0)):
            test += [f"t{t}"] * runs
            arm += [name] * runs
            value += list(rng.lognormal(0.0, 0.03, runs) * factor * (1 + t))
    return TrialTable.from_columns(test=test, arm=arm, value=value, metric=["wall_time"] * len(value))


def timed(table: TrialTable, effects: EffectOptions) -> tuple[float, object]:
    start = time.perf_counter()
    analysis = analyze_table(table, effects=effects)
    return time.perf_counter() - start, analysis


def compare(table: TrialTable, repeat: int, label: str) -> float:
    """Print the medians with and without the effects; return the effects' own seconds."""
    timed(table, EffectOptions())  # warm: imports, caches
    with_, without = [], []
    parts = {"shift only": EffectOptions(simulate=False), "detectable shift only": EffectOptions(shift=False)}
    part_times: dict[str, list[float]] = {k: [] for k in parts}
    analysis = None
    for _ in range(repeat):
        seconds, analysis = timed(table, EffectOptions())
        with_.append(seconds)
        without.append(timed(table, WITHOUT)[0])
        for name, options in parts.items():
            part_times[name].append(timed(table, options)[0])
    w, wo = statistics.median(with_), statistics.median(without)
    rows = analysis.tests  # type: ignore[attr-defined]
    filled = sum(r.min_detectable_pct is not None for r in rows)
    print(f"{label}: analysis with effects {w:.3f} s, without {wo:.3f} s: effects {w - wo:.3f} s ({w / wo:.1f}x the analysis without them)")
    for name, times in part_times.items():
        print(f"  {name}: {statistics.median(times) - wo:.3f} s")
    print(f"  rows with a detectable shift: {filled} of {len(rows)}; first row: shift {rows[0].shift:.4f} "
          f"{rows[0].shift_ci}, detectable {rows[0].min_detectable_pct}")
    return w - wo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=50)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cost = compare(make_table(args.tests, args.runs), args.repeat, f"{args.tests} tests x {args.runs} runs per arm")
    compare(make_table(1, 1000), max(1, args.repeat // 2), "1 test x 1000 runs per arm")
    ok = cost <= BUDGET_SECONDS
    print(f"effects of {args.tests} tests at {args.runs} runs per arm: {cost:.3f} s, budget {BUDGET_SECONDS:g} s: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
