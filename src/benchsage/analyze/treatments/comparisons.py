"""Declared comparisons: is test a better than test b on a metric, by how much, and does the
winner hold in each order arm, each measurement context, each worker of a fleet and each
combination of factor levels? The ratio of medians with its interval and the test come from
stats/compare.py; each claim's strata are decided at its share of alpha after the correction over
the strata.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

import numpy as np

from benchsage.analyze.treatments.options import SPEC_CLAIM, CompareRequest, TreatmentOptions
from benchsage.analyze.treatments.table import CONTEXT_PREFIX, NUMERIC_DIMENSIONS, num, numeric_levels, provenance
from benchsage.errors import UsageError
from benchsage.stats.compare import Comparison, ContextSummary, DimensionVerdicts, compare, decide_levels, summarize_contexts
from benchsage.stats.correction import adjust
from benchsage.store.table import ARMS, TrialTable
from benchsage.vocabulary import CONTEXT, FACTOR_PREFIX


@dataclass(frozen=True)
class StratumComparison:
    """a vs b within one order arm or one context: the comparison, and whether its winner
    (after the correction over the strata, for contexts) is a, b or undecided."""

    name: str
    comparison: Comparison
    better: str | None
    p_adjusted: float | None = None
    values: Mapping[str, str] = field(default_factory=dict)  # a context's own settings


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


def _winner(direction: int, higher_is_better: bool) -> str | None:
    if direction == 0:
        return None
    return "a" if (direction < 0) != higher_is_better else "b"


def claims(table: TrialTable, options: TreatmentOptions) -> list[CompareRequest]:
    """The spec's claims (as the journal records them) and the requested ones, without repeats."""
    out = [CompareRequest(str(c["a"]), str(c["b"]), c.get("metric"), SPEC_CLAIM)
           for c in provenance(table, "compare") or () if isinstance(c, Mapping)]
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


def comparison_rows(table: TrialTable, requests: list[CompareRequest], alpha: float, correction: str,
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
        if summary is not None:
            summary = summary.with_dimensions(_by_level(table, CONTEXT_PREFIX, len(per_context), a, b, m, stratum, alpha_each, correction))
        workers, per_worker = _per_worker(table, a, b, m, stratum, alpha_each, correction)
        cells, per_cell = _per_factor_cell(table, a, b, m, stratum, alpha_each, correction)
        if cells is not None:
            cells = cells.with_dimensions(_by_level(table, FACTOR_PREFIX, len(per_cell), a, b, m, stratum, alpha_each, correction))
        rows.append(ComparisonRow(r.a, r.b, table.metric_names[m], table.metric_info(table.metric_names[m]).unit, higher(m), c,
                                  num(family.p_adjusted[i]), better, holds, tuple(arms), summary, per_context, alpha_each,
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
        per.append(StratumComparison(name, c, better, num(decided.p_adjusted[i])))
    return summary, tuple(per)


def _by_level(table: TrialTable, prefix: str, strata: int, a: int, b: int, m: int, stratum: Callable[[np.ndarray], Comparison],
              alpha_each: float, correction: str) -> tuple[DimensionVerdicts, ...]:
    """a vs b at each level of each dimension named with `prefix` (the contexts' dimensions, or
    the factors), decided together after the correction over every (dimension, level)
    (stats.compare.decide_levels). A dimension is answered when two or more of its levels hold
    both tests and it has fewer such levels than there are strata (contexts, factor cells): a
    dimension with a level per context (a link order drawn afresh for each) says nothing the
    contexts do not."""
    of_both = ((table.test == a) | (table.test == b)) & (table.metric == m)
    per_level: dict[str, dict[str, Comparison]] = {}
    for k, dim in enumerate(table.dims):
        if not dim.startswith(prefix):
            continue
        levels = _levels(table, k, dim[len(prefix):], of_both)
        if 2 <= len(levels) < strata:
            per_level[dim[len(prefix):]] = {name: stratum(rows) for name, rows in levels}
    return decide_levels(per_level, alpha_each, correction) if per_level else ()


def _levels(table: TrialTable, k: int, name: str, of_both: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The levels of dimension k that hold values of both tests, as (name, rows). A numeric
    context dimension (env_bytes, cwd_bytes) drawn afresh for each context is cut in two at
    the median of its values, "low-high" each: the small environments against the large."""
    code = table.treatment[:, k]
    names = table.dim_levels[k]
    present = np.unique(code[of_both & (code >= 0)])
    if name in NUMERIC_DIMENSIONS and numeric_levels(tuple(names)) and len(present) > 2:
        value = np.array([float(names[c]) for c in present])
        cut = float(np.median(value))
        low = value <= cut if (value > cut).any() else value < cut
        halves = [present[low], present[~low]]
        return [(f"{float(np.min(value[low == side])):g}-{float(np.max(value[low == side])):g}", np.isin(code, half))
                for side, half in ((True, halves[0]), (False, halves[1])) if len(half)]
    return [(names[c], code == c) for c in present.tolist() if len(np.unique(table.test[of_both & (code == c)])) == 2]

