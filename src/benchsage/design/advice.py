"""Run advice from a pilot: how many runs per arm each test needs to find an order effect.

A finished pilot experiment (or imported data) holds each test's own values. Resampled into
simulated experiments whose fixed arm is PCT % slower, they show how often the analysis's own
test (Kruskal-Wallis at the family-wise corrected alpha) would find the effect at n runs per
arm; the smallest n with 80 % power is the advice. No normal formula: the pilot's skew, tails
and ties are kept. The pilot's run and reset durations turn runs into time, and where resets
dominate, a simulation of the sequential design says how many runs stopping early saves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np
from scipy import special

from benchsage.design.sequential import SequentialPlan, default_looks
from benchsage.errors import DataError, UsageError
from benchsage.spec import Spec, TestSpec
from benchsage.stats.detectable import POWER  # the power the advice is for, as the analysis's detectable shift
from benchsage.stats.detectable import critical_z as _critical_z
from benchsage.stats.ranksum import mann_whitney_z, rank_sum_test
from benchsage.stats.sequential import DECIDED_EFFECT, UNDECIDED, SequentialDesign, decide_step, relative_interval, stops
from benchsage.stats.shift import shift_ci
from benchsage.vocabulary import ARMS, MIN_RUNS_PER_ARM

MIN_PILOT_RUNS = MIN_RUNS_PER_ARM  # per arm: the analysis gives no p-value below it
MAX_RUNS = 1000  # per arm: beyond this the advice says "more than"
REPS = 4000  # simulated experiments per candidate n: Monte-Carlo sd of a power of 0.8 is 0.0063
SEQUENTIAL_REPS = 400  # simulated sequential experiments per scenario
SEED = 1
CHUNK_VALUES = 2_000_000  # simulated values held at once (about 16 MB each array)
PAIR_BUDGET = 400_000_000  # pairwise differences the sequential no-effect rule may compute in all


class PilotTrials(Protocol):
    """The columns of a pilot's trial table that the advice reads (store.table.PilotTrials)."""

    test_names: tuple[str, ...]
    metric_names: tuple[str, ...]
    worker_names: tuple[str, ...]
    test: np.ndarray
    metric: np.ndarray
    arm: np.ndarray
    value: np.ndarray
    primary: np.ndarray

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class TestAdvice:
    """One (test, primary metric): the pilot's spread and the runs per arm it needs.

    values_per_arm: the values per arm the analysis needs, None when even MAX_RUNS do not reach
    the power (`power` is then the power at MAX_RUNS); runs_per_arm: the runs per arm on each
    worker that give them (the spec's `runs`: values_per_arm / workers, rounded up). values: the
    pilot values resampled (both arms pooled).
    """

    __test__ = False  # not a pytest test class

    test: str
    metric: str
    cv: float | None
    values: int
    runs_per_arm: int | None
    values_per_arm: int | None
    power: float
    expected_seconds: float | None

    def to_json(self, effect_pct: float) -> dict[str, Any]:
        row: dict[str, Any] = {"test": self.test, "metric": self.metric, "cv": self.cv, "runs_per_arm": self.runs_per_arm,
                               "values_per_arm": self.values_per_arm, "power": round(self.power, 4), "effect_pct": effect_pct,
                               "pilot_values": self.values,
                               "expected_seconds": self.expected_seconds}
        if self.runs_per_arm is None:
            row["note"] = f"more than {MAX_RUNS} runs per arm"
        return row


@dataclass(frozen=True)
class PilotTimes:
    """Medians over the pilot's completed runs: a whole run (reset, snapshot and trials), its
    reset, and the sum of the tests' median trial durations."""

    run_seconds: float
    reset_seconds: float
    trial_seconds: float

    @property
    def resets_dominate(self) -> bool:
        return self.reset_seconds > self.trial_seconds


