"""Does the order of tests matter? Fixed arm vs random arm for every (test, metric) of a table.

Kruskal-Wallis across the arms corrected over the family, eta²_H, Δ%, the CVs, each arm's
median with its distribution-free interval and the CI case, applied to a TrialTable vectorised
over all comparisons at once, and packed into TestVerdicts and an Analysis.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchsage.analyze import strata
from benchsage.analyze.cells import cell_arms, treatment_cells
from benchsage.analyze.effects import EffectOptions, OrderEffects, order_effects
from benchsage.analyze.notes import AllEqual, EmptyArm, NonFinite, NoStrata, NoValues, OnTest, TooFewForCI, TooFewToTest, ZeroFixedMean
from benchsage.analyze.sorted_values import ValueOrder, sort_values
from benchsage.analyze.verdict import Analysis, Combined, TestVerdict
from benchsage.stats import (
    CI_CASE_RULES,
    CI_METHODS,
    CORRECTIONS,
    adjust,
    ci_case,
    eta_squared_h,
    grouped_median_ci,
    grouped_moments,
    kruskal_2,
    min_sample_size,
    percent_difference,
)
from benchsage.stats._grouped import grouped_ranks, refine_order
from benchsage.store.table import FIXED_CODE, RANDOM_CODE, TrialTable
from benchsage.vocabulary import FIXED, RANDOM, VERSION


def check_options(*, alpha: float, correction: str, ci_method: str, ci_level: float, ci_case_rule: str, min_values: int) -> None:
    """Raise ValueError naming the option and the accepted values when one is invalid."""
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}: expected one of {', '.join(CORRECTIONS)}")
    if ci_method not in CI_METHODS:
        raise ValueError(f"unknown CI method {ci_method!r}: expected one of {', '.join(CI_METHODS)}")
    if ci_case_rule not in CI_CASE_RULES:
        raise ValueError(f"unknown CI case rule {ci_case_rule!r}: expected one of {', '.join(CI_CASE_RULES)}")
    if not (isinstance(alpha, (int, float)) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    if not (isinstance(ci_level, (int, float)) and 0.0 < ci_level < 1.0):
        raise ValueError(f"ci_level must lie strictly between 0 and 1, got {ci_level!r}")
    if isinstance(min_values, bool) or not isinstance(min_values, (int, np.integer)) or min_values < 1:
        raise ValueError(f"min_values must be a whole number >= 1, got {min_values!r}")


def count_runs(run: np.ndarray) -> int:
    """How many distinct runs the rows come from (run ids below 0: not known)."""
    known = run[run >= 0]
    if len(known) == 0:
        return 0
    if int(known.max()) < 4 * len(known) + 1024:  # dense ids: a count per id, no sort
        return int(np.count_nonzero(np.bincount(known)))
    return len(np.unique(known))


@dataclass(frozen=True, eq=False)
class _Columns:
    """The per-comparison arrays, index i = the i-th (test, metric) in output order."""

    test: np.ndarray
    metric: np.ndarray
    primary: np.ndarray
    n: np.ndarray  # shape (G, 2): values per arm
    mean: np.ndarray  # (G, 2)
    cv: np.ndarray  # (G, 2)
    median: np.ndarray  # (G, 2)
    low: np.ndarray  # (G, 2)
    high: np.ndarray  # (G, 2)
    all_equal: np.ndarray
    first_value: np.ndarray
    h: np.ndarray
    p: np.ndarray
    testable: np.ndarray
    p_adjusted: np.ndarray
    reject: np.ndarray
    eta2: np.ndarray
    delta: np.ndarray
    case: np.ndarray
    effects: OrderEffects


def analyze_table(
    table: TrialTable,
    *,
    alpha: float = 0.05,
    correction: str = "bonferroni",
    ci_method: str = "exact-binomial",
    ci_level: float = 0.95,
    ci_case_rule: str = "paper",
    min_values: int = 5,
    tool_version: str = VERSION,
    sorted_values: ValueOrder | None = None,
    effects: EffectOptions = EffectOptions(),
) -> Analysis:
    """Compare the fixed-arm and random-arm values of every (test, metric) in `table`.

    For each comparison: Kruskal-Wallis H and p (fewer than `min_values` values in an arm, or
    all values equal: no test, the fields are None and a warning says why); family-wise
    correction (`correction` at `alpha`) over the primary comparisons and, separately, over
    the others; eta²_H; Δ%; per-arm mean, CV, median and its `ci_level` CI by `ci_method`;
    the CI case by `ci_case_rule`. `order_matters` is true when a primary comparison is
    significant. Tests come out in the table's test order, metrics in its metric order.
    The returned Analysis has no diagnostics (see analyze/diagnostics/).
    sorted_values: sort_values(table), when the caller shares it with the diagnostics.

    Data from more than one worker, or from more than one treatment cell (factor levels,
    contexts: analyze/cells.py), is analysed with each worker's cell as a block
    (analyze/strata.py): van Elteren's stratified test instead of Kruskal-Wallis, and
    descriptive fields of the values with each block's level removed; the Analysis then names
    the method in `combined` (a fleet's per-worker verdicts and diagnostics are added by
    analyze/fleet.py). With cells, each row's `cells` holds each cell's own arms.

    Each row's shift, least p-value and detectable shift: analyze/effects.py (effects: how).
    """
    check_options(alpha=alpha, correction=correction, ci_method=ci_method, ci_level=ci_level, ci_case_rule=ci_case_rule, min_values=min_values)
    counts = {"values": len(table), "runs": count_runs(table.run)}
    warnings: list[Any] = list(table.warnings)
    finite = np.isfinite(table.value)
    if not finite.all():
        warnings.append(NonFinite(int((~finite).sum())))
        table = table.select(finite)
    blocked = _blocked(table, sorted_values, ci_level=ci_level, ci_method=ci_method)
    table, sorted_values, stratified = blocked.table, blocked.sorted_values, blocked.stratified
    cols = _compute(
        table,
        alpha=alpha,
        correction=correction,
        ci_method=ci_method,
        ci_level=ci_level,
        ci_case_rule=ci_case_rule,
        min_values=min_values,
        sorted_values=sorted_values,
        stratified=stratified,
        effects=effects,
    )
    if len(table) == 0:
        warnings.append(NoValues())
    ci_min = min_sample_size(ci_level, ci_method)
    verdicts: list[TestVerdict] = []
    for i in range(len(cols.test)):
        v = _verdict(table, cols, i, min_values=min_values, ci_min=ci_min, ci_level=ci_level, ci_method=ci_method, stratified=stratified)
        verdicts.append(v)
        if v.notes:
            warnings.append(OnTest(v.test, v.metric, v.notes))
    if blocked.arms_by_cell is not None:
        verdicts = [dataclasses.replace(v, cells=arms) for v, arms in zip(verdicts, blocked.arms_by_cell)]
    primary_family = adjust(np.where(cols.primary & cols.testable, cols.p, np.nan), correction, alpha)
    return Analysis(
        tool_version=tool_version,
        alpha=float(alpha),
        correction=correction,
        alpha_corrected=primary_family.alpha_corrected,
        ci_method=ci_method,
        ci_level=float(ci_level),
        ci_case_rule=ci_case_rule,
        order_matters=bool(np.any(cols.reject & cols.primary)),
        tests=tuple(verdicts),
        warnings=tuple(warnings),
        diagnostics=None,
        sources=tuple(table.sources),
        excluded=int(table.excluded),
        provenance=dict(table.provenance),
        combined=blocked.combined,
        **counts,
    )


@dataclass(frozen=True, eq=False)
class _Blocked:
    """A table as the order analysis examines it: with blocks (workers, treatment cells), the
    level-free values and their stratified test; each cell's own arms; how the rows combine."""

    table: TrialTable
    sorted_values: ValueOrder | None
    stratified: strata.Stratified | None
    combined: Combined | None
    arms_by_cell: list[Any] | None


