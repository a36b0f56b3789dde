"""Monte-Carlo validation of benchsage's order analysis on experiments whose truth is known.

Simulates experiments shaped like benchsage's (k tests, N runs per arm, the fixed order and
fresh random permutations, lognormal noise with a CV of 2-5 %), optionally with a carry-over
effect (test B is slower by x % when it runs right after test A, and A precedes B in the fixed
order), and analyses them with benchsage's own code (`analyze_table`, `diagnose`, `adjust`).
It prints the family-wise false-positive rate under no order effect (Bonferroni and Holm,
with a Clopper-Pearson interval for the Monte-Carlo error), the coverage of the median CIs
(exact binomial and Le Boudec), and the power against carry-over effects.

    python validation/simulate.py [--quick] [--reps-null R] [--reps-power R] [--runs 10,20,50]
                                  [--effects 1,2,5,10] [--seed 1] [--json FILE]

Many experiments are analysed in one call: each simulated experiment gets its own test names,
so one TrialTable holds a batch of them; the raw p-values are then corrected experiment by
experiment with benchsage's `adjust`, exactly as `analyze_table` corrects one experiment's
family (tests/validation/test_simulate.py checks that the two agree).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy import stats as sps

from benchsage.analyze.diagnostics import diagnose
from benchsage.analyze.order import analyze_table
from benchsage.stats import adjust, exact_binomial_coverage, exact_binomial_rank, le_boudec_ranks
from benchsage.store.table import FIRST, TrialTable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # montecarlo.py, beside this script
from montecarlo import Rate, rate  # noqa: E402

ALPHA = 0.05
CI_LEVEL = 0.95
CORRECTIONS = ("bonferroni", "holm")
CI_METHODS = ("exact-binomial", "le-boudec")
MAX_ROWS_PER_BATCH = 1_500_000  # keeps a batch's sorts fast and its memory modest
# The diagnostics' carry-over test indexes (test, predecessor) pairs densely, tests x tests: a
# batch of experiments is one table, so its test count is kept small when they run.
MAX_TESTS_PER_DIAGNOSED_BATCH = 2_000


@dataclass(frozen=True)
class Design:
    """One simulated experiment shape. The carry-over pair is tests A = `pair` and B = `pair` + 1
    of the fixed order (adjacent, so the fixed arm always sees the effect) unless `apart`."""

    tests: int = 10
    runs: int = 20  # per arm
    cv_low: float = 0.02
    cv_high: float = 0.05
    effect: float = 0.0  # carry-over, relative: B's value x (1 + effect) right after A
    pair: int = 3
    apart: bool = False  # A and B far apart in the fixed order (the fixed arm never sees it)

    @property
    def a(self) -> int:
        return self.pair

    @property
    def b(self) -> int:
        return self.tests - 1 if self.apart else self.pair + 1


@dataclass(frozen=True, eq=False)
class Batch:
    """`reps` simulated experiments in one table; test code r * k + j is test j of experiment r."""

    design: Design
    reps: int
    table: TrialTable
    true_median: np.ndarray  # (reps, k): the median of each test's values when no effect applies


def simulate(design: Design, reps: int, rng: np.random.Generator) -> Batch:
    """Simulate `reps` independent experiments of `design`.

    Each experiment: every test has a median drawn log-uniformly in 10 ms .. 100 s and a CV
    drawn uniformly in [cv_low, cv_high]; a trial's value is lognormal with that median and CV.
    Runs alternate between the arms (interleaved); the fixed arm runs tests 0..k-1, every
    random run a fresh uniform permutation.
    """
    k, n = design.tests, design.runs
    runs = 2 * n
    arm = np.tile(np.arange(runs) % 2, reps).astype(np.int8)  # fixed, random, fixed, ...
    order = np.tile(np.arange(k), (reps * runs, 1))
    random_rows = arm == 1
    order[random_rows] = rng.permuted(order[random_rows], axis=1)
    rep = np.repeat(np.arange(reps), runs * k)
    local = order.ravel()
    test = (rep * k + local).astype(np.int32)
    position = np.tile(np.arange(k, dtype=np.int32), reps * runs)
    prev_local = np.empty_like(local)
    prev_local[1:] = local[:-1]
    first = position == 0
    predecessor = np.where(first, FIRST, rep * k + prev_local).astype(np.int32)

    median = 10.0 ** rng.uniform(-2, 2, (reps, k))
    cv = rng.uniform(design.cv_low, design.cv_high, (reps, k))
    sigma = np.sqrt(np.log1p(cv * cv))
    value = median.ravel()[test] * np.exp(sigma.ravel()[test] * rng.standard_normal(len(test)))
    if design.effect:
        hit = (local == design.b) & ~first & (prev_local == design.a)
        value[hit] *= 1.0 + design.effect

    names = tuple(f"r{r}/t{j}" for r in range(reps) for j in range(k))
    rows = len(test)
    table = TrialTable(
        test_names=names,
        metric_names=("value",),
        worker_names=("local",),
        test=test,
        metric=np.zeros(rows, dtype=np.int32),
        arm=np.repeat(arm, k),
        value=value,
        run=np.repeat(np.arange(reps * runs, dtype=np.int64), k),
        position=position,
        predecessor=predecessor,
        worker=np.zeros(rows, dtype=np.int32),
        time=np.full(rows, np.nan),
        primary=np.ones(rows, dtype=bool),
    )
    return Batch(design, reps, table, median)


def split_reps(design: Design, reps: int, *, diagnosed: bool = False) -> list[int]:
    per = max(1, MAX_ROWS_PER_BATCH // (2 * design.runs * design.tests))
    if diagnosed:
        per = min(per, max(1, MAX_TESTS_PER_DIAGNOSED_BATCH // design.tests))
    return [min(per, reps - i) for i in range(0, reps, per)]


# -- what benchsage concludes about each simulated experiment ----------------------------------


@dataclass(frozen=True, eq=False)
class Outcome:
    """Per experiment and test: raw KW p-values, decisions per correction, CI bounds per method."""

    p: np.ndarray  # (reps, k)
    significant: dict[str, np.ndarray]  # correction -> (reps, k) bool
    low: dict[str, np.ndarray]  # ci method -> (reps, k, 2 arms)
    high: dict[str, np.ndarray]
    carryover: dict[str, np.ndarray] | None  # correction -> (reps,) bool: "B after A" flagged by the diagnostics
    carryover_any: dict[str, np.ndarray] | None  # correction -> (reps,) bool: any carry-over flagged


def per_experiment(p: np.ndarray, correction: str) -> np.ndarray:
    """Each row of p is one experiment's family: corrected on its own, with benchsage's adjust."""
    out = np.zeros(p.shape, dtype=bool)
    for r in range(p.shape[0]):
        out[r] = adjust(p[r], correction, ALPHA).reject
    return out


def analyse(batch: Batch, *, ci_methods: Sequence[str] = CI_METHODS, carryover: bool = False) -> Outcome:
    k = batch.design.tests
    shape = (batch.reps, k)
    low: dict[str, np.ndarray] = {}
    high: dict[str, np.ndarray] = {}
    p = np.full(shape, np.nan)
    for i, method in enumerate(ci_methods):
        analysis = analyze_table(batch.table, alpha=ALPHA, correction="bonferroni", ci_method=method, ci_level=CI_LEVEL)
        if len(analysis.tests) != batch.reps * k or analysis.tests[-1].test != batch.table.test_names[-1]:
            raise RuntimeError("analyze_table returned the tests in an unexpected order")
        lo = np.full(shape + (2,), np.nan)
        hi = np.full(shape + (2,), np.nan)
        for idx, v in enumerate(analysis.tests):
            r, j = divmod(idx, k)
            if i == 0:
                p[r, j] = np.nan if v.kw_p is None else v.kw_p
            for arm, ci in enumerate((v.ci_fixed, v.ci_random)):
                if ci is not None:
                    lo[r, j, arm], hi[r, j, arm] = ci
        low[method], high[method] = lo, hi
    significant = {c: per_experiment(p, c) for c in CORRECTIONS}

    flagged = flagged_any = None
    if carryover:
        flagged, flagged_any = _carryover(batch)
    return Outcome(p, significant, low, high, flagged, flagged_any)


def _carryover(batch: Batch) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The diagnostics' carry-over test, with each experiment's comparisons corrected as its own family."""
    k, design = batch.design.tests, batch.design
    diag = diagnose(batch.table, alpha=ALPHA, correction="bonferroni")
    entries = diag.carryover if diag is not None else ()
    rep_of: list[int] = []
    p: list[float] = []
    target: list[bool] = []
    b_name, a_name = f"t{design.b}", f"t{design.a}"
    for e in entries:
        rep, _, name = e.test.partition("/")
        rep_of.append(int(rep[1:]))
        p.append(np.nan if e.p is None else e.p)
        target.append(name == b_name and e.after.endswith("/" + a_name) and e.after.split("/")[0] == rep)
    rep_arr, p_arr, target_arr = np.array(rep_of, dtype=np.int64), np.array(p), np.array(target, dtype=bool)
    order = np.argsort(rep_arr, kind="stable")
    bounds = np.searchsorted(rep_arr[order], np.arange(batch.reps + 1))
    flagged = {c: np.zeros(batch.reps, dtype=bool) for c in CORRECTIONS}
    flagged_any = {c: np.zeros(batch.reps, dtype=bool) for c in CORRECTIONS}
    for r in range(batch.reps):
        idx = order[bounds[r] : bounds[r + 1]]
        if len(idx) == 0:
            continue
        for c in CORRECTIONS:
            reject = adjust(p_arr[idx], c, ALPHA).reject
            flagged[c][r] = bool(np.any(reject & target_arr[idx]))
            flagged_any[c][r] = bool(np.any(reject))
    return flagged, flagged_any