@dataclass(frozen=True)
class SequentialSaving:
    """The sequential design with `max_runs` runs per arm (on each worker) at most, simulated on
    the pilot's resampled values: the expected runs per arm at which it stops when every test
    has the order effect and when none has, and how often it finds the effect on the test that
    needs the most runs (`power`)."""

    max_runs: int
    looks: int
    min_effect: float
    runs_if_effect: float
    runs_if_none: float
    power: float
    no_effect_rule: bool  # False: left out to bound the work, so the runs are an upper bound
    reps: int
    method: str

    def to_json(self, run_seconds: float | None) -> dict[str, Any]:
        def saved(runs: float) -> dict[str, Any]:
            runs_saved = self.max_runs - runs
            return {"expected_runs": round(runs, 2), "saved_runs": round(runs_saved, 2),
                    "saved_seconds": None if run_seconds is None else round(2 * runs_saved * run_seconds, 3)}

        return {"max_runs": self.max_runs, "looks": self.looks, "min_effect": self.min_effect,
                "if_effect": saved(self.runs_if_effect), "if_no_effect": saved(self.runs_if_none),
                "power": round(self.power, 4), "no_effect_rule": self.no_effect_rule, "reps": self.reps, "method": self.method}


@dataclass(frozen=True)
class Advice:
    """Runs per arm for every (test, primary metric) of the spec, and what they cost."""

    pilot: str
    effect_pct: float
    alpha: float
    correction: str
    alpha_test: float
    tests: tuple[TestAdvice, ...]
    times: PilotTimes | None
    sequential: SequentialSaving | None
    method: str
    notes: tuple[str, ...]

    @property
    def largest(self) -> TestAdvice:
        return _largest(self.tests)

    def to_json(self) -> list[dict[str, Any]]:
        """The `advice` list of `benchsage plan --pilot DIR --json`."""
        return [t.to_json(self.effect_pct) for t in self.tests]

    def summary_json(self) -> dict[str, Any]:
        """Everything the rows share: the effect, the test, the durations, the sequential saving."""
        largest = self.largest
        return {
            "pilot": self.pilot,
            "effect_pct": self.effect_pct,
            "power": POWER,
            "alpha": self.alpha,
            "correction": self.correction,
            "alpha_test": self.alpha_test,
            "m": len(self.tests),
            "runs_per_arm": largest.runs_per_arm,
            "test": largest.test,
            "expected_seconds": largest.expected_seconds,
            "run_seconds": None if self.times is None else self.times.run_seconds,
            "reset_seconds": None if self.times is None else self.times.reset_seconds,
            "trial_seconds": None if self.times is None else self.times.trial_seconds,
            "max_runs": MAX_RUNS,
            "reps": REPS,
            "seed": SEED,
            "method": self.method,
            "sequential": None if self.sequential is None else self.sequential.to_json(self.times.run_seconds if self.times else None),
            "notes": list(self.notes),
        }


def advise(spec: Spec, table: PilotTrials, times: PilotTimes | None, pilot: str, *, effect: float | None = None) -> Advice:
    """Advice for the experiment `spec` from the trials of a pilot experiment (`table`, read
    from the directory or data file `pilot`, and its run durations when it has a journal).
    effect: the order effect to detect, in percent (default: the spec's min_effect, else 2).
    Raises UsageError when the pilot ran other tests than the spec, and DataError when it has
    too few values to resample from."""
    effect_pct = float(effect) if effect is not None else spec.min_effect
    _check_tests(spec, table, pilot)
    pools = _pools(spec, table, pilot)
    m = len(pools)
    alpha_test = spec.alpha / m
    z_crit = _critical_z(alpha_test)
    factor = 1.0 + effect_pct / 100.0
    workers = len(spec.workers)
    rng = np.random.default_rng(SEED)
    rows = []
    for (test, metric), pool in pools.items():
        n, power = smallest_runs(pool, factor, z_crit, int(rng.integers(2**63)))
        runs = None if n is None else math.ceil(n / workers)
        seconds = None if times is None or runs is None else round(2 * runs * times.run_seconds, 3)
        rows.append(TestAdvice(test, metric, _cv(pool), len(pool), runs, n, power, seconds))
    advice_rows = tuple(rows)
    largest = _largest(advice_rows)
    sequential = None
    if times is not None and times.resets_dominate and largest.runs_per_arm is not None:
        sequential = sequential_saving(spec, list(pools.values()), factor, largest.runs_per_arm, advice_rows.index(largest),
                                       np.random.default_rng(rng.integers(2**63)))
    notes = _notes(spec, table, pools, alpha_test)
    return Advice(
        pilot=pilot,
        effect_pct=effect_pct,
        alpha=spec.alpha,
        correction=spec.correction,
        alpha_test=alpha_test,
        tests=advice_rows,
        times=times,
        sequential=sequential,
        method=_method(spec, m, effect_pct, alpha_test),
        notes=notes,
    )