def _blocked(table: TrialTable, sorted_values: ValueOrder | None, *, ci_level: float, ci_method: str) -> _Blocked:
    """The blocks of the table (analyze/strata.py), each cell's arms (analyze/cells.py) and, with
    more than one block, the stratified test; the table unchanged with one block."""
    combined: Combined | None = None
    stratified: strata.Stratified | None = None
    arms_by_cell: list[Any] | None = None
    found_cells = treatment_cells(table)
    blocks = strata.blocks(table, found_cells)
    if found_cells is not None:
        if sorted_values is None or not sorted_values.fits(table):
            sorted_values = sort_values(table)
        arms_by_cell = cell_arms(table, found_cells, sorted_values, level=ci_level, method=ci_method)
    if blocks.stratified:
        combined = Combined(workers=blocks.workers, method=strata.method(blocks.workers > 1, blocks.cells > 1), cells=blocks.cells)
        if sorted_values is None or not sorted_values.fits(table):
            sorted_values = sort_values(table)
        found = strata.stratify(table, sorted_values, blocks)
        if not found.single:
            # The statistics of the level-free values, the test of the raw ones.
            stratified = found
            table = dataclasses.replace(table, value=found.level_free)
            sorted_values = None
    return _Blocked(table, sorted_values, stratified, combined, arms_by_cell)