# -- Monte-Carlo summaries ---------------------------------------------------------------------






def theoretical_coverage(n: int, method: str) -> float:
    """The coverage the method promises for continuous data of n values (binomial count)."""
    if method == "exact-binomial":
        return float(exact_binomial_coverage(n, exact_binomial_rank(n, CI_LEVEL)))
    j, k = (int(x) for x in le_boudec_ranks(n, CI_LEVEL))
    if j < 1 or k > n:
        return float("nan")
    # [x(j), x(k)] covers the median when j <= B <= k - 1, B ~ Binomial(n, 1/2).
    return float(sps.binom.cdf(k - 1, n, 0.5) - sps.binom.cdf(j - 1, n, 0.5))


@dataclass
class NullResult:
    runs: int
    reps: int
    fwer: dict[str, Rate]
    per_test_rate: Rate  # raw p <= alpha: each test's own false-positive rate
    coverage: dict[str, Rate]
    coverage_theory: dict[str, float]
    ci_undefined: dict[str, int]
    carryover_fwer: dict[str, Rate] | None = None


@dataclass
class PowerResult:
    runs: int
    effect_pct: float
    reps: int
    apart: bool
    power: dict[str, Rate]  # B flagged by the fixed-vs-random test
    order_matters: dict[str, Rate]  # any test flagged
    carryover_power: dict[str, Rate] | None = None  # the diagnostics flag "B after A"


