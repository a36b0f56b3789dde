"""The treatment analyses: declared A vs B comparisons, the measurement context (Mytkowicz et
al.), the observer effect of instrumentation, and 2^k factorial designs (Jain; Nogueira et al.).

Each reads the treatment dimensions of a TrialTable ("context", "context:env_bytes", ...,
"observer", "factor:NAME") and gives frozen rows whose to_json() is the CONTRACT.md shape of
"comparisons", "context_effects", "observer" and "factorial" (plus named extras). Every family
of p-values is corrected with the analysis's correction at its alpha.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from benchsage.errors import UsageError
from benchsage.stats.compare import METHODS as COMPARE_METHODS
from benchsage.stats.compare import DEFAULT_RATIO_CI, MIN_VALUES, RATIO_CI_METHODS, Comparison, ContextSummary, compare, summarize_contexts
from benchsage.stats.correction import adjust
from benchsage.stats.factorial import FactorialResult, factorial_2k
from benchsage.stats.permutation import MAX_EXACT, exact_rank_p
from benchsage.stats.spearman import spearman_grouped
from benchsage.stats.stratified import kruskal_k
from benchsage.store.table import ARMS, TrialTable

CONTEXT = "context"
CONTEXT_PREFIX = "context:"
OBSERVER = "observer"
FACTOR_PREFIX = "factor:"
# Context dimensions whose levels are magnitudes (bytes): tested for a monotone trend. The others
# (a CPU list, ASLR on/off, a link order) are categories.
NUMERIC_DIMENSIONS = ("env_bytes", "cwd_bytes")


SPEC_CLAIM = "[[compare]]"


@dataclass(frozen=True)
class CompareRequest:
    """A claim to check: "a is better than b" on `metric` (None: the tests' primary metric).

    where: where the claim came from, named in error messages ("--compare", "compare="). A
    user's claim that names a test or metric the data lacks is an error; a claim of the
    experiment's spec (where = SPEC_CLAIM) was checked against the spec, so its row says why
    there is nothing to compare instead (every trial of a test may have failed).
    """

    a: str
    b: str
    metric: str | None = None
    where: str = "--compare"


@dataclass(frozen=True)
class TreatmentOptions:
    """How to answer the treatment questions.

    compare: claims to check besides those of the experiment's spec; compare_method: the test of
    a comparison ("mann-whitney", or "touati" for Touati et al.'s Speedup-Test protocol);
    ratio_ci: the interval of a ratio of medians ("bonett-price" or "bauer", stats.compare).
    """

    compare: tuple[CompareRequest, ...] = ()
    compare_method: str = "mann-whitney"
    ratio_ci: str = DEFAULT_RATIO_CI

    def __post_init__(self) -> None:
        if self.compare_method not in COMPARE_METHODS:
            raise UsageError(f"unknown comparison method {self.compare_method!r}: expected one of {', '.join(COMPARE_METHODS)}")
        if self.ratio_ci not in RATIO_CI_METHODS:
            raise UsageError(f"unknown ratio interval {self.ratio_ci!r}: expected one of {', '.join(RATIO_CI_METHODS)}")


def _num(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _interval(ci: tuple[float, float] | None) -> list[float | None] | None:
    return None if ci is None else [_num(ci[0]), _num(ci[1])]


# --- comparisons ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StratumComparison:
    """a vs b within one order arm or one context: the comparison, and whether its winner
    (after the correction over the strata, for contexts) is a, b or undecided."""

    name: str
    comparison: Comparison
    better: str | None
    p_adjusted: float | None = None
    values: Mapping[str, str] = field(default_factory=dict)  # a context's own settings

    def to_json(self) -> dict[str, Any]:
        c = self.comparison
        out: dict[str, Any] = {"ratio": _num(c.ratio), "ci": _interval(c.ci), "p": _num(c.p)}
        if self.p_adjusted is not None:
            out["p_adjusted"] = self.p_adjusted
        out.update({"better": self.better, "n_a": c.n_a, "n_b": c.n_b})
        if self.values:
            out["values"] = dict(self.values)
        return out


@dataclass(frozen=True)
class ComparisonRow:
    """The answer to a declared claim "a is better than b on metric".

    overall: all values of a and b (every arm and context; the lightest observer level only);
    p_adjusted: p corrected over the comparisons of the analysis; better: "a", "b" or None,
    decided on p_adjusted; holds_in: per order arm, whether the same winner is significant in
    that arm on its own (at the comparison's share of alpha); contexts: the count of contexts
    won by each, corrected over the contexts, and whether the winner flips (None without
    contexts); workers: the same over the workers of a fleet that measured both tests (None
    with one worker): a claim that flips on one machine of a fleet (a different binary, a
    different BIOS setting) is what a fleet's per-worker answer is for; factor_cells: the same
    over the combinations of factor levels (None without factors): does o3 beat o2 with SMT on
    and with it off?
    """

    a: str
    b: str
    metric: str
    unit: str
    higher_is_better: bool
    overall: Comparison
    p_adjusted: float | None
    better: str | None
    holds_in: Mapping[str, bool | None]
    arms: tuple[StratumComparison, ...]
    contexts: ContextSummary | None
    per_context: tuple[StratumComparison, ...]
    alpha_each: float
    workers: ContextSummary | None = None
    per_worker: tuple[StratumComparison, ...] = ()
    factor_cells: ContextSummary | None = None
    per_factor_cell: tuple[StratumComparison, ...] = ()

    @property
    def ratio(self) -> float | None:
        return self.overall.ratio

    @property
    def ci(self) -> tuple[float, float] | None:
        return self.overall.ci

    @property
    def p(self) -> float | None:
        return self.overall.p

    def to_json(self) -> dict[str, Any]:
        c = self.overall
        return {
            "a": self.a,
            "b": self.b,
            "metric": self.metric,
            "ratio": _num(c.ratio),
            "ci": _interval(c.ci),
            "p": _num(c.p),
            "p_adjusted": self.p_adjusted,
            "better": self.better,
            "method": c.method,
            "ci_method": c.ci_method,
            "n_a": c.n_a,
            "n_b": c.n_b,
            "holds_in": dict(self.holds_in),
            "contexts": None if self.contexts is None else self.contexts.to_json(),
            "reason": c.reason,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "alpha_each": self.alpha_each,
            "arms": {s.name: s.to_json() for s in self.arms},
            "per_context": [{"context": s.name, **s.to_json()} for s in self.per_context],
            # a fleet's keys only: the JSON of one worker's data is as before
            **({} if self.workers is None else {"workers": self.workers.to_json(),
                                                "per_worker": [{"worker": s.name, **s.to_json()} for s in self.per_worker]}),
            # with factors only
            **({} if self.factor_cells is None else {
                "factor_cells": self.factor_cells.to_json(),
                "per_factor_cell": [{"cell": s.name, **s.to_json()} for s in self.per_factor_cell]}),
        }

    def sentence(self) -> str:
        """The headline, e.g. "o3 is 6.9% faster than o2 (ratio 0.931, 95% CI 0.912-0.950,
        Mann-Whitney p=1.2e-05); holds in both arms; flips in 3 of 12 contexts"."""
        c = self.overall
        test = _method_name(c.method)
        stats = []
        if c.ratio is not None:
            stats.append(f"ratio {self.a}/{self.b} {c.ratio:.3f}")
        if c.ci is not None:
            stats.append(f"{c.level:.0%} CI {c.ci[0]:.3f}-{c.ci[1]:.3f}")
        if c.p is not None:
            adjusted = f", adjusted {_p(self.p_adjusted)}" if self.p_adjusted is not None and self.p_adjusted != c.p else ""
            stats.append(f"{test} p={_p(c.p)}{adjusted}")
        head = self._claim() + (f" ({', '.join(stats)})" if stats else "")
        if c.p is None:
            return f"{head}: {c.reason}"
        return "; ".join([head, *self._where()])

    def _claim(self) -> str:
        c = self.overall
        if self.better is None or c.ratio is None:
            what = "no significant difference" if c.p is not None else "no test"
            return f"{what} between {self.a} and {self.b} on {self.metric}"
        winner, loser = (self.a, self.b) if self.better == "a" else (self.b, self.a)
        ratio = c.ratio if self.better == "a" else 1.0 / c.ratio
        if self.unit == "s" and not self.higher_is_better:
            return f"{winner} is {abs(1.0 - ratio) * 100:.1f}% faster than {loser} on {self.metric}"
        direction = "higher" if ratio > 1 else "lower"
        return f"{winner}'s {self.metric} is {abs(ratio - 1.0) * 100:.1f}% {direction} than {loser}'s"

    def _where(self) -> list[str]:
        out = []
        if self.better is not None and self.holds_in:
            held = [arm for arm, ok in self.holds_in.items() if ok]
            if len(held) == len(self.holds_in):
                out.append("holds in both arms" if len(held) == 2 else f"holds in the {held[0]} arm")
            elif held:
                missing = [arm for arm in self.holds_in if arm not in held]
                out.append(f"holds in the {held[0]} arm only, not significant in the {missing[0]} arm")
            else:
                out.append("not significant in either arm on its own")
        out.extend(self._across(self.contexts, self.per_context, "contexts", "in"))
        out.extend(self._across(self.workers, self.per_worker, "workers", "on"))
        out.extend(self._across(self.factor_cells, self.per_factor_cell, "factor cells", "in"))
        return out

    def _across(self, s: ContextSummary | None, per: Sequence[StratumComparison], noun: str, prep: str) -> list[str]:
        """How the claim fares across the contexts, or across a fleet's workers."""
        if s is None or not s.n:
            return []
        if all(c.comparison.p is None for c in per):
            return [f"not testable within the {s.n} {noun} (fewer than {MIN_VALUES} values of a test in each)"]
        if self.better is not None:
            won = s.a_better if self.better == "a" else s.b_better
            lost = s.b_better if self.better == "a" else s.a_better
            if lost:
                return [f"flips {prep} {lost} of {s.n} {noun}"]
            if won == s.n:
                return [f"holds {prep} all {s.n} {noun}"]
            if won == 0:
                return [f"undecided {prep} each of the {s.n} {noun}"]
            return [f"holds {prep} {won} of {s.n} {noun}, undecided {prep} {s.undecided}"]
        if s.flips:
            return [f"flips: {self.a} better {prep} {s.a_better} and {self.b} {prep} {s.b_better} of {s.n} {noun}"]
        return [f"{self.a} better {prep} {s.a_better}, {self.b} {prep} {s.b_better}, undecided {prep} {s.undecided} of {s.n} {noun}"]


def _method_name(method: str) -> str:
    names = {"mann-whitney": "Mann-Whitney", "touati:student-t": "Touati: Student t", "touati:welch-t": "Touati: Welch t",
             "touati:mann-whitney": "Touati: Mann-Whitney", "touati": "Touati"}
    return names.get(method, method)


def _p(x: float | None) -> str:
    if x is None:
        return "–"
    if x >= 1e-3 or x == 0:
        return f"{x:.3g}"
    mantissa, exponent = f"{x:.2e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _winner(direction: int, higher_is_better: bool) -> str | None:
    if direction == 0:
        return None
    return "a" if (direction < 0) != higher_is_better else "b"


# --- context effects, observer effects, factorial rows ----------------------------------------


@dataclass(frozen=True)
class ContextEffect:
    """Does a test's result depend on the measurement context, and on which dimension?

    kw_h, df, kw_p: Kruskal-Wallis across the contexts (all values of each context), corrected
    over the tests' primary metrics; spread_pct: (largest - smallest context median) / smallest
    x 100; by: per context dimension, the p-value of the dimension's test on the context medians
    (by_detail names it: Spearman for a numeric dimension, Kruskal-Wallis across the levels of a
    categorical one; exact up to EXACT_CONTEXTS contexts), corrected over every (test,
    dimension) in by_detail's p_adjusted. method: how the values were compared (aligned on the
    factor levels when the design has factors).
    """

    test: str
    metric: str
    kw_h: float | None
    df: int
    kw_p: float | None
    p_adjusted: float | None
    significant: bool | None
    spread_pct: float | None
    medians: Mapping[str, float | None]
    n: Mapping[str, int]
    by: Mapping[str, float | None]
    by_detail: Mapping[str, Mapping[str, Any]]
    method: str = "kruskal-wallis across contexts"
    # Per context: the median of the test's values, not aligned, and its interval at the
    # analysis's confidence level (None: too few values): (median, low, high). Filled in by
    # analyze/context_medians.py for the report's figure; not in the JSON.
    median_ci: Mapping[str, tuple[float, float | None, float | None]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "metric": self.metric,
            "kw_h": self.kw_h,
            "df": self.df,
            "kw_p": self.kw_p,
            "p_adjusted": self.p_adjusted,
            "significant": self.significant,
            "spread_pct": self.spread_pct,
            "by": dict(self.by),
            "by_detail": {k: dict(v) for k, v in self.by_detail.items()},
            "method": self.method,
            "medians": dict(self.medians),
            "n": dict(self.n),
        }


@dataclass(frozen=True)
class ObserverEffect:
    """One instrumentation level against the lightest (the baseline) for one test and metric.

    effect_pct: (median at level - median at baseline) / median at baseline x 100; ratio and ci:
    median(level) / median(baseline) with its interval; p: the comparison's test (method),
    corrected over the primary metrics' rows, or over the others' (primary says which family).
    """

    test: str
    metric: str
    primary: bool
    level: str
    baseline: str
    n_level: int
    n_baseline: int
    median_level: float | None
    median_baseline: float | None
    effect_pct: float | None
    ratio: float | None
    ci: tuple[float, float] | None
    ci_method: str | None
    p: float | None
    p_adjusted: float | None
    significant: bool | None
    method: str

    def to_json(self) -> dict[str, Any]:
        out = dict(vars(self))
        out["ci"] = _interval(self.ci)
        return out


@dataclass(frozen=True)
class FactorialRow:
    """A 2^k r design's analysis for one test and metric: Jain's q's with intervals, the
    allocation of variation (error included), and the levels (low first) that give q its sign.
    result is None, with `reason`, when the design cannot be analysed."""

    test: str
    metric: str
    factors: tuple[str, ...]
    levels: Mapping[str, tuple[str, str]]
    result: FactorialResult | None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"test": self.test, "metric": self.metric}
        out["terms"] = self.result.to_json()["terms"] if self.result is not None else []
        out["levels"] = {name: list(lv) for name, lv in self.levels.items()}
        if self.result is not None:
            out.update({"mean": self.result.q0, "r": self.result.r, "df": self.result.df, "ci_level": self.result.level})
        out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class TreatmentAnalysis:
    """Everything the treatments of a table say; None for an analysis the table has no data for.

    order_table: the rows the order analysis (fixed vs random) examines: the lightest observer
    level only (see order_rows); the whole table without observer levels.
    """

    order_table: TrialTable
    comparisons: tuple[ComparisonRow, ...] | None = None
    context_effects: tuple[ContextEffect, ...] | None = None
    observer: tuple[ObserverEffect, ...] | None = None
    factorial: tuple[FactorialRow, ...] | None = None
    warnings: tuple[str, ...] = ()


# --- reading the table ------------------------------------------------------------------------


def _provenance(table: TrialTable, key: str) -> Any:
    """A provenance entry of the table, or of the first of its combined parts that has it."""
    if key in table.provenance:
        return table.provenance[key]
    for part in table.provenance.get("parts") or ():
        if isinstance(part, Mapping) and key in part:
            return part[key]
    return None


def observer_baseline(table: TrialTable) -> str | None:
    """The lightest observer level: the one the experiment names (its level without a wrapper,
    else its first), else a level called "none", else the first in the data; None without
    observer levels."""
    found = table.levels(OBSERVER)
    if found is None or not found[0]:
        return None
    names = found[0]
    named = _provenance(table, "observer_baseline")
    if named in names:
        return str(named)
    return "none" if "none" in names else names[0]


def order_rows(table: TrialTable) -> TrialTable:
    """The rows the order analysis examines.

    Values measured under an instrumentation wrapper (strace, perf) are not the test's own: a
    user who asks whether the order of tests matters asks it of the measurement as it is normally
    taken. Pooling the levels would also blur one distribution into another and could turn the
    wrapper's own after-effects into an "order effect". So with observer levels the order
    analysis keeps the baseline level (and rows whose level is not known); the other levels are
    answered by the observer analysis. Contexts and factor levels stay pooled: the design
    balances them over the arms, and conclusions that hold over contexts are the point of
    variant generation.
    """
    baseline = observer_baseline(table)
    if baseline is None:
        return table
    names, codes = table.levels(OBSERVER)  # type: ignore[misc]
    return table.select((codes == names.index(baseline)) | (codes < 0))


def _groups(table: TrialTable, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of the (test, metric) comparisons among the masked rows: (row indices, each row's
    group, the group's test * n_metrics + metric key); groups in test-major order."""
    rows = np.flatnonzero(mask)
    n_metrics = max(len(table.metric_names), 1)
    key = table.test[rows].astype(np.int64) * n_metrics + table.metric[rows]
    keys, group = np.unique(key, return_inverse=True)
    return rows, group.ravel(), keys


def _names(table: TrialTable, key: int) -> tuple[str, str]:
    n_metrics = max(len(table.metric_names), 1)
    return table.test_names[key // n_metrics], table.metric_names[key % n_metrics]


def _split(group: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """The row positions of each group, in row order."""
    order = np.argsort(group, kind="stable")
    bounds = np.cumsum(np.bincount(group, minlength=n_groups))[:-1]
    return np.split(order, bounds)


# --- the analyses -----------------------------------------------------------------------------


def analyze_treatments(table: TrialTable, *, alpha: float = 0.05, correction: str = "bonferroni",
                       options: TreatmentOptions = TreatmentOptions()) -> TreatmentAnalysis:
    """All treatment analyses of a table (each None when the table has nothing for it).

    Raises UsageError naming the claim when a comparison requested in `options` names a test or
    metric the data does not hold.
    """
    requests = _requests(table, options)
    if not table.dims and not requests:
        return TreatmentAnalysis(table)
    finite = np.isfinite(table.value)
    clean = table if finite.all() else table.select(finite)
    order_table = order_rows(table)
    examined = order_rows(clean)
    warnings: list[str] = []
    baseline = observer_baseline(clean)
    if baseline is not None and len(examined) < len(clean):
        warnings.append(
            f"the order analysis and the comparisons use the values measured at observer level '{baseline}' only "
            f"({len(examined)} of {len(clean)}): the other levels are compared with it under 'observer'"
        )
    comparisons = _comparisons(examined, requests, alpha, correction, options) if requests else None
    contexts = _context_effects(examined, alpha, correction) if examined.levels(CONTEXT) is not None else None
    observer = None
    if baseline is not None:
        observer = _observer_effects(clean, baseline, alpha, correction, options)
        warnings.extend(_observer_warnings(observer))
    factorial = None
    if any(d.startswith(FACTOR_PREFIX) for d in examined.dims):
        factorial, notes = _factorial(examined)
        warnings.extend(notes)
    return TreatmentAnalysis(order_table, comparisons, contexts, observer, factorial, tuple(warnings))


def _requests(table: TrialTable, options: TreatmentOptions) -> list[CompareRequest]:
    """The spec's claims (as the journal records them) and the requested ones, without repeats."""
    out = [CompareRequest(str(c["a"]), str(c["b"]), c.get("metric"), SPEC_CLAIM)
           for c in _provenance(table, "compare") or () if isinstance(c, Mapping)]
    out.extend(options.compare)
    seen: set[tuple[str, str, str | None]] = set()
    unique = []
    for r in out:
        if (r.a, r.b, r.metric) not in seen:
            seen.add((r.a, r.b, r.metric))
            unique.append(r)
    return unique


def _listing(names: Sequence[str], limit: int = 8) -> str:
    return ", ".join(repr(n) for n in names[:limit]) + (", ..." if len(names) > limit else "")


def _primary_metrics(table: TrialTable, test: int) -> list[str]:
    rows = table.test == test
    codes = np.unique(table.metric[rows & table.primary])
    return [table.metric_names[c] for c in codes]


def _resolve(table: TrialTable, r: CompareRequest) -> tuple[int, int, int] | str:
    """(test a, test b, metric) codes of a claim, or why it cannot be answered from this data.

    A claim given by the user that names a test or metric the data does not hold is an error
    (UsageError); one from the spec becomes a row saying why (its tests may have failed)."""
    label = f"{r.where} {r.a},{r.b}" + (f",{r.metric}" if r.metric else "")
    problem = None
    present = set(np.unique(table.test).tolist())
    for name in (r.a, r.b):
        if name not in table.test_names or table.test_names.index(name) not in present:
            problem = f"{label}: no test {name!r} in the data (tests: {_listing([table.test_names[t] for t in sorted(present)])})"
            break
    if problem is None and r.a == r.b:
        problem = f"{label}: a and b name the same test {r.a!r}"
    if problem is None:
        a, b = table.test_names.index(r.a), table.test_names.index(r.b)
        if r.metric is not None:
            for name, code in ((r.a, a), (r.b, b)):
                own = [table.metric_names[m] for m in np.unique(table.metric[table.test == code])]
                if r.metric not in own:
                    problem = f"{label}: test {name!r} has no values of metric {r.metric!r} (it has: {', '.join(own)})"
                    break
            else:
                return a, b, table.metric_names.index(r.metric)
        else:
            pa, pb = _primary_metrics(table, a), _primary_metrics(table, b)
            common = [m for m in pa if m in pb]
            if len(common) == 1 or (common and r.where == SPEC_CLAIM):
                return a, b, table.metric_names.index(common[0])
            if not common:
                problem = f"{label}: tests {r.a!r} and {r.b!r} share no primary metric ({', '.join(pa)} / {', '.join(pb)}): name one"
            else:
                problem = f"{label}: the tests have several metrics ({', '.join(common)}): name the one to compare, as {r.a},{r.b},METRIC"
    if r.where != SPEC_CLAIM:
        raise UsageError(problem)
    return problem


def _values(table: TrialTable, test: int, metric: int, mask: np.ndarray | None = None) -> np.ndarray:
    rows = (table.test == test) & (table.metric == metric)
    if mask is not None:
        rows &= mask
    return table.value[rows]


def _comparisons(table: TrialTable, requests: list[CompareRequest], alpha: float, correction: str,
                 options: TreatmentOptions) -> tuple[ComparisonRow, ...]:
    resolved = [_resolve(table, r) for r in requests]
    kw = {"method": options.compare_method, "ci_method": options.ratio_ci}

    def samples(a: int, b: int, m: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        return _values(table, a, m, mask), _values(table, b, m, mask)

    def higher(m: int) -> bool:
        return table.metric_info(table.metric_names[m]).better == "higher"

    overall = [None if isinstance(res, str) else compare(*samples(*res), alpha=alpha, higher_is_better=higher(res[2]), **kw)
               for res in resolved]
    family = adjust(np.array([np.nan if c is None or c.p is None else c.p for c in overall]), correction, alpha)
    # Each claim's strata (arms, contexts) are tested at its share of alpha, so that the claims
    # together keep the family-wise error of the overall verdicts.
    alpha_each = alpha / max(family.m, 1)
    context = table.levels(CONTEXT)
    rows = []
    for i, (r, res, c) in enumerate(zip(requests, resolved, overall)):
        if isinstance(res, str) or c is None:
            nothing = Comparison(None, None, None, None, options.compare_method, None, 0, 0, alpha, 0.95, False, str(res))
            rows.append(ComparisonRow(r.a, r.b, r.metric or "", "", False, nothing, None, None, {}, (), None, (), alpha_each))
            continue
        a, b, m = res
        better = _winner(c.direction, c.higher_is_better) if family.reject[i] else None

        def stratum(mask: np.ndarray, a: int = a, b: int = b, m: int = m) -> Comparison:
            return compare(*samples(a, b, m, mask), alpha=alpha_each, higher_is_better=higher(m), **kw)

        arms = []
        for code, arm in enumerate(ARMS):
            in_arm = table.arm == code
            if all(len(x) for x in samples(a, b, m, in_arm)):
                s = stratum(in_arm)
                arms.append(StratumComparison(arm, s, s.better))
        holds = {s.name: (None if better is None else s.better == better) for s in arms}
        summary, per_context = (None, ()) if context is None else _per_context(table, context, stratum, alpha_each, correction)
        workers, per_worker = _per_worker(table, a, b, m, stratum, alpha_each, correction)
        cells, per_cell = _per_factor_cell(table, a, b, m, stratum, alpha_each, correction)
        rows.append(ComparisonRow(r.a, r.b, table.metric_names[m], table.metric_info(table.metric_names[m]).unit, higher(m), c,
                                  _num(family.p_adjusted[i]), better, holds, tuple(arms), summary, per_context, alpha_each,
                                  workers, per_worker, cells, per_cell))
    return tuple(rows)


def _per_worker(table: TrialTable, a: int, b: int, m: int, stratum: Callable[[np.ndarray], Comparison], alpha_each: float,
                correction: str) -> tuple[ContextSummary | None, tuple[StratumComparison, ...]]:
    """a vs b on each worker of a fleet that measured both (None, () with fewer than two such
    workers), each decided after the correction over those workers, as the contexts are."""
    strata = [(name, table.worker == w) for w, name in enumerate(table.worker_names)]
    return _strata_measuring_both(table, a, b, m, strata, stratum, alpha_each, correction)


def _strata_measuring_both(table: TrialTable, a: int, b: int, m: int, strata: Sequence[tuple[str, np.ndarray]],
                           stratum: Callable[[np.ndarray], Comparison], alpha_each: float,
                           correction: str) -> tuple[ContextSummary | None, tuple[StratumComparison, ...]]:
    """_decided_strata over the strata (name, rows) holding values of both a and b on metric m;
    (None, ()) with fewer than two such strata."""
    of_a, of_b = ((table.test == t) & (table.metric == m) for t in (a, b))
    both = [(name, rows) for name, rows in strata if (of_a & rows).any() and (of_b & rows).any()]
    if len(both) < 2:
        return None, ()
    return _decided_strata(both, stratum, alpha_each, correction)


def _context_values(table: TrialTable, level: int) -> dict[str, str]:
    """A context's own settings (env_bytes, cpus, ...), from its rows."""
    code = table.levels(CONTEXT)[1]  # type: ignore[index]
    rows = np.flatnonzero(code == level)
    out = {}
    for k, dim in enumerate(table.dims):
        if dim.startswith(CONTEXT_PREFIX) and len(rows):
            known = table.treatment[rows, k]
            known = known[known >= 0]
            if len(known):
                out[dim[len(CONTEXT_PREFIX):]] = table.dim_levels[k][int(np.bincount(known).argmax())]
    return out


def _per_factor_cell(table: TrialTable, a: int, b: int, m: int, stratum: Callable[[np.ndarray], Comparison], alpha_each: float,
                     correction: str) -> tuple[ContextSummary | None, tuple[StratumComparison, ...]]:
    """a vs b in each combination of factor levels ("smt=on, governor=performance") that
    measured both, each decided after the correction over the combinations (None, () without
    factors, or with fewer than two such combinations)."""
    ks = [k for k, d in enumerate(table.dims) if d.startswith(FACTOR_PREFIX)]
    if not ks:
        return None, ()
    combos, code = np.unique(table.treatment[:, ks], axis=0, return_inverse=True)
    code = code.ravel()
    strata = [(", ".join(f"{table.dims[k][len(FACTOR_PREFIX):]}={table.dim_levels[k][int(level)]}" for k, level in zip(ks, combo)), code == c)
              for c, combo in enumerate(combos) if not (combo < 0).any()]  # a level not recorded: no cell
    return _strata_measuring_both(table, a, b, m, strata, stratum, alpha_each, correction)


def _per_context(table: TrialTable, context: tuple[tuple[str, ...], np.ndarray], stratum: Callable[[np.ndarray], Comparison],
                 alpha_each: float, correction: str) -> tuple[ContextSummary, tuple[StratumComparison, ...]]:
    """a vs b in each context, each decided after the correction over the contexts (as
    summarize_contexts counts them), with the context's own settings."""
    names, codes = context
    present = [(level, name) for level, name in enumerate(names) if (codes == level).any()]
    summary, per = _decided_strata([(name, codes == level) for level, name in present], stratum, alpha_each, correction)
    return summary, tuple(replace(s, values=_context_values(table, level)) for (level, _), s in zip(present, per))


def _decided_strata(strata: Sequence[tuple[str, np.ndarray]], stratum: Callable[[np.ndarray], Comparison], alpha_each: float,
                    correction: str) -> tuple[ContextSummary, tuple[StratumComparison, ...]]:
    """a vs b in each stratum (name, rows), each decided after the correction over the strata."""
    results = [stratum(rows) for _, rows in strata]
    summary = summarize_contexts(results, alpha=alpha_each, correction=correction)
    decided = adjust(np.array([np.nan if c.p is None else c.p for c in results]), correction, alpha_each)
    per = []
    for i, ((name, _), c) in enumerate(zip(strata, results)):
        better = _winner(c.direction, c.higher_is_better) if decided.reject[i] else None
        per.append(StratumComparison(name, c, better, _num(decided.p_adjusted[i])))
    return summary, tuple(per)


def _medians(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    out = np.full(n_groups, np.nan)
    for g, idx in enumerate(_split(group, n_groups)):
        if len(idx):
            out[g] = np.median(values[idx])
    return out


def _factor_cells(table: TrialTable, rows: np.ndarray) -> np.ndarray | None:
    """Each row's combination of factor levels as one code (-1 levels included), or None
    without factors."""
    ks = [k for k, d in enumerate(table.dims) if d.startswith(FACTOR_PREFIX)]
    if not ks:
        return None
    codes = table.treatment[np.ix_(rows, ks)].astype(np.int64) + 1
    return np.unique(codes, axis=0, return_inverse=True)[1].ravel()


def _aligned(values: np.ndarray, group: np.ndarray, cells: np.ndarray, n_groups: int) -> np.ndarray:
    """Values with each (comparison, factor cell)'s median replaced by the comparison's median:
    what is left varies with everything but the factors."""
    n_cells = int(cells.max()) + 1
    key = group * n_cells + cells
    return values - _medians(values, key, n_groups * n_cells)[key] + _medians(values, group, n_groups)[group]


def _context_effects(table: TrialTable, alpha: float, correction: str) -> tuple[ContextEffect, ...]:
    """Per primary (test, metric): Kruskal-Wallis across contexts, the spread of the context
    medians, and each context dimension's test.

    With factors crossed with the contexts, each combination of factor levels has its median
    taken out first (and the test's median put back): a factor that adds 20 ms would otherwise
    bury a context effect of a few percent in the spread of every context.
    The dimensions are tested on the context medians, one point per context, not on the trials:
    every trial of a context shares all of its settings, so with trials as points a context that
    differs for another reason (its link order) would make, say, env_bytes look significant,
    its n the trials instead of the few contexts that carry the information.
    """
    names, codes = table.levels(CONTEXT)  # type: ignore[misc]
    rows, group, keys = _groups(table, table.primary & (codes >= 0))
    n_groups, n_ctx = len(keys), len(names)
    if n_groups == 0:
        return ()
    values, ctx = table.value[rows], codes[rows].astype(np.int64)
    cells = _factor_cells(table, rows)
    method = "kruskal-wallis across contexts"
    if cells is not None:
        values = _aligned(values, group, cells, n_groups)
        method += "; values aligned on the factor levels (each combination's median replaced by the test's)"
    kw = kruskal_k(values, group, ctx, n_groups, n_ctx)
    kw_adj = adjust(kw.pvalue, correction, alpha)
    cell = group * n_ctx + ctx  # (comparison, context)
    medians = _medians(values, cell, n_groups * n_ctx).reshape(n_groups, n_ctx)
    counts = np.bincount(cell, minlength=n_groups * n_ctx).reshape(n_groups, n_ctx)
    dims = [(k, d[len(CONTEXT_PREFIX):]) for k, d in enumerate(table.dims) if d.startswith(CONTEXT_PREFIX)]
    by = [_dimension_test(table, k, medians) for k, _ in dims]
    by_adj = adjust(np.array([t.p for t in by]).T if dims else np.zeros((n_groups, 0)), correction, alpha)
    out = []
    for g, key in enumerate(keys.tolist()):
        test, metric = _names(table, key)
        present = counts[g] > 0
        med = medians[g][present]
        smallest = float(np.min(med)) if len(med) else math.nan
        detail = {
            d: {"method": t.method, "statistic": _num(t.statistic[g]), "p_adjusted": _num(by_adj.p_adjusted[g, j]),
                "significant": bool(by_adj.reject[g, j]) if math.isfinite(t.p[g]) else None, "contexts": int(t.points[g])}
            for j, ((_, d), t) in enumerate(zip(dims, by))
        }
        testable = math.isfinite(kw.pvalue[g])
        out.append(ContextEffect(
            test=test, metric=metric, kw_h=_num(kw.statistic[g]), df=int(kw.df[g]), kw_p=_num(kw.pvalue[g]),
            p_adjusted=_num(kw_adj.p_adjusted[g]), significant=bool(kw_adj.reject[g]) if testable else None,
            spread_pct=(float(np.max(med)) - smallest) / smallest * 100.0 if smallest > 0 else None,
            medians={names[c]: _num(medians[g, c]) for c in range(n_ctx) if present[c]},
            n={names[c]: int(counts[g, c]) for c in range(n_ctx) if present[c]},
            by={d: _num(t.p[g]) for (_, d), t in zip(dims, by)},
            by_detail=detail,
            method=method,
        ))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class _DimensionTest:
    """One context dimension's test for every comparison: p, statistic (rho or H), the number
    of contexts used, and the method in words."""

    p: np.ndarray
    statistic: np.ndarray
    points: np.ndarray
    method: str


def _dimension_test(table: TrialTable, k: int, medians: np.ndarray) -> _DimensionTest:
    """Context dimension k tested on each comparison's context medians: Spearman's rho against
    the value for a numeric dimension (env_bytes, cwd_bytes), Kruskal-Wallis H across the
    levels of a categorical one (cpus, aslr, link_order). The statistics are those of
    stats.spearman / stats.stratified (scipy's); the p-value is exact, from every assignment of
    the medians to the contexts, up to EXACT_CONTEXTS contexts (the t or chi-squared
    approximation of a handful of points is poor: rho = 1 over 8 contexts would get p = 0),
    asymptotic beyond."""
    ctx_codes = table.levels(CONTEXT)[1]  # type: ignore[index]
    levels = table.dim_levels[k]
    numeric = table.dims[k][len(CONTEXT_PREFIX):] in NUMERIC_DIMENSIONS and _numeric(levels)
    setting = np.full(medians.shape[1], -1, dtype=np.int64)  # each context's level of dimension k
    for c in range(medians.shape[1]):
        known = table.treatment[(ctx_codes == c) & (table.treatment[:, k] >= 0), k]
        if len(known):
            setting[c] = int(np.bincount(known).argmax())
    n_groups = medians.shape[0]
    usable = np.isfinite(medians) & (setting >= 0)[None, :]
    g, c = np.nonzero(usable)
    points = np.bincount(g, minlength=n_groups)
    if numeric:
        x = np.array([float(levels[s]) for s in setting[c]])
        res = spearman_grouped(x, medians[g, c], g, n_groups)
        p, statistic, name = res.pvalue, res.rho, "spearman of the context medians against the value"
    else:
        kres = kruskal_k(medians[g, c], g, setting[c], n_groups, len(levels))
        p, statistic, name = kres.pvalue, kres.statistic, "kruskal-wallis of the context medians across the levels"
    exact = points <= EXACT_CONTEXTS
    for mask in {tuple(row) for row in usable[exact & np.isfinite(p)]}:
        rows = np.flatnonzero(exact & np.isfinite(p) & (usable == np.array(mask)).all(axis=1))
        cols = np.flatnonzero(mask)
        p[rows] = exact_rank_p(medians[np.ix_(rows, cols)], setting[cols], numeric=numeric)
    approximation = "t approximation" if numeric else "chi-squared approximation"
    kinds = sorted({"exact permutation p" if e else approximation for e in exact[points > 0]}) or ["exact permutation p"]
    return _DimensionTest(p=p, statistic=statistic, points=points, method=f"{name} ({', '.join(kinds)})")


# Up to this many contexts, a dimension's p-value comes from all n! assignments of the context
# medians (40,320 at 8, the default number of variants).
EXACT_CONTEXTS = MAX_EXACT


@lru_cache(maxsize=8)
def _numeric(levels: Sequence[str]) -> bool:
    try:
        [float(v) for v in levels]
    except ValueError:
        return False
    return bool(levels)


def _observer_effects(table: TrialTable, baseline: str, alpha: float, correction: str,
                      options: TreatmentOptions) -> tuple[ObserverEffect, ...]:
    names, codes = table.levels(OBSERVER)  # type: ignore[misc]
    base = names.index(baseline)
    rows, group, keys = _groups(table, codes >= 0)
    found: list[ObserverEffect] = []
    for g, idx in enumerate(_split(group, len(keys))):
        test, metric = _names(table, int(keys[g]))
        values, level = table.value[rows[idx]], codes[rows[idx]]
        reference = values[level == base]
        primary = bool(table.primary[rows[idx]].any())
        higher = table.metric_info(metric).better == "higher"
        for code, name in enumerate(names):
            sample = values[level == code]
            if code == base or not len(sample) or not len(reference):
                continue
            c = compare(sample, reference, alpha=alpha, higher_is_better=higher, method=options.compare_method, ci_method=options.ratio_ci)
            m_level, m_base = float(np.median(sample)), float(np.median(reference))
            found.append(ObserverEffect(
                test=test, metric=metric, primary=primary, level=name, baseline=baseline, n_level=len(sample),
                n_baseline=len(reference), median_level=_num(m_level), median_baseline=_num(m_base),
                effect_pct=(m_level - m_base) / m_base * 100.0 if m_base > 0 else None, ratio=c.ratio, ci=c.ci,
                ci_method=c.ci_method, p=c.p, p_adjusted=None, significant=None, method=c.method,
            ))
    p = np.array([np.nan if e.p is None else e.p for e in found])
    primary = np.array([e.primary for e in found], dtype=bool)
    adjusted, reject = np.full(len(found), np.nan), np.zeros(len(found), dtype=bool)
    for family in (primary, ~primary):
        corr = adjust(np.where(family, p, np.nan), correction, alpha)
        adjusted[family], reject[family] = corr.p_adjusted[family], corr.reject[family]
    return tuple(
        replace(e, p_adjusted=_num(adjusted[i]), significant=bool(reject[i]) if e.p is not None else None)
        for i, e in enumerate(found)
    )


def _observer_warnings(effects: Sequence[ObserverEffect]) -> list[str]:
    """One warning per instrumentation level that perturbs what it measures."""
    out = []
    for level in dict.fromkeys(e.level for e in effects):
        rows = [e for e in effects if e.level == level]
        hit = [e for e in rows if e.significant]
        if not hit:
            continue
        worst = max(hit, key=lambda e: abs(e.effect_pct or 0.0))
        size = f"{worst.effect_pct:+.1f}%" if worst.effect_pct is not None else "a significant change"
        out.append(
            f"observer level '{level}' perturbs what it measures: {len(hit)} of {len(rows)} (test, metric) pairs differ from "
            f"'{worst.baseline}' (largest: {worst.test} {worst.metric} {size}); values collected under '{level}' are not the tests' own"
        )
    return out


def _factors(table: TrialTable) -> list[tuple[str, int, tuple[str, str] | None]]:
    """The factors in declared order: (name, dimension index, (low, high) or None when the
    data does not hold exactly two levels). Without the experiment's declaration, the low level
    is the first in the data (integers in numeric order)."""
    declared = {}
    for f in _provenance(table, "factors") or ():
        if isinstance(f, Mapping) and "name" in f:
            declared[str(f["name"])] = tuple(str(v) for v in f.get("levels") or ())
    dims = {d[len(FACTOR_PREFIX):]: k for k, d in enumerate(table.dims) if d.startswith(FACTOR_PREFIX)}
    order = [n for n in declared if n in dims] + [n for n in dims if n not in declared]
    out = []
    for name in order:
        k = dims[name]
        present = [table.dim_levels[k][c] for c in np.unique(table.treatment[:, k]) if c >= 0]
        levels = declared.get(name) or tuple(present)
        ok = len(levels) == 2 and set(present) <= set(levels)
        out.append((name, k, (levels[0], levels[1]) if ok else None))
    return out


def _factorial(table: TrialTable) -> tuple[tuple[FactorialRow, ...], list[str]]:
    factors = _factors(table)
    names = tuple(n for n, _, _ in factors)
    levels = {n: lv for n, _, lv in factors if lv is not None}
    known = np.all(table.treatment[:, [k for _, k, _ in factors]] >= 0, axis=1)
    rows, group, keys = _groups(table, table.primary & known)
    out, notes = [], []
    bad = [n for n, _, lv in factors if lv is None]
    for g, idx in enumerate(_split(group, len(keys))):
        test, metric = _names(table, int(keys[g]))
        if bad:
            out.append(FactorialRow(test, metric, names, levels, None, f"factor {bad[0]!r} does not have exactly two levels in the data"))
            continue
        r_idx = rows[idx]
        settings = {n: [table.dim_levels[k][c] for c in table.treatment[r_idx, k]] for n, k, _ in factors}
        keep, note = _balanced(settings, names)
        if note:
            notes.append(f"{test} ({metric}): {note}")
        try:
            result = factorial_2k(table.value[r_idx][keep], {n: [s[i] for i in keep] for n, s in settings.items()}, levels)
        except ValueError as exc:
            out.append(FactorialRow(test, metric, names, levels, None, str(exc)))
            continue
        out.append(FactorialRow(test, metric, names, levels, result, note))
    return tuple(out), notes


def _balanced(settings: Mapping[str, list[str]], names: tuple[str, ...]) -> tuple[list[int], str]:
    """The rows to analyse: every row when each cell (combination of levels) holds as many
    values; otherwise the first r of each cell in data order, r the smallest count, with a note
    (a 2^k r design needs the same r everywhere; trials lost to failures break that)."""
    cell_of = list(zip(*(settings[n] for n in names)))
    cells: dict[tuple[str, ...], list[int]] = {}
    for i, cell in enumerate(cell_of):
        cells.setdefault(cell, []).append(i)
    sizes = [len(v) for v in cells.values()]
    if min(sizes) == max(sizes):
        return list(range(len(cell_of))), ""
    r = min(sizes)
    keep = sorted(i for v in cells.values() for i in v[:r])
    return keep, f"unbalanced 2^k design ({r}-{max(sizes)} values per combination of levels): the first {r} of each analysed"