def _largest(tests: Sequence[TestAdvice]) -> TestAdvice:
    """The test that needs the most runs (None counts as more than any number)."""
    return max(tests, key=lambda t: (t.runs_per_arm is None, t.runs_per_arm or 0))


# --------------------------------------------------------------------------------------------
# The pilot's values


def _check_tests(spec: Spec, table: PilotTrials, pilot: str) -> None:
    """The pilot must have run exactly the spec's tests (by name)."""
    have = set(table.test_names)
    want = [t.name for t in spec.tests]
    missing = [name for name in want if name not in have]
    extra = [name for name in table.test_names if name not in set(want)]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"not in the pilot: {', '.join(missing)}")
        if extra:
            parts.append(f"not in the spec: {', '.join(extra)}")
        raise UsageError(
            f"--pilot {pilot}: its tests differ from those of {spec.path} ({'; '.join(parts)}); "
            "run advice needs a pilot of the same tests (run the spec itself with few runs, e.g. --runs 10)"
        )


def _pools(spec: Spec, table: PilotTrials, pilot: str) -> dict[tuple[str, str], np.ndarray]:
    """Each (test, primary metric)'s pilot values, both arms pooled, in the spec's test order.

    The primary metrics are the spec's; a test none of whose spec metrics the pilot has (imported
    data names metrics its own way) takes the pilot's primary metrics. A pilot with fewer than
    MIN_PILOT_RUNS values in an arm of any of them is a DataError saying how many more runs."""
    finite = np.isfinite(table.value)
    pools: dict[tuple[str, str], np.ndarray] = {}
    short: list[tuple[int, str]] = []
    for t in spec.tests:
        code = table.test_names.index(t.name)
        mine = finite & (table.test == code)
        for metric in _metrics(t, table, mine):
            known = metric in table.metric_names
            rows = mine & (table.metric == table.metric_names.index(metric)) if known else np.zeros(len(table), dtype=bool)
            counts = np.bincount(table.arm[rows].astype(np.int64), minlength=2)
            if counts.min() < MIN_PILOT_RUNS:
                have = " and ".join(f"{counts[i]} {ARMS[i]}" for i in (0, 1))
                short.append((MIN_PILOT_RUNS - int(counts.min()), f"{t.name} ({metric}): {have}"))
            pools[(t.name, metric)] = np.ascontiguousarray(table.value[rows], dtype=np.float64)
    if short:
        more = max(k for k, _ in short)
        raise DataError(
            f"--pilot {pilot}: too few values to resample from ({'; '.join(text for _, text in short)}): run advice needs "
            f"at least {MIN_PILOT_RUNS} per arm, {more} more; run a pilot with at least {MIN_PILOT_RUNS} runs per arm "
            f"(benchsage run {spec.path} --runs {MIN_PILOT_RUNS})"
        )
    return pools


def _metrics(test: TestSpec, table: PilotTrials, rows: np.ndarray) -> list[str]:
    """The test's primary metrics that the pilot has values of (see _pools)."""
    present = {table.metric_names[i] for i in np.unique(table.metric[rows])}
    mine = [m for m in test.primary_metrics if m in present]
    if mine:
        return mine
    pilot_primary = {table.metric_names[i] for i in np.unique(table.metric[rows & table.primary])}
    return [m for m in table.metric_names if m in pilot_primary] or list(test.primary_metrics)