def run_null(design: Design, reps: int, rng: np.random.Generator, *, carryover: bool) -> NullResult:
    any_sig = {c: [] for c in CORRECTIONS}
    raw: list[np.ndarray] = []
    covered = {m: 0 for m in CI_METHODS}
    total = {m: 0 for m in CI_METHODS}
    undefined = {m: 0 for m in CI_METHODS}
    co_any = {c: [] for c in CORRECTIONS}
    for size in split_reps(design, reps, diagnosed=carryover):
        batch = simulate(design, size, rng)
        out = analyse(batch, carryover=carryover)
        for c in CORRECTIONS:
            any_sig[c].append(out.significant[c].any(axis=1))
        raw.append(out.p[np.isfinite(out.p)] <= ALPHA)
        truth = batch.true_median[:, :, None]
        for m in CI_METHODS:
            lo, hi = out.low[m], out.high[m]
            defined = np.isfinite(lo) & np.isfinite(hi)
            covered[m] += int(((lo <= truth) & (truth <= hi) & defined).sum())
            total[m] += int(defined.sum())
            undefined[m] += int((~defined).sum())
        if out.carryover_any is not None:
            for c in CORRECTIONS:
                co_any[c].append(out.carryover_any[c])
    return NullResult(
        runs=design.runs,
        reps=reps,
        fwer={c: rate(np.concatenate(any_sig[c])) for c in CORRECTIONS},
        per_test_rate=rate(np.concatenate(raw)),
        coverage={m: rate(covered[m], total[m]) for m in CI_METHODS},
        coverage_theory={m: theoretical_coverage(design.runs, m) for m in CI_METHODS},
        ci_undefined=undefined,
        carryover_fwer={c: rate(np.concatenate(co_any[c])) for c in CORRECTIONS} if carryover else None,
    )


def run_power(design: Design, reps: int, rng: np.random.Generator, *, carryover: bool) -> PowerResult:
    hit = {c: [] for c in CORRECTIONS}
    anyhit = {c: [] for c in CORRECTIONS}
    co = {c: [] for c in CORRECTIONS}
    for size in split_reps(design, reps, diagnosed=carryover):
        batch = simulate(design, size, rng)
        out = analyse(batch, ci_methods=("exact-binomial",), carryover=carryover)
        for c in CORRECTIONS:
            hit[c].append(out.significant[c][:, design.b])
            anyhit[c].append(out.significant[c].any(axis=1))
            if out.carryover is not None:
                co[c].append(out.carryover[c])
    return PowerResult(
        runs=design.runs,
        effect_pct=design.effect * 100,
        reps=reps,
        apart=design.apart,
        power={c: rate(np.concatenate(hit[c])) for c in CORRECTIONS},
        order_matters={c: rate(np.concatenate(anyhit[c])) for c in CORRECTIONS},
        carryover_power={c: rate(np.concatenate(co[c])) for c in CORRECTIONS} if carryover else None,
    )


