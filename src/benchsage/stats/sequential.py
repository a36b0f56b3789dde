"""Sequential stopping: decide each test's order effect at interim looks, with fewer runs.

A group-sequential design looks at the fixed and random arms after n_1 < n_2 < ... < n_K runs
per arm. At every look each undecided test is either decided "effect" (its Mann-Whitney
statistic crosses a Lan-DeMets alpha-spending boundary; the family-wise error over tests and
looks stays at most alpha, by Bonferroni or a group-sequential Holm step-down) or "no-effect"
(the repeated confidence interval of the shift between arms lies within +-min_effect % of the
fixed-arm median), or stays undecided. The experiment can stop when every test is decided.

Pure functions and frozen values only; the runner calls `SequentialDesign.decide` between runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Hashable, Mapping, Sequence

import numpy as np
from scipy import special

from benchsage.stats.ranksum import mann_whitney_z
from benchsage.stats.shift import shift_ci

SPENDINGS: tuple[str, ...] = ("obrien-fleming", "pocock")
CORRECTIONS: tuple[str, ...] = ("bonferroni", "holm")
EFFECT = "effect"
NO_EFFECT = "no-effect"

# Codes of a test's state inside the vectorised core.
UNDECIDED, DECIDED_EFFECT, DECIDED_NO_EFFECT = 0, 1, 2
_NAMES = {UNDECIDED: None, DECIDED_EFFECT: EFFECT, DECIDED_NO_EFFECT: NO_EFFECT}
_CODES = {None: UNDECIDED, EFFECT: DECIDED_EFFECT, NO_EFFECT: DECIDED_NO_EFFECT}

# Beyond |z| = 12 the standard normal density is below 1e-31: the numerical integration treats
# a wider continuation region as the whole line.
_Z_MAX = 12.0


# --------------------------------------------------------------------------------------------
# Alpha spending and boundaries


def alpha_spending(t: np.ndarray | float, alpha: float, spending: str = "obrien-fleming") -> np.ndarray:
    """Cumulative two-sided type I error spent by information fraction t (Lan & DeMets 1983).

    The two-sided test is two one-sided tests at alpha / 2 each, and the spending function is
    applied to each side, as in Lan & DeMets' and Reboussin et al.'s ld98 program, R's
    ldbounds and gsDesign (test.type = 2) and Jennison & Turnbull's tables. With a = alpha / 2:

    obrien-fleming: per side a(t) = 2 - 2 Phi(z_{1-a/2} / sqrt(t)), close to O'Brien & Fleming's
        (1979) boundaries: almost nothing is spent early, and the last boundary is near the
        fixed-sample one. Two-sided: 2 a(t).
    pocock: per side a(t) = a ln(1 + (e - 1) t), close to Pocock's (1977) constant boundaries.
        Two-sided: alpha ln(1 + (e - 1) t).

    Both are 0 at t = 0 and alpha at t = 1 (Lan & DeMets, "Discrete sequential boundaries for
    clinical trials", Biometrika 70(3), 1983; Jennison & Turnbull 2000, section 7.2).
    """
    _check_alpha(alpha)
    _check_spending(spending)
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
    if spending == "pocock":
        return alpha * np.log1p((math.e - 1.0) * t)
    side = alpha / 2.0
    z = -special.ndtri(side / 2.0)  # z_{1-a/2}, accurate for tiny alpha
    with np.errstate(divide="ignore"):
        return np.where(t > 0, 2.0 * 2.0 * special.ndtr(-z / np.sqrt(np.where(t > 0, t, 1.0))), 0.0)


@dataclass(frozen=True)
class Boundaries:
    """Two-sided efficacy boundaries of one group-sequential test at level `alpha`.

    information: the information fractions t_1 < ... < t_K (t_K <= 1).
    critical: c_k; the test rejects at look k when |Z_k| >= c_k (inf: nothing can be rejected).
    spent: cumulative alpha spent by look k, alpha(t_k) (the probability, under no effect, of
        rejecting at or before look k).
    nominal: 2 (1 - Phi(c_k)), the two-sided p-value a single look at c_k corresponds to.
    """

    alpha: float
    spending: str
    information: tuple[float, ...]
    critical: tuple[float, ...]
    spent: tuple[float, ...]
    nominal: tuple[float, ...]


def spending_boundaries(information: Sequence[float], alpha: float, spending: str = "obrien-fleming") -> Boundaries:
    """Exact two-sided boundaries for the canonical joint distribution of Z_1..Z_K.

    Under no effect, Z_k = S_k / sqrt(t_k) where S is Brownian motion at information time t:
    Z_1..Z_K are standard normal with corr(Z_j, Z_k) = sqrt(t_j / t_k) (j < k), the large-sample
    joint distribution of standardized rank statistics on accumulating data (Jennison &
    Turnbull, "Group Sequential Methods with Applications to Clinical Trials", 2000, ch. 3 and
    12). c_k solves

        P(|Z_1| < c_1, ..., |Z_{k-1}| < c_{k-1}, |Z_k| >= c_k) = alpha(t_k) - alpha(t_{k-1}),

    computed by the recursive numerical integration of Armitage, McPherson & Rowe (1969) as set
    out by Jennison & Turnbull ch. 19: the sub-density of Z_k on the continuation region,

        g_1(z) = phi(z),
        g_k(z) = int_{-c_{k-1}}^{c_{k-1}} g_{k-1}(u) sqrt(t_k / d) phi((z sqrt(t_k) - u sqrt(t_{k-1})) / sqrt(d)) du,

    with d = t_k - t_{k-1}, by Simpson's rule on a grid finer than the transition kernel, and
    c_k by root finding on the exit probability. Accurate to about 1e-6 in c_k; with K = 5 equal
    looks at alpha = 0.05 the O'Brien-Fleming-type boundaries are 4.877, 3.357, 2.680, 2.290,
    2.031 (the published values, e.g. of the ld98 program: Reboussin, DeMets, Kim & Lan,
    Controlled Clinical Trials 21, 2000), the Pocock-type ones 2.438, 2.427, 2.410, 2.397,
    2.386; tests/stats/test_sequential.py also checks them against scipy's multivariate normal
    distribution function.
    """
    t = _check_information(information)
    return _boundaries(t, float(alpha), spending)


@lru_cache(maxsize=4096)
def _boundaries(t: tuple[float, ...], alpha: float, spending: str) -> Boundaries:
    _check_alpha(alpha)
    _check_spending(spending)
    spent = alpha_spending(np.array(t), alpha, spending)
    k_max = len(t)
    critical: list[float] = []
    # Grid step: an eighth of the narrowest transition kernel (in units of the earlier z), at
    # most 0.05; against a grid five times finer, c_k moves by less than 5e-7.
    kernel_sd = [math.sqrt((t[k] - t[k - 1]) / t[k - 1]) for k in range(1, k_max)]
    step = min([0.05] + [s / 8.0 for s in kernel_sd])
    z = w = g = None  # grid, Simpson weights and sub-density on the previous continuation region
    previous_spent = 0.0
    for k in range(k_max):
        target = float(spent[k]) - previous_spent
        previous_spent = float(spent[k])
        if k == 0:
            c = float(-special.ndtri(target / 2.0)) if target > 0 else math.inf
        else:
            assert z is not None and w is not None and g is not None
            sd = math.sqrt(t[k] - t[k - 1])
            a, b = math.sqrt(t[k - 1]) / sd, math.sqrt(t[k]) / sd
            mass = w * g

            def exit_probability(c: float) -> float:
                # P(|Z_k| >= c and no earlier exit) = sum over u of g(u) [P(up) + P(down)]
                return float(mass @ (special.ndtr(a * z - b * c) + special.ndtr(-a * z - b * c)))

            c = _solve_critical(exit_probability, target)
        critical.append(c)
        if k + 1 < k_max:
            half = min(c, _Z_MAX)
            n_int = max(2, 2 * math.ceil(half / step))
            z_new = np.linspace(-half, half, n_int + 1)
            w_new = np.full(n_int + 1, 2.0)
            w_new[1::2] = 4.0
            w_new[0] = w_new[-1] = 1.0
            w_new *= (2.0 * half / n_int) / 3.0
            if k == 0:
                g_new = np.exp(-0.5 * z_new * z_new) / math.sqrt(2.0 * math.pi)
            else:
                assert z is not None and w is not None and g is not None
                sd = math.sqrt(t[k] - t[k - 1])
                scale = math.sqrt(t[k]) / sd
                x = (z_new[:, None] * math.sqrt(t[k]) - z[None, :] * math.sqrt(t[k - 1])) / sd
                g_new = (np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)) @ (w * g) * scale
            z, w, g = z_new, w_new, g_new
    nominal = tuple(float(2.0 * special.ndtr(-c)) if math.isfinite(c) else 0.0 for c in critical)
    return Boundaries(
        alpha=alpha,
        spending=spending,
        information=t,
        critical=tuple(critical),
        spent=tuple(float(s) for s in spent),
        nominal=nominal,
    )


def _solve_critical(exit_probability: Any, target: float) -> float:
    """The c at which exit_probability(c) (decreasing in c) equals target, on a log scale so
    that tiny targets (alpha / m with many tests, early O'Brien-Fleming looks) keep their
    relative precision."""
    if target <= 0:
        return math.inf
    log_target = math.log(target)

    def f(c: float) -> float:
        return math.log(max(exit_probability(c), 1e-300)) - log_target

    lo, hi = 0.0, 2.0
    if f(lo) <= 0:  # everything left already exits at c = 0 (cannot happen for alpha < 1/2)
        return 0.0
    while f(hi) > 0:
        lo, hi = hi, hi * 1.5
        if hi > 60:
            return math.inf
    from scipy import optimize  # here: 0.1 s of import time every analysis would pay

    return float(optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-12))


# --------------------------------------------------------------------------------------------
# The shift's CI relative to the fixed arm


def relative_interval(low: np.ndarray, high: np.ndarray, median: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CI [low, high] of the shift in percent of the (fixed-arm) median: 100 x / |median|.
    NaN where the median is 0, except that a CI of exactly [0, 0] stays [0, 0]."""
    low, high, med = (np.asarray(v, dtype=np.float64) for v in (low, high, median))
    scale = np.abs(med)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(scale > 0, 100.0 * low / scale, np.where(low == 0, 0.0, np.nan))
        hi = np.where(scale > 0, 100.0 * high / scale, np.where(high == 0, 0.0, np.nan))
    return lo, hi


# --------------------------------------------------------------------------------------------
# The decision at one look, vectorised over independent experiments (the runner has one)


def decide_step(
    design: "SequentialDesign",
    look: int,
    abs_z: np.ndarray,
    within: np.ndarray,
    state: np.ndarray,
    information: Sequence[float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """New states of m tests in R experiments at look `look` (0-based), all looks' data known.

    abs_z: (R, m, look + 1) |z| of each test at looks 0..look (NaN: undefined or too few values).
    within: (R, m) bool, the no-effect condition at this look (the repeated CI of the shift lies
        within +-min_effect % of the median).
    state: (R, m) codes UNDECIDED / DECIDED_EFFECT / DECIDED_NO_EFFECT before this look.
    information: the information fractions of looks 0..look as taken (at least look + 1 of
        them; see `SequentialDesign.decide`); None: the design's planned fractions.
    Returns (new state, level): level is the per-test alpha at which a test decided "effect" at
    this look crossed (alpha / m for Bonferroni, alpha / h for Holm), NaN otherwise.

    Efficacy comes first: a test that crosses at this look is "effect" even if its CI also lies
    within the margin (the effect is then real but smaller than min_effect). A decided test
    stays decided; `SequentialDesign.decide` is this function with R = 1.
    """
    abs_z = np.asarray(abs_z, dtype=np.float64)
    state = np.asarray(state)
    r, m = state.shape
    if abs_z.shape != (r, m, look + 1):
        raise ValueError(f"abs_z must have shape {(r, m, look + 1)}, got {abs_z.shape}")
    open_ = state == UNDECIDED
    rejected = state == DECIDED_EFFECT
    new_state = state.copy()
    level = np.full((r, m), np.nan)
    with np.errstate(invalid="ignore"):
        if design.correction == "bonferroni":
            c = design.critical(m, m, information)[look]
            cross = open_ & (abs_z[:, :, look] >= c)
            rejected |= cross
            level[cross] = design.alpha / m
        else:
            # Holm across looks (closed testing of Bonferroni group-sequential intersection
            # tests): with h hypotheses not yet rejected, every open test whose |z| crossed
            # c_l(alpha / h) at some look l <= now is rejected; repeat while h shrinks.
            while True:
                h = m - rejected.sum(axis=1)
                crit = np.full((r, look + 1), np.inf)
                for hv in np.unique(h[h > 0]):
                    crit[h == hv] = design.critical(m, int(hv), information)[: look + 1]
                cross = open_ & ~rejected & (abs_z >= crit[:, None, :]).any(axis=2)
                if not cross.any():
                    break
                rejected |= cross
                level = np.where(cross, design.alpha / np.maximum(h, 1)[:, None], level)
    newly_effect = open_ & rejected
    new_state[newly_effect] = DECIDED_EFFECT
    newly_no_effect = open_ & ~newly_effect & np.asarray(within, dtype=bool)
    new_state[newly_no_effect] = DECIDED_NO_EFFECT
    return new_state, level


# --------------------------------------------------------------------------------------------
# The design and its looks: what the runner calls and what the journal and JSON record


@dataclass(frozen=True)
class TestLook:
    """One test at one look.

    z: the standardized Mann-Whitney statistic (positive: the fixed arm's values larger); None
        with fewer than min_values values in an arm or all values equal.
    critical: the Bonferroni boundary c_k(alpha / m) at this look: the efficacy boundary with
        Bonferroni, and the critical value of the repeated CI with either correction.
    shift, shift_ci: Hodges-Lehmann shift (fixed minus random, in the metric's unit) and its
        repeated CI at this look; shift_ci_pct: that CI in percent of median_fixed.
    decided: "effect", "no-effect" or None, as of this look (a decided test stays decided);
        decided_at_look / decided_at_runs: when (runs per arm); level: the per-test alpha at
        which an "effect" crossed (alpha / m, or alpha / h with Holm).
    """

    __test__ = False  # not a pytest test class

    test: Hashable
    n_fixed: int
    n_random: int
    z: float | None
    critical: float
    shift: float | None
    shift_ci: tuple[float, float] | None
    median_fixed: float | None
    shift_ci_pct: tuple[float, float] | None
    decided: str | None
    decided_at_look: int | None
    decided_at_runs: int | None
    level: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "test": _key_json(self.test),
            "n_fixed": self.n_fixed,
            "n_random": self.n_random,
            "z": self.z,
            "critical": _finite(self.critical),
            "shift": self.shift,
            "shift_ci": list(self.shift_ci) if self.shift_ci else None,
            "median_fixed": self.median_fixed,
            "shift_ci_pct": list(self.shift_ci_pct) if self.shift_ci_pct else None,
            "decided": self.decided,
            "decided_at_look": self.decided_at_look,
            "decided_at_runs": self.decided_at_runs,
            "level": self.level,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "TestLook":
        ci, pct = d.get("shift_ci"), d.get("shift_ci_pct")
        crit = d.get("critical")
        return cls(
            test=_key_from_json(d["test"]),
            n_fixed=int(d["n_fixed"]),
            n_random=int(d["n_random"]),
            z=d.get("z"),
            critical=math.inf if crit is None else float(crit),
            shift=d.get("shift"),
            shift_ci=(float(ci[0]), float(ci[1])) if ci else None,
            median_fixed=d.get("median_fixed"),
            shift_ci_pct=(float(pct[0]), float(pct[1])) if pct else None,
            decided=d.get("decided"),
            decided_at_look=d.get("decided_at_look"),
            decided_at_runs=d.get("decided_at_runs"),
            level=d.get("level"),
        )


@dataclass(frozen=True)
class Look:
    """The result of one interim analysis.

    index: 0-based look; runs: runs per arm at this look; information: runs / max_runs.
    alpha_spent: family-wise alpha spent by this look, m x alpha_k(alpha / m) (the Bonferroni
        bound over the m tests; alpha at the last look).
    decided: how many tests are decided after this look (cumulative); newly_decided: at it.
    stop: every test is decided, or this is the last look: the experiment ends here.
    """

    index: int
    runs: int
    information: float
    alpha_spent: float
    m: int
    tests: tuple[TestLook, ...]
    decided: int
    newly_decided: int
    stop: bool

    def decisions(self) -> dict[Hashable, str | None]:
        return {t.test: t.decided for t in self.tests}

    def to_json(self) -> dict[str, Any]:
        """The look as CONTRACT.md's `sequential.looks[]` entry."""
        return {"runs": self.runs, "decided": self.decided, "alpha_spent": self.alpha_spent}

    def to_record(self) -> dict[str, Any]:
        """Everything about the look, JSON-ready, for the journal (`Look.from_record` reads it
        back, e.g. to resume an experiment's looks)."""
        return {
            "index": self.index,
            "runs": self.runs,
            "information": self.information,
            "alpha_spent": self.alpha_spent,
            "m": self.m,
            "decided": self.decided,
            "newly_decided": self.newly_decided,
            "stop": self.stop,
            "tests": [t.to_json() for t in self.tests],
        }

    @classmethod
    def from_record(cls, d: Mapping[str, Any]) -> "Look":
        return cls(
            index=int(d["index"]),
            runs=int(d["runs"]),
            information=float(d["information"]),
            alpha_spent=float(d["alpha_spent"]),
            m=int(d["m"]),
            tests=tuple(TestLook.from_json(t) for t in d["tests"]),
            decided=int(d["decided"]),
            newly_decided=int(d["newly_decided"]),
            stop=bool(d["stop"]),
        )


@dataclass(frozen=True)
class SequentialDesign:
    """A group-sequential order experiment: at most `max_runs` runs per arm, `looks` interim
    analyses evenly spaced in runs, family-wise error `alpha` over all tests and looks.

    correction: "bonferroni" (each test at alpha / m with its own spending boundaries) or "holm"
        (step-down across tests and looks; rejects everything Bonferroni rejects, and possibly
        more). spending: "obrien-fleming" (default) or "pocock" (see `alpha_spending`).
    min_effect: percent; a test is decided "no-effect" when the repeated CI of the shift lies
        within +-min_effect % of the fixed-arm median. min_values: a test with fewer values in
        an arm is not decided at that look (benchsage's fixed analysis needs 5 too).
    """

    max_runs: int
    looks: int
    alpha: float = 0.05
    correction: str = "bonferroni"
    min_effect: float = 2.0
    spending: str = "obrien-fleming"
    min_values: int = 5
    _points: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("max_runs", "looks", "min_values"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        if self.max_runs < 1:
            raise ValueError(f"max_runs must be at least 1, got {self.max_runs}")
        if self.looks < 1:
            raise ValueError(f"looks must be at least 1, got {self.looks}")
        if self.looks > self.max_runs:
            raise ValueError(f"looks ({self.looks}) cannot exceed the runs per arm ({self.max_runs}): each look needs at least one new run")
        if self.min_values < 1:
            raise ValueError(f"min_values must be at least 1, got {self.min_values}")
        _check_alpha(self.alpha)
        if self.correction not in CORRECTIONS:
            raise ValueError(f"unknown correction {self.correction!r}: expected one of {', '.join(CORRECTIONS)}")
        _check_spending(self.spending)
        if not isinstance(self.min_effect, (int, float, np.floating)) or not math.isfinite(self.min_effect) or self.min_effect <= 0:
            raise ValueError(f"min_effect must be a positive number of percent, got {self.min_effect!r}")
        points = tuple(math.ceil(k * self.max_runs / self.looks) for k in range(1, self.looks + 1))
        object.__setattr__(self, "_points", points)

    # -- the plan ---------------------------------------------------------------------------

    def look_points(self) -> tuple[int, ...]:
        """Runs per arm at each look: ceil(k max_runs / looks), k = 1..looks; the last is max_runs."""
        return self._points

    def information(self) -> tuple[float, ...]:
        """Information fractions t_k = runs at look k / max_runs."""
        return tuple(p / self.max_runs for p in self._points)

    def boundaries(self, level: float) -> Boundaries:
        """Two-sided spending boundaries of one test at per-test level `level` at this design's looks."""
        return spending_boundaries(self.information(), level, self.spending)

    def critical(self, m: int, h: int | None = None, information: Sequence[float] | None = None) -> tuple[float, ...]:
        """c_k(alpha / h) at every look, for a family of m tests (h defaults to m: Bonferroni):
        at the planned looks, or at `information`, the fractions of the looks as taken (c_k
        depends on t_1..t_k only, so a prefix of the looks gives their boundaries)."""
        h = m if h is None else h
        if m < 1 or not 1 <= h <= m:
            raise ValueError(f"need 1 <= h <= m, got h={h}, m={m}")
        t = self.information() if information is None else _check_information(information)
        return _boundaries(t, self.alpha / h, self.spending).critical

    def alpha_spent(self, m: int, information: Sequence[float] | None = None) -> tuple[float, ...]:
        """Family-wise alpha spent by each look with m tests: m x alpha_k(alpha / m), at the
        planned looks or at `information` (the looks as taken)."""
        if m < 1:
            raise ValueError(f"m must be at least 1, got {m}")
        t = self.information() if information is None else _check_information(information)
        spent = alpha_spending(np.array(t), self.alpha / m, self.spending)
        # exactly alpha at t = 1, not alpha within rounding
        return tuple(float(self.alpha) if tk >= 1.0 else float(m * s) for tk, s in zip(t, spent))

    def method(self, m: int | None = None, points: Sequence[int] | None = None) -> str:
        """One sentence naming every choice, for the JSON's `sequential.method`; `points`: the
        runs per arm the looks analyse when they are not the planned ones (decide's `runs`)."""
        spend = {"obrien-fleming": "O'Brien-Fleming-type", "pocock": "Pocock-type"}[self.spending]
        family = f" over {m} tests" if m is not None else ""
        corr = "Bonferroni" if self.correction == "bonferroni" else "Holm step-down across tests and looks"
        at = ", ".join(str(p) for p in (points if points is not None else self._points))
        return (
            f"group-sequential Mann-Whitney test of the fixed vs random arm, {self.looks} look"
            f"{'s' if self.looks != 1 else ''} at {at} runs per arm; Lan-DeMets {spend} alpha spending; "
            f"{corr}{family}, family-wise alpha {self.alpha:g}; no-effect when the repeated "
            f"Hodges-Lehmann CI of the shift lies within +-{self.min_effect:g}% of the fixed-arm median"
        )

    # -- one look ---------------------------------------------------------------------------

    def decide(
        self,
        look: int,
        data: Mapping[Hashable, tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]],
        previous: Sequence[Look] = (),
        runs: int | None = None,
    ) -> Look:
        """Analyse look `look` (0-based) and decide what can be decided.

        data: for every test of the family (the same tests at every look), its (fixed-arm
            values, random-arm values) so far: at most `runs` values per arm (a failed trial
            leaves one fewer; boundaries stay those of the runs).
        previous: the Look results of looks 0..look-1, in order (the Holm step-down uses the
            earlier looks' statistics; decisions already made are kept).
        runs: the runs per arm this look analyses, when they are not the planned
            look_points()[look]: more than the previous look's, at most max_runs.
        Returns the Look; `look.stop` says whether the experiment can end.

        Looks at other runs than planned keep the family-wise error at most alpha. The
        boundaries are those of the looks as taken: c_k solves the exit probability of the
        canonical joint distribution (corr(Z_j, Z_k) = sqrt(t_j / t_k)) at the information
        fractions t_j = runs_j / max_runs of this look and the earlier ones, spending
        alpha(t_k) by look k. That is Lan & DeMets' (1983) use of a spending function: the
        type I error stays alpha(t_K) <= alpha whatever the looks' times, as long as they do not
        depend on the values seen (Jennison & Turnbull 2000, section 7.2). A fleet's looks
        analyse every worker's first p runs per arm, p a per-worker share of the planned runs
        (rounded down): fewer runs than planned, so boundaries at the planned fractions would
        assume more correlation between looks than there is, and the error exceed alpha (with
        3 workers of 7 runs and 5 looks, 0.052 at alpha = 0.05: tests/stats/test_sequential.py).
        The same holds when a look goes ahead without the runs of a lost worker or of a failed
        context: what is missing is fixed by events outside the values, and the runs analysed
        at a look include those of every earlier look.
        """
        if isinstance(look, bool) or not isinstance(look, (int, np.integer)) or not 0 <= look < self.looks:
            raise ValueError(f"look must be an integer in 0..{self.looks - 1}, got {look!r}")
        if len(previous) != look:
            raise ValueError(f"look {look} needs the {look} earlier looks' results, got {len(previous)}")
        keys = list(data)
        if not keys:
            raise ValueError("no tests to decide")
        for i, prev in enumerate(previous):
            if prev.index != i:
                raise ValueError(f"previous[{i}] is look {prev.index}, expected look {i}")
            if [t.test for t in prev.tests] != keys:
                raise ValueError(f"the tests at look {look} differ from those at look {i}: the family must stay the same")
        runs = self._points[look] if runs is None else runs
        information = self._taken(look, runs, previous)
        m = len(keys)
        arrays: list[tuple[np.ndarray, np.ndarray]] = []
        for key in keys:
            pair = data[key]
            if len(pair) != 2:
                raise ValueError(f"test {key!r}: expected (fixed values, random values)")
            f, r = (np.asarray(v, dtype=np.float64).ravel() for v in pair)
            if np.isnan(f).any() or np.isnan(r).any() or np.isinf(f).any() or np.isinf(r).any():
                raise ValueError(f"test {key!r}: values must be finite numbers (drop failed trials)")
            if len(f) > runs or len(r) > runs:
                raise ValueError(f"test {key!r}: {len(f)} fixed and {len(r)} random values, more than the {runs} runs per arm of look {look}")
            arrays.append((f, r))
        crit = self.critical(m, information=information)[look]
        z = np.full(m, np.nan)
        shift = np.full(m, np.nan)
        low = np.full(m, np.nan)
        high = np.full(m, np.nan)
        med = np.full(m, np.nan)
        by_size: dict[tuple[int, int], list[int]] = {}
        for i, (f, r) in enumerate(arrays):
            if len(f) >= self.min_values and len(r) >= self.min_values:
                by_size.setdefault((len(f), len(r)), []).append(i)
        for idx in by_size.values():
            fx = np.stack([arrays[i][0] for i in idx])
            rx = np.stack([arrays[i][1] for i in idx])
            z[idx] = mann_whitney_z(fx, rx).z
            ci = shift_ci(fx, rx, crit)
            shift[idx], low[idx], high[idx] = ci.estimate, ci.low, ci.high
            med[idx] = np.median(fx, axis=1)
        lo_pct, hi_pct = relative_interval(low, high, med)
        with np.errstate(invalid="ignore"):
            within = (lo_pct >= -self.min_effect) & (hi_pct <= self.min_effect)
        prior = previous[-1].tests if previous else None
        state = np.array([[_CODES[t.decided] for t in prior]] if prior else [[UNDECIDED] * m])
        abs_z = np.full((1, m, look + 1), np.nan)
        for l, prev in enumerate(previous):
            abs_z[0, :, l] = [abs(t.z) if t.z is not None else np.nan for t in prev.tests]
        abs_z[0, :, look] = np.abs(z)
        new_state, level = decide_step(self, look, abs_z, within[None, :], state, information)
        tests = []
        for i, key in enumerate(keys):
            code = int(new_state[0, i])
            if prior and prior[i].decided is not None:
                at_look, at_runs, lvl = prior[i].decided_at_look, prior[i].decided_at_runs, prior[i].level
            elif code != UNDECIDED:
                at_look, at_runs = look, runs
                lvl = float(level[0, i]) if code == DECIDED_EFFECT else None
            else:
                at_look = at_runs = lvl = None
            defined = not math.isnan(shift[i])
            tests.append(
                TestLook(
                    test=key,
                    n_fixed=len(arrays[i][0]),
                    n_random=len(arrays[i][1]),
                    z=_opt(z[i]),
                    critical=float(crit),
                    shift=_opt(shift[i]),
                    shift_ci=(float(low[i]), float(high[i])) if defined and math.isfinite(low[i]) else None,
                    median_fixed=_opt(med[i]),
                    shift_ci_pct=(float(lo_pct[i]), float(hi_pct[i])) if defined and math.isfinite(lo_pct[i]) and math.isfinite(hi_pct[i]) else None,
                    decided=_NAMES[code],
                    decided_at_look=at_look,
                    decided_at_runs=at_runs,
                    level=lvl,
                )
            )
        decided = int((new_state != UNDECIDED).sum())
        newly = decided - int((state != UNDECIDED).sum())
        return Look(
            index=look,
            runs=runs,
            information=information[look],
            alpha_spent=self.alpha_spent(m, information)[look],
            m=m,
            tests=tuple(tests),
            decided=decided,
            newly_decided=newly,
            stop=decided == m or look == self.looks - 1,
        )

    def _taken(self, look: int, runs: int, previous: Sequence[Look]) -> tuple[float, ...]:
        """The information fractions of the looks up to `look` as taken; the planned ones (all
        of them, so that the boundaries are exactly the planned ones) while every look so far
        analysed its planned runs."""
        if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or not 1 <= runs <= self.max_runs:
            raise ValueError(f"runs must be an integer in 1..{self.max_runs}, got {runs!r}")
        if previous and runs <= previous[-1].runs:
            raise ValueError(f"look {look} at {runs} runs per arm adds nothing to look {look - 1} at {previous[-1].runs}: "
                             "a look needs new runs")
        planned = self.information()
        taken = tuple(p.information for p in previous) + (runs / self.max_runs,)
        return planned if taken == planned[: look + 1] else taken

    def run(self, data_at_looks: Sequence[Mapping[Hashable, tuple[Any, Any]]]) -> tuple[Look, ...]:
        """All looks in turn on the data each look saw, stopping at the first look that stops
        (e.g. to replay an experiment's looks from its journal)."""
        looks: list[Look] = []
        for k, data in enumerate(data_at_looks):
            looks.append(self.decide(k, data, looks))
            if looks[-1].stop:
                break
        return tuple(looks)

    def summary(self, looks: Sequence[Look]) -> dict[str, Any]:
        """CONTRACT.md's `sequential` object for the looks done so far."""
        if not looks:
            raise ValueError("no looks yet")
        return {
            "looks": [lk.to_json() for lk in looks],
            "stopped_at_runs": looks[-1].runs,
            "max_runs": self.max_runs,
            "method": self.method(looks[-1].m),
            "spending": self.spending,
            "correction": self.correction,
            "min_effect": float(self.min_effect),
        }


# --------------------------------------------------------------------------------------------
# Helpers


def _check_alpha(alpha: float) -> None:
    if not isinstance(alpha, (int, float, np.floating)) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")


def _check_spending(spending: str) -> None:
    if spending not in SPENDINGS:
        raise ValueError(f"unknown spending function {spending!r}: expected one of {', '.join(SPENDINGS)}")


def _check_information(information: Sequence[float]) -> tuple[float, ...]:
    t = tuple(float(x) for x in information)
    if not t:
        raise ValueError("need at least one look")
    if any(not 0.0 < x <= 1.0 for x in t) or any(b <= a for a, b in zip(t, t[1:])):
        raise ValueError(f"information fractions must increase strictly within (0, 1], got {list(t)}")
    return t


def _opt(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _key_json(key: Hashable) -> Any:
    return list(key) if isinstance(key, tuple) else key


def _key_from_json(key: Any) -> Hashable:
    return tuple(key) if isinstance(key, list) else key
