"""Factorial designs per test and metric: with two levels per factor, 2^k r designs, the effects
of the user's factors with their intervals and the allocation of variation (Jain ch. 17-18;
Nogueira, Matias & Vicente); with more levels to some factor, the allocation of variation with
an F test per main effect and interaction (Jain ch. 20-23).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

import numpy as np

from benchsage.analyze.treatments.notes import FactorLevelUndeclared, FactorNotTwoLevels, UnbalancedDesign, UnbalancedFactorial
from benchsage.analyze.treatments.table import comparisons_of, names_of, provenance, split_rows
from benchsage.stats.anova import AnovaResult, factorial_anova
from benchsage.stats.correction import adjust
from benchsage.stats.factorial import FactorialResult, factorial_2k
from benchsage.store.table import TrialTable
from benchsage.vocabulary import FACTOR_PREFIX


@dataclass(frozen=True)
class FactorialRow:
    """A factorial design's analysis for one test and metric, and its factors' levels in
    declared order. With two levels to every factor, a 2^k r design: Jain's q's with intervals
    and the allocation of variation (error included), the levels (low first) giving q its sign;
    with more to some factor (`anova`), an AnovaResult: each term's sum of squares, share of the
    variation and F test. result is None, with `reason`, when the design cannot be analysed: a
    FactorNotTwoLevels, a FactorLevelUndeclared, or the error of the analysis; with a result,
    `reason` is an UnbalancedDesign when only part of the values was analysed, else ""."""

    test: str
    metric: str
    factors: tuple[str, ...]
    levels: Mapping[str, tuple[str, ...]]
    result: FactorialResult | AnovaResult | None
    reason: str | FactorNotTwoLevels | FactorLevelUndeclared | UnbalancedDesign = ""
    p_adjusted: tuple[float | None, ...] = ()  # ANOVA: each term's p, corrected over every term of every row
    significant: tuple[bool | None, ...] = ()  # ANOVA: each term's p_adjusted at the analysis's alpha

    @property
    def anova(self) -> bool:
        """Whether the design has a factor of more than two levels (an ANOVA, not Jain's 2^k)."""
        return isinstance(self.result, AnovaResult) or any(len(lv) != 2 for lv in self.levels.values())


def _factors(table: TrialTable) -> list[tuple[str, int, tuple[str, ...] | None]]:
    """The factors in declared order: (name, dimension index, levels or None when the data does
    not hold at least two levels, all declared). Without the experiment's declaration, the levels
    are those in the data, in order of first appearance (integers in numeric order): the low level
    of a two-level factor is the first."""
    declared = {}
    for f in provenance(table, "factors") or ():
        if isinstance(f, Mapping) and "name" in f:
            declared[str(f["name"])] = tuple(str(v) for v in f.get("levels") or ())
    dims = {d[len(FACTOR_PREFIX):]: k for k, d in enumerate(table.dims) if d.startswith(FACTOR_PREFIX)}
    order = [n for n in declared if n in dims] + [n for n in dims if n not in declared]
    out = []
    for name in order:
        k = dims[name]
        present = [table.dim_levels[k][c] for c in np.unique(table.treatment[:, k]) if c >= 0]
        levels = declared.get(name) or tuple(present)
        ok = len(levels) >= 2 and set(present) <= set(levels)
        out.append((name, k, levels if ok else None))
    return out


def _not_analysed(table: TrialTable,
                  factors: list[tuple[str, int, tuple[str, ...] | None]]) -> FactorNotTwoLevels | FactorLevelUndeclared | None:
    """Why the design cannot be analysed at all, or None: a factor with fewer than two levels
    (or two declared and others in the data), or a level a many-level factor does not declare."""
    declared = {str(f["name"]): f.get("levels") or () for f in provenance(table, "factors") or ()
                if isinstance(f, Mapping) and "name" in f}
    for name, k, levels in factors:
        if levels is not None:
            continue
        if len(declared.get(name, ())) > 2:
            present = [table.dim_levels[k][c] for c in np.unique(table.treatment[:, k]) if c >= 0]
            extra = [level for level in present if level not in {str(v) for v in declared[name]}]
            if extra:
                return FactorLevelUndeclared(name, extra[0])
        return FactorNotTwoLevels(name)
    return None


def factorial_rows(table: TrialTable, alpha: float = 0.05,
                   correction: str = "bonferroni") -> tuple[tuple[FactorialRow, ...], list[UnbalancedFactorial]]:
    """Each (test, primary metric)'s analysis (2^k r with two levels to every factor, else an
    ANOVA of the full factorial design), and a warning for each unbalanced design."""
    factors = _factors(table)
    names = tuple(n for n, _, _ in factors)
    levels = {n: lv for n, _, lv in factors if lv is not None}
    anova = any(len(lv) != 2 for lv in levels.values())
    known = np.all(table.treatment[:, [k for _, k, _ in factors]] >= 0, axis=1)
    rows, group, keys = comparisons_of(table, table.primary & known)
    out: list[FactorialRow] = []
    notes: list[UnbalancedFactorial] = []
    bad = _not_analysed(table, factors)
    for g, idx in enumerate(split_rows(group, len(keys))):
        test, metric = names_of(table, int(keys[g]))
        if bad is not None:
            out.append(FactorialRow(test, metric, names, levels, None, bad))
            continue
        r_idx = rows[idx]
        settings = {n: [table.dim_levels[k][c] for c in table.treatment[r_idx, k]] for n, k, _ in factors}
        keep, note = _balanced(settings, names, "full factorial" if anova else "2^k")
        if note is not None:
            notes.append(UnbalancedFactorial(test, metric, note))
        analyse = factorial_anova if anova else factorial_2k
        try:
            kept = {n: [s[i] for i in keep] for n, s in settings.items()}
            result: FactorialResult | AnovaResult = analyse(table.value[r_idx][keep], kept, levels)
        except ValueError as exc:
            out.append(FactorialRow(test, metric, names, levels, None, str(exc)))
            continue
        out.append(FactorialRow(test, metric, names, levels, result, note or ""))
    return (_corrected(out, alpha, correction) if anova else tuple(out)), notes


def _corrected(rows: list[FactorialRow], alpha: float, correction: str) -> tuple[FactorialRow, ...]:
    """The ANOVA rows with their terms' F-test p-values corrected as one family (every term of
    every test and metric), as the other treatment analyses correct theirs."""
    ps = [np.nan if t.p is None else t.p for r in rows if isinstance(r.result, AnovaResult) for t in r.result.terms]
    if not ps:
        return tuple(rows)
    done = adjust(np.array(ps, dtype=np.float64), correction, alpha)
    out, i = [], 0
    for r in rows:
        n = len(r.result.terms) if isinstance(r.result, AnovaResult) else 0
        p_adj = done.p_adjusted[i:i + n]
        out.append(replace(r, p_adjusted=tuple(None if np.isnan(p) else float(p) for p in p_adj),
                           significant=tuple(None if np.isnan(p) else bool(rej) for p, rej in zip(p_adj, done.reject[i:i + n]))))
        i += n
    return tuple(out)


def _balanced(settings: Mapping[str, list[str]], names: tuple[str, ...], design: str) -> tuple[list[int], UnbalancedDesign | None]:
    """The rows to analyse: every row when each cell (combination of levels) holds as many
    values; otherwise the first r of each cell in data order, r the smallest count, with a note
    (a full factorial design with r replications needs the same r everywhere; trials lost to
    failures break that)."""
    cell_of = list(zip(*(settings[n] for n in names)))
    cells: dict[tuple[str, ...], list[int]] = {}
    for i, cell in enumerate(cell_of):
        cells.setdefault(cell, []).append(i)
    sizes = [len(v) for v in cells.values()]
    if min(sizes) == max(sizes):
        return list(range(len(cell_of))), None
    r = min(sizes)
    keep = sorted(i for v in cells.values() for i in v[:r])
    return keep, UnbalancedDesign(r, max(sizes), design)