@dataclass
class Study:
    config: dict[str, Any]
    null: list[NullResult] = field(default_factory=list)
    power: list[PowerResult] = field(default_factory=list)
    seconds: float = 0.0


def run_study(
    *,
    tests: int,
    runs: Sequence[int],
    effects: Sequence[float],
    reps_null: int,
    reps_power: int,
    seed: int,
    cv: tuple[float, float] = (0.02, 0.05),
    carryover: bool = True,
    apart: bool = False,
    progress: bool = False,
) -> Study:
    start = time.perf_counter()
    config = {"tests": tests, "runs": list(runs), "effects_pct": [e * 100 for e in effects], "reps_null": reps_null,
              "reps_power": reps_power, "seed": seed, "cv": list(cv), "alpha": ALPHA, "ci_level": CI_LEVEL,
              "carryover_diagnostics": carryover, "pair": "apart" if apart else "adjacent in the fixed order"}
    study = Study(config)
    cell = 0
    for n in runs:
        rng = np.random.default_rng([seed, cell])
        cell += 1
        study.null.append(run_null(Design(tests, n, *cv), reps_null, rng, carryover=carryover))
        _say(progress, f"null N={n}: done ({time.perf_counter() - start:.0f} s)")
    for n in runs:
        for x in effects:
            rng = np.random.default_rng([seed, cell])
            cell += 1
            design = Design(tests, n, *cv, effect=x, apart=apart)
            study.power.append(run_power(design, reps_power, rng, carryover=carryover))
            _say(progress, f"power N={n} effect={x * 100:g}%: done ({time.perf_counter() - start:.0f} s)")
    study.seconds = time.perf_counter() - start
    return study


def _say(on: bool, text: str) -> None:
    if on:
        print(text, file=sys.stderr, flush=True)


# -- printing ----------------------------------------------------------------------------------


def _pct(r: Rate) -> str:
    return f"{r.rate * 100:5.1f}"


def _pct_ci(r: Rate) -> str:
    return f"{r.rate * 100:.1f} [{r.ci[0] * 100:.1f}, {r.ci[1] * 100:.1f}]"