def _compute(
    table: TrialTable,
    *,
    alpha: float,
    correction: str,
    ci_method: str,
    ci_level: float,
    ci_case_rule: str,
    min_values: int,
    sorted_values: ValueOrder | None = None,
    stratified: strata.Stratified | None = None,
    effects: EffectOptions = EffectOptions(),
) -> _Columns:
    """All statistics for all comparisons: one sort of the values, bincounts, no loop.

    stratified: the stratified test of a fleet's comparisons (same numbering), which replaces
    Kruskal-Wallis; the table's values are then the level-free ones.
    """
    if sorted_values is None or not sorted_values.fits(table):
        sorted_values = sort_values(table)
    group, combos, n_metrics = sorted_values.group, sorted_values.combos, sorted_values.n_metrics
    n_groups = len(combos)
    value = np.asarray(table.value, dtype=np.float64)
    arm = table.arm.astype(np.int64)
    # One sort of the values serves everything: ranks by comparison for Kruskal-Wallis, and,
    # refined by arm with a linear radix pass, the order statistics of each arm.
    ranked = grouped_ranks(value, group, n_groups, sorted_values.order)
    if stratified is None:
        kw = kruskal_2(value, group, arm, n_groups, ranks=ranked)
        statistic, pvalue = kw.statistic, kw.pvalue
    else:
        statistic, pvalue = stratified.statistic, stratified.pvalue
    arm_group = group * 2 + arm  # 2i: fixed arm of comparison i, 2i + 1: random arm
    moments = grouped_moments(value, arm_group, 2 * n_groups)
    by_arm = refine_order(sorted_values.order, arm_group, 2 * n_groups)
    ci = grouped_median_ci(value, arm_group, 2 * n_groups, level=ci_level, method=ci_method, order=by_arm)
    n = moments.n.reshape(n_groups, 2)

    primary = np.bincount(group, weights=table.primary.astype(np.float64), minlength=n_groups) > 0
    # All values equal: min == max within the comparison.
    lo, hi = _sorted_extremes(ranked.sorted_values, ranked.starts, ranked.counts)
    all_equal = lo == hi

    enough = (n >= min_values).all(axis=1)
    testable = enough & np.isfinite(pvalue)
    p = np.where(testable, pvalue, np.nan)
    p_adjusted = np.full(n_groups, np.nan)
    reject = np.zeros(n_groups, dtype=bool)
    for family in (primary, ~primary):
        corr = adjust(np.where(family, p, np.nan), correction, alpha)
        p_adjusted[family] = corr.p_adjusted[family]
        reject[family] = corr.reject[family]

    mean = moments.mean.reshape(n_groups, 2)
    median = ci.median.reshape(n_groups, 2)
    low = ci.low.reshape(n_groups, 2)
    high = ci.high.reshape(n_groups, 2)
    return _Columns(
        test=combos // n_metrics,
        metric=combos % n_metrics,
        primary=primary,
        n=n,
        mean=mean,
        cv=moments.cv.reshape(n_groups, 2),
        median=median,
        low=low,
        high=high,
        all_equal=all_equal,
        first_value=lo,
        h=np.where(testable, statistic, np.nan),
        p=p,
        testable=testable,
        p_adjusted=p_adjusted,
        reject=reject & testable,
        eta2=np.where(testable, eta_squared_h(statistic, n.sum(axis=1), k=2), np.nan),
        delta=percent_difference(mean[:, FIXED_CODE], mean[:, RANDOM_CODE]),
        case=ci_case(median[:, FIXED_CODE], low[:, FIXED_CODE], high[:, FIXED_CODE], median[:, RANDOM_CODE], low[:, RANDOM_CODE], high[:, RANDOM_CODE], ci_case_rule),
        effects=order_effects(value, group, arm, ranked, by_arm, n, primary, testable, alpha=alpha, options=effects, strata=stratified),
    )