def _cv(pool: np.ndarray) -> float | None:
    """std / mean (ddof 0, as the analysis's cv_fixed and cv_random), None where the mean is 0."""
    mean = float(pool.mean()) if len(pool) else 0.0
    return round(float(pool.std()) / mean, 6) if mean else None


def _notes(spec: Spec, table: PilotTrials, pools: dict[tuple[str, str], np.ndarray], alpha_test: float) -> tuple[str, ...]:
    notes = []
    shown = _pilot_effects(table, list(pools), alpha_test)
    if shown:
        notes.append(f"the pilot already shows an order effect on {', '.join(shown)} (Kruskal-Wallis p <= {alpha_test:.3g}): "
                     "both arms pooled widen its values, so the advice for it is conservative")
    declared = {(t.name, m) for t in spec.tests for m in t.primary_metrics}
    other = sorted({f"{t} ({m})" for t, m in pools if (t, m) not in declared})
    if other:
        notes.append(f"the pilot has none of the spec's metrics for {', '.join(other)}: advised on the pilot's own")
    if len(table.worker_names) > 1:
        notes.append(f"the values of the pilot's {len(table.worker_names)} workers are pooled: the analysis compares the arms "
                     "within each worker, so this advice is conservative")
    return tuple(notes)


def _pilot_effects(table: PilotTrials, keys: list[tuple[str, str]], alpha_test: float) -> list[str]:
    """The (test, metric)s whose pilot arms already differ at the corrected level."""
    shown = []
    for test, metric in keys:
        if metric not in table.metric_names:
            continue
        rows = (table.test == table.test_names.index(test)) & (table.metric == table.metric_names.index(metric)) & np.isfinite(table.value)
        z = mann_whitney_z(table.value[rows & (table.arm == 0)], table.value[rows & (table.arm == 1)]).z
        if np.isfinite(z) and special.chdtrc(1.0, z * z) <= alpha_test:
            shown.append(f"{test} ({metric})")
    return shown


# --------------------------------------------------------------------------------------------
# Power by resampling


