"""A vs B: is one test better than another on a metric, by how much, and does it hold everywhere?

The size of the difference is the ratio of medians with a distribution-free interval; the
verdict comes from the Mann-Whitney test (as benchstat) or from Touati et al.'s Speedup-Test
protocol; summaries say whether the winner stays the same in each order arm and each context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
# scipy.special only at import: scipy.stats costs 0.3-0.6 s of import time in every command that
# analyses; the Touati protocol imports it when it is asked for.
from scipy import special

from benchsage.stats._grouped import row_ranks
from benchsage.stats.correction import adjust
from benchsage.stats.permutation import floor_p, log_assignments
from benchsage.stats.ranksum import mann_whitney
from benchsage.stats.shift import ci_rank, pairwise_order_statistics

METHODS: tuple[str, ...] = ("mann-whitney", "touati")
RATIO_CI_METHODS: tuple[str, ...] = ("bauer", "bonett-price")
# Bonett-Price rather than Bauer's interval by default: two tests (o3 and o2, a test with and
# without strace) rarely share a shape, and then Bauer's interval, which assumes one is a scaled
# copy of the other, covered the ratio of medians only 82% of the time at 100 values;
# Bonett-Price covered >= 94.7% in every case measured, shapes alike or not (docs/validation.md,
# "Treatments").
DEFAULT_RATIO_CI = "bonett-price"
MIN_VALUES = 5  # per sample: fewer give no p-value, as for the order analysis
# Touati et al.: from 30 values on, the t-test of the means is valid by the central limit theorem
# without a normality test.
TOUATI_LARGE_N = 30


@dataclass(frozen=True)
class Comparison:
    """The answer to "is a better than b?" for two samples.

    ratio: median(a) / median(b); None when a value is not positive or a sample is empty.
    ci: (low, high), the interval for the ratio at `level` (see ratio_ci); None when a sample
        is too small for the level, or the ratio is undefined.
    p: the two-sided p-value of the test named in `method`; None with fewer than MIN_VALUES
        values in a sample or when every value is equal (`reason` says which).
    better: "a", "b" or None (undecided): the test rejected at alpha and the values of that
        sample are lower (higher when higher_is_better).
    method: the test that gave p: "mann-whitney", or with the Touati protocol
        "touati:student-t", "touati:welch-t" or "touati:mann-whitney".
    ci_method: "bauer-exact" or "bauer-normal" (see ratio_ci), or "bonett-price" (see
        ratio_ci_bonett_price); None without an interval.
    reason: why this test was used (or why there is no p), in words.
    steps: the preliminary tests of the Touati protocol, (name, p) in the order they ran.
    """

    ratio: float | None
    ci: tuple[float, float] | None
    p: float | None
    better: str | None
    method: str
    ci_method: str | None
    n_a: int
    n_b: int
    alpha: float
    level: float
    higher_is_better: bool
    reason: str
    steps: tuple[tuple[str, float], ...] = ()
    # Which way the test's statistic points, -1 (a's values lower), +1 (higher) or 0: lets
    # summaries re-decide `better` at another alpha (a corrected one) without the samples.
    direction: int = field(default=0, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The fields of a comparison in the analysis JSON, plus the interval's
        method, the sample sizes and the reason; numbers are plain floats, missing ones None."""
        return {
            "ratio": _num(self.ratio),
            "ci": None if self.ci is None else [_num(self.ci[0]), _num(self.ci[1])],
            "p": _num(self.p),
            "better": self.better,
            "method": self.method,
            "ci_method": self.ci_method,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "reason": self.reason,
        }


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def ratio_ci(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[tuple[float, float] | None, str | None]:
    """Distribution-free interval for the ratio a / b of two positive samples, and its method.

    The interval of the shift of log(a) against log(b) from the order statistics of the m n
    pairwise differences log(a_i) - log(b_j) (stats/shift.py: the interval that goes with the
    Hodges-Lehmann estimate and the Mann-Whitney test), exponentiated: [exp(D(k)),
    exp(D(mn+1-k))] with k from shift.ci_rank. It covers the ratio theta with at least the
    stated probability when a is distributed as theta times b (a scale change: one system a
    constant factor faster), whatever that distribution; theta
    is then the ratio of the medians, and of every other quantile. Logs make the interval
    invariant under a change of unit and exactly inverted when a and b swap.
    (None, None) when k = 0: too few values for the level.
    """
    la = np.log(np.asarray(a, dtype=np.float64))
    lb = np.log(np.asarray(b, dtype=np.float64))
    m, n = len(la), len(lb)
    if m == 0 or n == 0:
        return None, None
    # Ties are those of the values themselves: log may merge two neighbouring floats, and the
    # choice of method must not change with the unit.
    ties = float(row_ranks(np.concatenate([np.ravel(a), np.ravel(b)]).astype(np.float64)[None, :]).tie_term[0])
    k, method = ci_rank(m, n, level, ties)
    if k < 1:
        return None, None
    low, high = pairwise_order_statistics(la[None, :], lb[None, :], [k, m * n + 1 - k])[0]
    return (math.exp(low), math.exp(high)), method


def median_log_variance(sorted_logs: np.ndarray) -> float:
    """Bonett & Price's estimate of the variance of the sample median of sorted values (here
    logs): [(Y(n-c+1) - Y(c)) / (2 z_c)]^2 with c = (n + 1)/2 - sqrt(n) rounded (at least 1) and
    z_c = Phi^-1(1 - P(B <= c - 1)), B ~ Binomial(n, 1/2): [Y(c), Y(n-c+1)] is the exact
    order-statistic interval of the median with coverage 1 - 2 P(B <= c - 1), read as a
    normal interval to give a standard error. NaN below 3 values."""
    n = len(sorted_logs)
    if n < 3:
        return math.nan
    c = max(1, int(round((n + 1) / 2.0 - math.sqrt(n))))
    tail = float(special.bdtr(c - 1, n, 0.5))
    z = float(special.ndtri(1.0 - tail))
    return ((sorted_logs[n - c] - sorted_logs[c - 1]) / (2.0 * z)) ** 2


def ratio_ci_bonett_price(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[tuple[float, float] | None, str | None]:
    """Interval for the ratio of the medians of a and b, without assuming the samples share a
    shape: exp(ln(med a / med b) -+ z sqrt(v_a + v_b)), z = Phi^-1((1 + level) / 2), v the
    variance of each log median from median_log_variance.

    Price & Bonett (2002), "Distribution-free confidence intervals for difference and ratio of
    medians", J. Statistical Computation and Simulation 72(2); Bonett & Price (2002),
    Psychological Methods 7(3). Asymptotic: valid for any continuous distributions as the
    samples grow, and the right choice when a and b differ in shape (one has a tail the other
    lacks), where ratio_ci's scale model fails (docs/validation.md). (None, None) below
    MIN_VALUES values in a sample or when the estimate is degenerate (the order statistics used
    are equal).
    """
    level = _check_level(level)
    la = np.sort(np.log(np.asarray(a, dtype=np.float64)))
    lb = np.sort(np.log(np.asarray(b, dtype=np.float64)))
    if min(len(la), len(lb)) < MIN_VALUES:  # an asymptotic interval means nothing on fewer
        return None, None
    var = median_log_variance(la) + median_log_variance(lb)
    if not math.isfinite(var) or var <= 0:
        return None, None
    # centred on the log of the reported ratio (for an even n the median of the logs differs)
    centre = math.log(float(np.median(a)) / float(np.median(b)))
    half = float(special.ndtri((1.0 + level) / 2.0)) * math.sqrt(var)
    return (math.exp(centre - half), math.exp(centre + half)), "bonett-price"


# --- the tests --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Test:
    p: float
    direction: int  # -1: a's values lower, +1: higher, 0: no direction
    method: str
    reason: str
    steps: tuple[tuple[str, float], ...] = ()


def _mann_whitney_test(a: np.ndarray, b: np.ndarray, method: str, why: str, steps: tuple[tuple[str, float], ...] = ()) -> _Test:
    m, n = len(a), len(b)
    u_a, p, how = mann_whitney(a, b)
    direction = int(np.sign(u_a - m * n / 2.0))
    null = "exact null distribution of U" if how == "exact" else "normal approximation of U with tie correction"
    return _Test(p=p, direction=direction, method=method, reason=f"{why}; p from the {null}", steps=steps)


def _touati(a: np.ndarray, b: np.ndarray, alpha: float, shapiro_always: bool) -> _Test:
    """Touati, Worms & Briais (2013), "The Speedup-Test: a statistical methodology for program
    speedup analysis and computation", Concurrency and Computation: Practice and Experience
    25(10), as Nogueira, Matias & Vicente (SAC 2014) apply it; every preliminary test at alpha.

    1. Are the means comparable with a t-test? Yes when both samples hold 30 values or more
       (central limit theorem), or when Shapiro-Wilk does not reject normality for either
       sample (checked for small samples only, or always with shapiro_always).
    2. If so, Fisher's F test of equal variances picks Student's t (pooled variance, equal
       variances not rejected) or Welch's t (unequal variances).
    3. If not, the Wilcoxon-Mann-Whitney test, after a two-sample Kolmogorov-Smirnov test of
       the samples centred on their medians: when KS does not reject that both have the same
       shape, the WMW test compares the medians (a location shift); when it rejects, the WMW
       test still answers whether a's values tend to be lower than b's (P(a < b) != 1/2),
       which the reason says.
    """
    from scipy import stats  # noqa: PLC0415 - see the import note at the top

    m, n = len(a), len(b)
    steps: list[tuple[str, float]] = []
    large = m >= TOUATI_LARGE_N and n >= TOUATI_LARGE_N
    normal = True
    if large and not shapiro_always:
        why = f"both samples hold {TOUATI_LARGE_N} values or more: means compared by t-test (central limit theorem)"
    else:
        ps = []
        for name, x in (("a", a), ("b", b)):
            # Shapiro-Wilk of a constant sample is meaningless (scipy warns, p = 1): not normal.
            p_sw = float(stats.shapiro(x).pvalue) if np.ptp(x) > 0 else 0.0
            steps.append((f"shapiro-wilk {name}", p_sw))
            ps.append(p_sw)
        normal = min(ps) > alpha
        verdict = "not rejected" if normal else "rejected"
        why = f"Shapiro-Wilk normality {verdict} at alpha={alpha:g} (p_a={ps[0]:.3g}, p_b={ps[1]:.3g})"
    if normal:
        var_a, var_b = float(np.var(a, ddof=1)), float(np.var(b, ddof=1))
        if var_a > 0 and var_b > 0:
            f = var_a / var_b
            p_f = min(1.0, 2.0 * min(float(special.fdtr(m - 1, n - 1, f)), float(special.fdtrc(m - 1, n - 1, f))))
        else:
            p_f = 0.0 if var_a != var_b else 1.0
        steps.append(("fisher-f", p_f))
        equal = p_f > alpha
        res = stats.ttest_ind(a, b, equal_var=equal)
        name = "touati:student-t" if equal else "touati:welch-t"
        var_why = f"F test of equal variances {'not rejected' if equal else 'rejected'} (p={p_f:.3g})"
        diff = float(np.mean(a) - np.mean(b))
        p = float(res.pvalue)
        return _Test(
            p=p if math.isfinite(p) else 1.0,
            direction=int(np.sign(diff)),
            method=name,
            reason=f"{why}; {var_why}; {'Student' if equal else 'Welch'} t-test of the means",
            steps=tuple(steps),
        )
    p_ks = float(stats.ks_2samp(a - np.median(a), b - np.median(b)).pvalue)
    steps.append(("kolmogorov-smirnov (median-centred)", p_ks))
    if p_ks > alpha:
        ks_why = f"Kolmogorov-Smirnov does not reject equal shapes (p={p_ks:.3g}): Wilcoxon-Mann-Whitney compares the medians"
    else:
        ks_why = (
            f"Kolmogorov-Smirnov rejects equal shapes (p={p_ks:.3g}): Wilcoxon-Mann-Whitney tests whether "
            "one sample's values tend to be lower, not the medians as such"
        )
    return _mann_whitney_test(a, b, "touati:mann-whitney", f"{why}; {ks_why}", tuple(steps))


def _check_level(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must lie strictly between 0 and 1, got {level}")
    return level


def _sample(x: Any, name: str) -> np.ndarray:
    v = np.asarray(x, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"sample {name} must be a 1-d array of values, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"sample {name} holds NaN or infinite values; drop them before comparing")
    return v


def _decide(p: float | None, direction: int, alpha: float, higher_is_better: bool) -> str | None:
    if p is None or p > alpha or direction == 0:
        return None
    a_lower = direction < 0
    return "a" if a_lower != higher_is_better else "b"


def compare(
    a: Any,
    b: Any,
    *,
    alpha: float = 0.05,
    level: float = 0.95,
    higher_is_better: bool = False,
    method: str = "mann-whitney",
    shapiro_always: bool = False,
    ci_method: str = DEFAULT_RATIO_CI,
) -> Comparison:
    """Compare sample a with sample b (e.g. wall times of tests "o3" and "o2").

    ratio = median(a) / median(b) with its interval at `level`: ci_method "bonett-price" (the
    default, DEFAULT_RATIO_CI) is ratio_ci_bonett_price, which targets the ratio of medians
    whatever the two shapes, asymptotically; "bauer" is ratio_ci, exact when a is a constant
    factor times b in distribution and the interval that goes with the Mann-Whitney test.
    method "mann-whitney" (the default, as benchstat): the two-sided Mann-Whitney U test
    (see mann_whitney). method "touati": Touati et al.'s Speedup-Test protocol (see _touati);
    `method` in the result then names the test it chose and `reason` why.
    better: "a" when p <= alpha and a's values are the lower ones (the higher ones with
    higher_is_better), "b" the other way round, None otherwise. The direction is the test's:
    U_a below m n / 2 for Mann-Whitney, mean(a) < mean(b) for the t-tests.
    With fewer than MIN_VALUES values in a sample, or every value equal, p and better are None
    and `reason` says why; the ratio is still given when it is defined (positive values).
    """
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    level = _check_level(level)
    if method not in METHODS:
        raise ValueError(f"unknown comparison method {method!r}: expected one of {', '.join(METHODS)}")
    if ci_method not in RATIO_CI_METHODS:
        raise ValueError(f"unknown ratio interval {ci_method!r}: expected one of {', '.join(RATIO_CI_METHODS)}")
    interval = ratio_ci if ci_method == "bauer" else ratio_ci_bonett_price
    x, y = _sample(a, "a"), _sample(b, "b")
    m, n = len(x), len(y)

    ratio: float | None = None
    ci: tuple[float, float] | None = None
    named: str | None = None
    notes: list[str] = []
    if m and n:
        if np.all(x > 0) and np.all(y > 0):
            ratio = float(np.median(x) / np.median(y))
            ci, named = interval(x, y, level)
            if ci is None:
                spread = "" if ci_method == "bauer" else " or no spread"
                notes.append(f"too few values for a {level:.0%} interval of the ratio ({m} and {n}){spread}")
        else:
            notes.append("a value is zero or negative: no ratio")

    default_method = "touati" if method == "touati" else "mann-whitney"
    if m < MIN_VALUES or n < MIN_VALUES:
        reason = f"fewer than {MIN_VALUES} values in a sample ({m} and {n}): no test"
        return Comparison(ratio, ci, None, None, default_method, named, m, n, alpha, level, higher_is_better, "; ".join([reason, *notes]))
    if np.ptp(np.concatenate([x, y])) == 0:
        reason = "every value is equal: no test"
        return Comparison(ratio, ci, None, None, default_method, named, m, n, alpha, level, higher_is_better, "; ".join([reason, *notes]))

    if method == "touati":
        test = _touati(x, y, alpha, shapiro_always)
    else:
        test = _mann_whitney_test(x, y, "mann-whitney", "two-sided Mann-Whitney U test")
    # A t-test's far tail underflows to 0; no test of m + n values can give less than one over
    # their C(m + n, m) splits.
    p = float(floor_p(np.array(test.p), log_assignments(m + n, math.lgamma(m + 1) + math.lgamma(n + 1))))
    return Comparison(
        ratio=ratio,
        ci=ci,
        p=p,
        better=_decide(p, test.direction, alpha, higher_is_better),
        method=test.method,
        ci_method=named,
        n_a=m,
        n_b=n,
        alpha=alpha,
        level=level,
        higher_is_better=higher_is_better,
        reason="; ".join([test.reason, *notes]),
        steps=test.steps,
        direction=test.direction,
    )


# --- across arms and contexts -----------------------------------------------------------------


def compare_strata(samples: Mapping[str, tuple[Any, Any]], **options: Any) -> dict[str, Comparison]:
    """compare(a, b, **options) in each stratum (an order arm, a context), keyed as given."""
    return {name: compare(a, b, **options) for name, (a, b) in samples.items()}


def holds_in(winner: str | None, per_arm: Mapping[str, Comparison]) -> dict[str, bool | None]:
    """Per arm: does "winner is better" hold there, i.e. is the arm's comparison significant at
    its own alpha with the same winner? winner: the overall verdict's `better` ("a" or "b").

    No correction across arms: "holds in every arm" is an intersection of claims, each tested
    at alpha, so its error stays at most alpha (an intersection-union test; Berger 1982,
    Technometrics 24(4)). With no overall winner there is no claim: every value is None.
    """
    if winner not in ("a", "b", None):
        raise ValueError(f"winner must be 'a', 'b' or None, got {winner!r}")
    return {arm: None if winner is None else c.better == winner for arm, c in per_arm.items()}


@dataclass(frozen=True)
class LevelComparison:
    """a vs b over every value at one level of a dimension (env_bytes 0-2800, cpus "1"):
    better is decided on p_adjusted, corrected over every level of every dimension."""

    level: str
    comparison: Comparison
    better: str | None
    p_adjusted: float | None

    def to_json(self) -> dict[str, Any]:
        c = self.comparison
        return {"level": self.level, "better": self.better, "ratio": _num(c.ratio), "p": _num(c.p),
                "p_adjusted": _num(self.p_adjusted), "n_a": c.n_a, "n_b": c.n_b}


@dataclass(frozen=True)
class DimensionVerdicts:
    """A comparison answered at each level of one dimension of the contexts (or one factor);
    flips: some level favours a and another b, each significant after the correction."""

    dimension: str
    levels: tuple[LevelComparison, ...]

    @property
    def flips(self) -> bool:
        won = {lv.better for lv in self.levels}
        return "a" in won and "b" in won

    def strength(self) -> float:
        """The weaker side of a flip: the larger of the smallest p_adjusted favouring a and the
        smallest favouring b (inf without a flip); the flip_dimension is the strongest."""
        if not self.flips:
            return math.inf
        return max(min(lv.p_adjusted for lv in self.levels if lv.better == side and lv.p_adjusted is not None)
                   for side in ("a", "b"))

    def to_json(self) -> dict[str, Any]:
        return {"flips": self.flips, "levels": [lv.to_json() for lv in self.levels]}


@dataclass(frozen=True)
class ContextSummary:
    """How a comparison fares across measurement contexts.

    n: contexts; a_better, b_better: contexts where that test is better, significant after the
    family-wise correction over the contexts; undecided: the others (including contexts with
    too few values for a test); flips: the winner changes with the context, each way
    significant (Mytkowicz et al.'s sign flip of a speedup): a_better >= 1 and b_better >= 1, or
    a flip between the levels of one of the dimensions in `by` (see decide_levels), which pool
    the contexts that share a level and so find a flip with far fewer values per context.
    """

    n: int
    a_better: int
    b_better: int
    undecided: int
    flips: bool
    correction: str
    alpha: float
    by: tuple[DimensionVerdicts, ...] = ()

    @property
    def flip_dimension(self) -> str | None:
        """The dimension along which the winner flips most clearly (None: no dimension flips)."""
        flipping = [d for d in self.by if d.flips]
        return min(flipping, key=DimensionVerdicts.strength).dimension if flipping else None

    def with_dimensions(self, by: Sequence[DimensionVerdicts]) -> "ContextSummary":
        """This summary with the comparison answered per level of each dimension too."""
        by = tuple(by)
        return replace(self, by=by, flips=self.flips or any(d.flips for d in by))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "a_better": self.a_better, "b_better": self.b_better, "undecided": self.undecided,
                               "flips": self.flips}
        if self.by:
            out["by"] = {d.dimension: d.to_json() for d in self.by}
            out["flip_dimension"] = self.flip_dimension
        return out


def summarize_contexts(per_context: Sequence[Comparison] | Mapping[str, Comparison], alpha: float = 0.05, correction: str = "bonferroni") -> ContextSummary:
    """Count the contexts won by a, by b, and undecided, with the p-values corrected over the
    contexts (bonferroni or holm, see correction.adjust) before each is decided.

    Why the correction: "flips" claims that some context favours a and another favours b. With
    each context at alpha, two systems that do not differ would show a flip in roughly
    (1 - (1 - alpha/2)^n)^2 of experiments (7% at 12 contexts); with the family-wise correction a
    false flip needs at least one false rejection, which happens with probability at most alpha.
    """
    items = list(per_context.values()) if isinstance(per_context, Mapping) else list(per_context)
    p = np.array([np.nan if c.p is None else c.p for c in items], dtype=np.float64)
    decided = adjust(p, correction, alpha).reject if len(items) else np.zeros(0, bool)
    a_better = b_better = 0
    for c, reject in zip(items, decided):
        winner = _decide(0.0 if reject else None, c.direction, alpha, c.higher_is_better)
        a_better += winner == "a"
        b_better += winner == "b"
    n = len(items)
    return ContextSummary(
        n=n,
        a_better=a_better,
        b_better=b_better,
        undecided=n - a_better - b_better,
        flips=a_better > 0 and b_better > 0,
        correction=correction,
        alpha=float(alpha),
    )


def decide_levels(per_level: Mapping[str, Mapping[str, Comparison]], alpha: float = 0.05,
                  correction: str = "bonferroni") -> tuple[DimensionVerdicts, ...]:
    """Decide a comparison at each level of each dimension: per_level[dimension][level] is
    compare() over all values at that level (every context sharing it), and the p-values of
    every (dimension, level) are corrected together (bonferroni or holm) before each is decided.

    Why per level: contexts that share a level of a dimension (the small environments) pool
    their values, so a winner that flips with that dimension is found with the values users
    have (16 a side at 16 runs per arm over 8 contexts, where each context alone holds 4, too
    few for a corrected test). Why one family: a false flip needs a rejection in the wrong
    direction at some level; with the Bonferroni share each such error has probability at most
    alpha / (2 m), so together at most alpha / 2, as summarize_contexts's own false flips.
    Dimensions are kept in the order given, levels too.
    """
    keys = [(d, lv) for d, levels in per_level.items() for lv in levels]
    cs = [per_level[d][lv] for d, lv in keys]
    decided = adjust(np.array([np.nan if c.p is None else c.p for c in cs], dtype=np.float64), correction, alpha)
    out: dict[str, list[LevelComparison]] = {d: [] for d in per_level}
    for i, ((d, lv), c) in enumerate(zip(keys, cs)):
        better = _decide(0.0 if decided.reject[i] else None, c.direction, alpha, c.higher_is_better)
        out[d].append(LevelComparison(lv, c, better, _num(decided.p_adjusted[i])))
    return tuple(DimensionVerdicts(d, tuple(levels)) for d, levels in out.items())