def _sorted_extremes(sorted_values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Min and max of each group (inf / -inf when empty) from values sorted by (group, value)."""
    lo = np.full(len(counts), np.inf)
    hi = np.full(len(counts), -np.inf)
    some = counts > 0
    lo[some] = sorted_values[starts[some]]
    hi[some] = sorted_values[starts[some] + counts[some] - 1]
    return lo, hi


def _num(x: float | np.floating) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _verdict(
    table: TrialTable, c: _Columns, i: int, *, min_values: int, ci_min: int, ci_level: float, ci_method: str, stratified: strata.Stratified | None = None
) -> TestVerdict:
    test = table.test_names[int(c.test[i])]
    metric = table.metric_names[int(c.metric[i])]
    info = table.metric_info(metric)
    nf, nr = int(c.n[i, FIXED_CODE]), int(c.n[i, RANDOM_CODE])
    notes = _notes(c, i, min_values=min_values, ci_min=ci_min, ci_level=ci_level, ci_method=ci_method, stratified=stratified)

    def interval(arm: int) -> tuple[float, float] | None:
        lo, hi = _num(c.low[i, arm]), _num(c.high[i, arm])
        return (lo, hi) if lo is not None and hi is not None else None

    testable = bool(c.testable[i])
    return TestVerdict(
        test=test,
        metric=metric,
        primary=bool(c.primary[i]),
        n_fixed=nf,
        n_random=nr,
        kw_h=_num(c.h[i]),
        kw_p=_num(c.p[i]),
        p_adjusted=_num(c.p_adjusted[i]),
        significant=bool(c.reject[i]) if testable else None,
        eta2=_num(c.eta2[i]),
        delta_pct=_num(c.delta[i]),
        cv_fixed=_num(c.cv[i, FIXED_CODE]),
        cv_random=_num(c.cv[i, RANDOM_CODE]),
        mean_fixed=_num(c.mean[i, FIXED_CODE]),
        mean_random=_num(c.mean[i, RANDOM_CODE]),
        median_fixed=_num(c.median[i, FIXED_CODE]),
        ci_fixed=interval(FIXED_CODE),
        median_random=_num(c.median[i, RANDOM_CODE]),
        ci_random=interval(RANDOM_CODE),
        ci_case=int(c.case[i]) or None,
        unit=info.unit,
        better=info.better,
        notes=tuple(notes),
        **c.effects.row(i),
    )


def _notes(
    c: _Columns, i: int, *, min_values: int, ci_min: int, ci_level: float, ci_method: str, stratified: strata.Stratified | None
) -> list[Any]:
    """Why fields of comparison i are null: too few values to test or for a CI, all values
    equal, no block (worker, treatment cell) holding both arms, a zero fixed-arm mean."""
    nf, nr = int(c.n[i, FIXED_CODE]), int(c.n[i, RANDOM_CODE])
    notes: list[Any] = []
    if nf == 0 or nr == 0:
        notes.append(EmptyArm(FIXED if nf == 0 else RANDOM))
    elif nf < min_values or nr < min_values:
        notes.append(TooFewToTest(nf, nr, min_values))
    elif c.all_equal[i]:
        notes.append(AllEqual(nf + nr, float(c.first_value[i])))
    elif stratified is not None and not c.testable[i]:
        if stratified.strata[i] == 0:
            by = stratified.by
            notes.append(NoStrata() if by is None else NoStrata(workers=by.workers > 1, cells=by.cells > 1))
    for arm, name in ((FIXED_CODE, FIXED), (RANDOM_CODE, RANDOM)):
        k = int(c.n[i, arm])
        if 0 < k < ci_min:
            notes.append(TooFewForCI(name, k, ci_level, ci_method, ci_min))
    if nf > 0 and nr > 0 and c.mean[i, FIXED_CODE] == 0:
        notes.append(ZeroFixedMean())
    return notes