class PowerCurve:
    """Bootstrap experiments from one test's pilot values: `reps` experiments of n runs per arm,
    the fixed arm's values multiplied by `factor`, tested as the analysis tests them.

    A bootstrap sample is fully described by how often it drew each distinct pilot value, so,
    from n runs per arm up to half the distinct values on, an experiment is two multinomial count
    vectors and its rank statistic comes from the counts: the work grows with the number of
    distinct pilot values, not with n, and a thousand runs per arm cost what fifty do. Smaller
    experiments rank their drawn values. The draws at each n come from a generator seeded by
    (seed, n): power(n) is reproducible, whatever order the search asks for it in.
    """

    def __init__(self, pool: np.ndarray, factor: float, z_crit: float, seed: int, reps: int = REPS) -> None:
        self.values, self.inverse, multiplicity = np.unique(np.asarray(pool, dtype=np.float64), return_inverse=True, return_counts=True)
        self.prob = multiplicity / multiplicity.sum()
        self.factor = factor
        self.z_crit = z_crit
        self.seed = seed
        self.reps = reps
        # Both arms' possible values sorted once: the fixed arm's (x factor) first, then the random arm's.
        merged = np.concatenate([self.values * factor, self.values])
        self.order = np.argsort(merged, kind="stable")
        ordered = merged[self.order]
        self.starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # first slot of each run of tied values
        self.fixed_slot = self.order < len(self.values)

    def z(self, fixed_counts: np.ndarray, random_counts: np.ndarray) -> np.ndarray:
        """The tie-corrected Mann-Whitney z of each experiment (rows: how often each distinct
        pilot value was drawn into each arm), as stats.ranksum.mann_whitney_z computes it from
        the values themselves; z^2 is the analysis's Kruskal-Wallis H. NaN where every value is equal."""
        n0 = fixed_counts.sum(axis=1).astype(np.float64)
        n1 = random_counts.sum(axis=1).astype(np.float64)
        counts = np.concatenate([fixed_counts, random_counts], axis=1)[:, self.order].astype(np.float64)
        tied = np.add.reduceat(counts, self.starts, axis=1)  # values in each run of ties
        tied_fixed = np.add.reduceat(counts * self.fixed_slot, self.starts, axis=1)
        rank = np.cumsum(tied, axis=1) - (tied - 1.0) / 2.0  # the average rank of each run
        u = (tied_fixed * rank).sum(axis=1) - n0 * (n0 + 1.0) / 2.0
        tie = (tied**3 - tied).sum(axis=1)
        return rank_sum_test(u - n0 * n1 / 2.0, n0, n1, tie).z

    def power(self, n: int) -> float:
        """Share of the simulated experiments in which the analysis finds the order effect:
        Kruskal-Wallis p <= alpha_test, i.e. |z| >= z_crit."""
        rng = np.random.default_rng([self.seed, n])
        k = len(self.values)
        by_counts = 2 * n >= k
        found = 0
        per = max(1, CHUNK_VALUES // (2 * (k if by_counts else n)))
        for start in range(0, self.reps, per):
            size = min(per, self.reps - start)
            if by_counts:
                z = self.z(rng.multinomial(n, self.prob, size=size), rng.multinomial(n, self.prob, size=size))
            else:
                x = self.values[self.inverse[rng.integers(0, len(self.inverse), size=(size, 2, n))]]
                z = mann_whitney_z(x[:, 0, :] * self.factor, x[:, 1, :]).z
            with np.errstate(invalid="ignore"):
                found += int((np.abs(z) >= self.z_crit).sum())  # NaN (all values equal): not found
        return found / self.reps


def smallest_runs(pool: np.ndarray, factor: float, z_crit: float, seed: int, *, reps: int = REPS,
                  target: float = POWER, max_runs: int = MAX_RUNS) -> tuple[int | None, float]:
    """The smallest runs per arm (>= MIN_PILOT_RUNS) whose simulated power reaches `target`, and
    that power; (None, power at max_runs) when max_runs is not enough. Doubling from
    MIN_PILOT_RUNS, then bisection."""
    curve = PowerCurve(pool, factor, z_crit, seed, reps)
    lo, n = MIN_PILOT_RUNS - 1, MIN_PILOT_RUNS
    while True:
        p = curve.power(n)
        if p >= target:
            hi, p_hi = n, p
            break
        if n >= max_runs:
            return None, p
        lo, n = n, min(2 * n, max_runs)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        p = curve.power(mid)
        if p >= target:
            hi, p_hi = mid, p
        else:
            lo = mid
    return hi, p_hi


def _method(spec: Spec, m: int, effect_pct: float, alpha_test: float) -> str:
    holm = "; with Holm this is its first, strictest step, so the advice is conservative" if spec.correction == "holm" else ""
    return (
        f"bootstrap from each test's pilot values (both arms pooled), {REPS} simulated experiments per candidate "
        f"number of runs, the fixed arm {effect_pct:g}% larger; Kruskal-Wallis (tie-corrected) at alpha/m = "
        f"{spec.alpha:g}/{m} = {alpha_test:.3g} (Bonferroni over the {m} primary comparisons{holm}); the smallest runs per "
        f"arm with power >= {POWER:g}, by doubling from {MIN_PILOT_RUNS} and bisection (seed {SEED}){_fleet(len(spec.workers))}"
    )


def _fleet(workers: int) -> str:
    if workers == 1:
        return ""
    return (f"; {workers} workers: each runs the values per arm / {workers}, rounded up (the analysis compares the arms "
            "within each worker; the power assumes the workers measure alike)")


# --------------------------------------------------------------------------------------------
# The sequential design on the same resampled values


def sequential_saving(spec: Spec, pools: Sequence[np.ndarray], factor: float, runs: int, focus: int,
                      rng: np.random.Generator, *, reps: int = SEQUENTIAL_REPS) -> SequentialSaving:
    """Simulate the sequential design the runner would carry out with `runs` runs per arm (the
    spec's looks, else the default for those runs; its min_effect; its workers' values pooled)
    on the pilot's resampled values, every test with the effect (factor) and none with it; its
    power is that on pools[focus], the test that needs the most runs."""
    looks = min(spec.looks or default_looks(runs), runs)
    plan = SequentialPlan(runs, looks, len(spec.workers), spec.alpha, spec.correction, spec.min_effect, spec.decide)
    design = plan.design
    pairs = reps * len(pools) * sum(p * p for p in design.look_points())
    no_effect_rule = pairs <= PAIR_BUDGET
    with_effect = _simulate(design, pools, factor, reps, rng, no_effect_rule)
    without = _simulate(design, pools, 1.0, reps, rng, no_effect_rule)
    points = np.asarray(plan.points)
    bound = "" if no_effect_rule else (" The no-effect rule was left out (its intervals would take too long to simulate), "
                                       "so these runs are an upper bound.")
    method = (f"{plan.method(len(pools))}; simulated {reps} times on the pilot's resampled values with every test "
              f"{(factor - 1) * 100:g}% larger in the fixed arm, and {reps} times with no order effect.{bound}")
    return SequentialSaving(runs, looks, spec.min_effect, float(points[with_effect[0]].mean()), float(points[without[0]].mean()),
                            float(with_effect[1][focus]), no_effect_rule, reps, method)


def _simulate(design: SequentialDesign, pools: Sequence[np.ndarray], factor: float, reps: int, rng: np.random.Generator,
              no_effect_rule: bool) -> tuple[np.ndarray, np.ndarray]:
    """(the look at which each simulated experiment stops, each test's share of experiments in
    which it was decided "effect")."""
    m, n = len(pools), design.max_runs
    stops = []
    effect = np.zeros(m)
    per = max(1, CHUNK_VALUES // (m * 2 * n))
    for start in range(0, reps, per):
        size = min(per, reps - start)
        x = np.stack([pool[rng.integers(0, len(pool), size=(size, 2, n))] for pool in pools], axis=1)
        x[:, :, 0, :] *= factor
        stop, state = sequential_stops(design, x, no_effect_rule)
        stops.append(stop)
        effect += (state == DECIDED_EFFECT).sum(axis=0)
    return np.concatenate(stops), effect / reps


def sequential_stops(design: SequentialDesign, x: np.ndarray, no_effect_rule: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Every look of `design` on values x (reps, m, 2, max_runs), as SequentialDesign.decide
    takes them one experiment at a time: the look (0-based) at which each experiment stops (its
    rule met: every test decided, or the verdict settled; or the last look) and the tests'
    final states (nothing is decided after the stop)."""
    reps, m = x.shape[:2]
    points = design.look_points()
    crit = design.critical(m)
    state = np.full((reps, m), UNDECIDED, dtype=np.int8)
    stop = np.full(reps, len(points) - 1)
    stopped = np.zeros(reps, dtype=bool)
    zs = []
    for k, p in enumerate(points):
        f, r = x[:, :, 0, :p], x[:, :, 1, :p]
        zs.append(np.abs(mann_whitney_z(f, r).z) if p >= design.min_values else np.full((reps, m), np.nan))
        within = np.zeros((reps, m), dtype=bool)
        open_ = (state == UNDECIDED) & ~stopped[:, None]
        if no_effect_rule and p >= design.min_values and open_.any():
            rows, cols = np.nonzero(open_)
            ci = shift_ci(f[rows, cols], r[rows, cols], crit[k])
            lo, hi = relative_interval(ci.low, ci.high, np.median(f[rows, cols], axis=1))
            with np.errstate(invalid="ignore"):
                within[rows, cols] = (lo >= -design.min_effect) & (hi <= design.min_effect)
        after, _ = decide_step(design, k, np.stack(zs, axis=2), within, state)
        state = np.where(stopped[:, None], state, after)
        now = ~stopped & stops(state, design.rule)
        stop = np.where(now, k, stop)
        stopped |= now
    return stop, state
