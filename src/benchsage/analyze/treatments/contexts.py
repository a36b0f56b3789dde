"""Context effects: does a test's result depend on the measurement context (Mytkowicz et al.:
environment size, working-directory length, CPU pinning, ASLR, link order), and on which of the
context's dimensions?
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from benchsage.analyze.levels import AcrossLevels
from benchsage.analyze.treatments.notes import ContextMethod, DimensionMethod
from benchsage.analyze.treatments.table import CONTEXT_PREFIX, NUMERIC_DIMENSIONS, comparisons_of, names_of, num, numeric_levels, split_rows
from benchsage.stats.correction import adjust
from benchsage.stats.permutation import MAX_EXACT, exact_rank_p
from benchsage.stats.spearman import spearman_grouped
from benchsage.stats.stratified import kruskal_k
from benchsage.store.table import TrialTable
from benchsage.vocabulary import CONTEXT, FACTOR_PREFIX


@dataclass(frozen=True)
class _TestMetric:
    test: str
    metric: str


@dataclass(frozen=True)
class ContextEffect(AcrossLevels, _TestMetric):
    """Does a test's result depend on the measurement context, and on which dimension?

    As AcrossLevels across the contexts (all values of each context), corrected over the tests'
    primary metrics; by: per context dimension, the p-value of the dimension's test on the context medians
    (by_detail's "method", a DimensionMethod, names it: Spearman for a numeric dimension,
    Kruskal-Wallis across the levels of a categorical one; exact up to EXACT_CONTEXTS contexts),
    corrected over every (test, dimension) in by_detail's p_adjusted. method: how the values were
    compared (aligned on the factor levels when the design has factors).
    """

    by: Mapping[str, float | None]
    by_detail: Mapping[str, Mapping[str, Any]]
    method: ContextMethod = ContextMethod(aligned=False)
    # Per context: the median of the test's values, not aligned, and its interval at the
    # analysis's confidence level (None: too few values): (median, low, high). Filled in by
    # analyze/context_medians.py for the report's figure; not in the JSON.
    median_ci: Mapping[str, tuple[float, float | None, float | None]] = field(default_factory=dict)


def _medians(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    out = np.full(n_groups, np.nan)
    for g, idx in enumerate(split_rows(group, n_groups)):
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


def context_effects(table: TrialTable, alpha: float, correction: str) -> tuple[ContextEffect, ...]:
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
    rows, group, keys = comparisons_of(table, table.primary & (codes >= 0))
    n_groups, n_ctx = len(keys), len(names)
    if n_groups == 0:
        return ()
    values, ctx = table.value[rows], codes[rows].astype(np.int64)
    cells = _factor_cells(table, rows)
    method = ContextMethod(aligned=cells is not None)
    if cells is not None:
        values = _aligned(values, group, cells, n_groups)
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
        test, metric = names_of(table, key)
        present = counts[g] > 0
        med = medians[g][present]
        smallest = float(np.min(med)) if len(med) else math.nan
        detail = {
            d: {"method": t.method, "statistic": num(t.statistic[g]), "p_adjusted": num(by_adj.p_adjusted[g, j]),
                "significant": bool(by_adj.reject[g, j]) if math.isfinite(t.p[g]) else None, "contexts": int(t.points[g])}
            for j, ((_, d), t) in enumerate(zip(dims, by))
        }
        testable = math.isfinite(kw.pvalue[g])
        out.append(ContextEffect(
            test=test, metric=metric, kw_h=num(kw.statistic[g]), df=int(kw.df[g]), kw_p=num(kw.pvalue[g]),
            p_adjusted=num(kw_adj.p_adjusted[g]), significant=bool(kw_adj.reject[g]) if testable else None,
            spread_pct=(float(np.max(med)) - smallest) / smallest * 100.0 if smallest > 0 else None,
            medians={names[c]: num(medians[g, c]) for c in range(n_ctx) if present[c]},
            n={names[c]: int(counts[g, c]) for c in range(n_ctx) if present[c]},
            by={d: num(t.p[g]) for (_, d), t in zip(dims, by)},
            by_detail=detail,
            method=method,
        ))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class _DimensionTest:
    """One context dimension's test for every comparison: p, statistic (rho or H), the number
    of contexts used, and the method."""

    p: np.ndarray
    statistic: np.ndarray
    points: np.ndarray
    method: DimensionMethod


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
    numeric = table.dims[k][len(CONTEXT_PREFIX):] in NUMERIC_DIMENSIONS and numeric_levels(levels)
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
        p, statistic = res.pvalue, res.rho
    else:
        kres = kruskal_k(medians[g, c], g, setting[c], n_groups, len(levels))
        p, statistic = kres.pvalue, kres.statistic
    exact = points <= EXACT_CONTEXTS
    for mask in {tuple(row) for row in usable[exact & np.isfinite(p)]}:
        rows = np.flatnonzero(exact & np.isfinite(p) & (usable == np.array(mask)).all(axis=1))
        cols = np.flatnonzero(mask)
        p[rows] = exact_rank_p(medians[np.ix_(rows, cols)], setting[cols], numeric=numeric)
    tested = exact[points > 0]
    approximate = bool((~tested).any())
    method = DimensionMethod(numeric=bool(numeric), exact=bool(tested.any()) or not approximate, approximate=approximate)
    return _DimensionTest(p=p, statistic=statistic, points=points, method=method)


# Up to this many contexts, a dimension's p-value comes from all n! assignments of the context
# medians (40,320 at 8, the default number of variants).
EXACT_CONTEXTS = MAX_EXACT