def render(study: Study) -> str:
    cfg = study.config
    lines: list[str] = []
    lines.append(f"k = {cfg['tests']} tests, lognormal noise with CV {cfg['cv'][0] * 100:g}-{cfg['cv'][1] * 100:g} %, "
                 f"alpha = {cfg['alpha']}, seed {cfg['seed']}; {study.seconds:.0f} s")
    lines.append("")
    lines.append(f"Family-wise false-positive rate, no order effect ({cfg['reps_null']} experiments per row; % with 95% Monte-Carlo interval)")
    lines.append("")
    co = study.null and study.null[0].carryover_fwer is not None
    head = "| N runs/arm | Bonferroni | Holm | per-test rate (raw p <= alpha) |" + (" carry-over diagnostics, Bonferroni |" if co else "")
    lines.append(head)
    lines.append("|" + "---|" * (head.count("|") - 1))
    for r in study.null:
        row = f"| {r.runs} | {_pct_ci(r.fwer['bonferroni'])} | {_pct_ci(r.fwer['holm'])} | {_pct_ci(r.per_test_rate)} |"
        if co and r.carryover_fwer is not None:
            row += f" {_pct_ci(r.carryover_fwer['bonferroni'])} |"
        lines.append(row)
    lines.append("")
    lines.append(f"Coverage of the {CI_LEVEL * 100:g}% median CIs (each test and arm; % with 95% Monte-Carlo interval; promised coverage in parentheses)")
    lines.append("")
    lines.append("| N runs/arm | exact binomial | Le Boudec (normal approximation) |")
    lines.append("|---|---|---|")
    for r in study.null:
        cells = []
        for m in CI_METHODS:
            cell = f"{_pct_ci(r.coverage[m])} ({r.coverage_theory[m] * 100:.1f})"
            if r.ci_undefined[m]:
                cell += f", {r.ci_undefined[m]} undefined"
            cells.append(cell)
        lines.append(f"| {r.runs} | " + " | ".join(cells) + " |")
    lines.append("")
    if study.power:
        effects = sorted({p.effect_pct for p in study.power})
        runs = sorted({p.runs for p in study.power})
        by = {(p.runs, p.effect_pct): p for p in study.power}
        pair = cfg["pair"]
        lines.append(f"Power: % of experiments in which the affected test is significant (fixed vs random, Bonferroni), "
                     f"carry-over pair {pair}; {cfg['reps_power']} experiments per cell")
        lines.append("")
        lines.append("| N runs/arm | " + " | ".join(f"{e:g} %" for e in effects) + " |")
        lines.append("|---|" + "---|" * len(effects))
        for n in runs:
            lines.append(f"| {n} | " + " | ".join(_pct(by[(n, e)].power["bonferroni"]) for e in effects) + " |")
        lines.append("")
        lines.append("Same, Holm:")
        lines.append("")
        lines.append("| N runs/arm | " + " | ".join(f"{e:g} %" for e in effects) + " |")
        lines.append("|---|" + "---|" * len(effects))
        for n in runs:
            lines.append(f"| {n} | " + " | ".join(_pct(by[(n, e)].power["holm"]) for e in effects) + " |")
        lines.append("")
        lines.append("Smallest N of the grid with at least 80 % power (Bonferroni; '>' = not reached in the grid):")
        lines.append("")
        lines.append("| effect | " + " | ".join(f"{e:g} %" for e in effects) + " |")
        lines.append("|---|" + "---|" * len(effects))
        lines.append("| N runs/arm | " + " | ".join(_needed(by, runs, e) for e in effects) + " |")
        if study.power[0].carryover_power is not None:
            lines.append("")
            lines.append("Carry-over diagnostics: % of experiments in which 'B after A' is flagged (random arm, Bonferroni over the experiment's carry-over family)")
            lines.append("")
            lines.append("| N runs/arm | " + " | ".join(f"{e:g} %" for e in effects) + " |")
            lines.append("|---|" + "---|" * len(effects))
            for n in runs:
                lines.append(f"| {n} | " + " | ".join(_pct(by[(n, e)].carryover_power["bonferroni"]) for e in effects) + " |")  # type: ignore[index]
    return "\n".join(lines)


def _needed(by: dict[tuple[int, float], PowerResult], runs: Sequence[int], effect: float, target: float = 0.8) -> str:
    for n in runs:
        if by[(n, effect)].power["bonferroni"].rate >= target:
            return str(n)
    return f"> {max(runs)}"


def to_json(study: Study) -> dict[str, Any]:
    return {"config": study.config, "seconds": study.seconds, "null": [asdict(r) for r in study.null], "power": [asdict(r) for r in study.power]}


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions: a smoke run of a few seconds")
    parser.add_argument("--tests", type=int, default=10, help="tests per experiment (default %(default)s)")
    parser.add_argument("--runs", default="10,20,50", help="runs per arm, comma-separated (default %(default)s)")
    parser.add_argument("--effects", default="1,2,5,10", help="carry-over effects in %%, comma-separated (default %(default)s)")
    parser.add_argument("--reps-null", type=int, default=None, help="experiments per null row (default 4000, --quick 400)")
    parser.add_argument("--reps-power", type=int, default=None, help="experiments per power cell (default 1000, --quick 200)")
    parser.add_argument("--cv", default="2,5", help="range of the tests' CV in %%, low,high (default %(default)s)")
    parser.add_argument("--apart", action="store_true", help="put the carry-over pair far apart in the fixed order")
    parser.add_argument("--no-carryover-diagnostics", action="store_true", help="skip the diagnostics' carry-over test (faster)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=None, help="also write the results as JSON to this file")
    args = parser.parse_args(argv)
    cv = _floats(args.cv)
    if len(cv) != 2 or not 0 < cv[0] <= cv[1]:
        parser.error("--cv takes two percentages low,high")
    runs = [int(x) for x in _floats(args.runs)]
    if min(runs) < 6:
        parser.error("--runs: at least 6 runs per arm (the exact 95% median CI needs 6 values)")
    study = run_study(
        tests=args.tests,
        runs=runs,
        effects=[e / 100 for e in _floats(args.effects)],
        reps_null=args.reps_null or (400 if args.quick else 4000),
        reps_power=args.reps_power or (200 if args.quick else 1000),
        seed=args.seed,
        cv=(cv[0] / 100, cv[1] / 100),
        carryover=not args.no_carryover_diagnostics,
        apart=args.apart,
        progress=True,
    )
    print(render(study), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(to_json(study), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
