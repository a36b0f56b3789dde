"""2^k r factorial designs: the effects of the user's factors with their intervals and the
allocation of variation (Jain; Nogueira, Matias & Vicente), per test and metric.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from benchsage.analyze.treatments.notes import FactorNotTwoLevels, UnbalancedDesign, UnbalancedFactorial
from benchsage.analyze.treatments.table import comparisons_of, names_of, provenance, split_rows
from benchsage.stats.factorial import FactorialResult, factorial_2k
from benchsage.store.table import TrialTable
from benchsage.vocabulary import FACTOR_PREFIX


@dataclass(frozen=True)
class FactorialRow:
    """A 2^k r design's analysis for one test and metric: Jain's q's with intervals, the
    allocation of variation (error included), and the levels (low first) that give q its sign.
    result is None, with `reason`, when the design cannot be analysed: a FactorNotTwoLevels, or
    the error of the 2^k analysis; with a result, `reason` is an UnbalancedDesign when only part
    of the values was analysed, else ""."""

    test: str
    metric: str
    factors: tuple[str, ...]
    levels: Mapping[str, tuple[str, str]]
    result: FactorialResult | None
    reason: str | FactorNotTwoLevels | UnbalancedDesign = ""


def _factors(table: TrialTable) -> list[tuple[str, int, tuple[str, str] | None]]:
    """The factors in declared order: (name, dimension index, (low, high) or None when the
    data does not hold exactly two levels). Without the experiment's declaration, the low level
    is the first in the data (integers in numeric order)."""
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
        ok = len(levels) == 2 and set(present) <= set(levels)
        out.append((name, k, (levels[0], levels[1]) if ok else None))
    return out


def factorial_rows(table: TrialTable) -> tuple[tuple[FactorialRow, ...], list[UnbalancedFactorial]]:
    """Each (test, primary metric)'s 2^k r analysis, and a warning for each unbalanced design."""
    factors = _factors(table)
    names = tuple(n for n, _, _ in factors)
    levels = {n: lv for n, _, lv in factors if lv is not None}
    known = np.all(table.treatment[:, [k for _, k, _ in factors]] >= 0, axis=1)
    rows, group, keys = comparisons_of(table, table.primary & known)
    out: list[FactorialRow] = []
    notes: list[UnbalancedFactorial] = []
    bad = [n for n, _, lv in factors if lv is None]
    for g, idx in enumerate(split_rows(group, len(keys))):
        test, metric = names_of(table, int(keys[g]))
        if bad:
            out.append(FactorialRow(test, metric, names, levels, None, FactorNotTwoLevels(bad[0])))
            continue
        r_idx = rows[idx]
        settings = {n: [table.dim_levels[k][c] for c in table.treatment[r_idx, k]] for n, k, _ in factors}
        keep, note = _balanced(settings, names)
        if note is not None:
            notes.append(UnbalancedFactorial(test, metric, note))
        try:
            result = factorial_2k(table.value[r_idx][keep], {n: [s[i] for i in keep] for n, s in settings.items()}, levels)
        except ValueError as exc:
            out.append(FactorialRow(test, metric, names, levels, None, str(exc)))
            continue
        out.append(FactorialRow(test, metric, names, levels, result, note or ""))
    return tuple(out), notes


def _balanced(settings: Mapping[str, list[str]], names: tuple[str, ...]) -> tuple[list[int], UnbalancedDesign | None]:
    """The rows to analyse: every row when each cell (combination of levels) holds as many
    values; otherwise the first r of each cell in data order, r the smallest count, with a note
    (a 2^k r design needs the same r everywhere; trials lost to failures break that)."""
    cell_of = list(zip(*(settings[n] for n in names)))
    cells: dict[tuple[str, ...], list[int]] = {}
    for i, cell in enumerate(cell_of):
        cells.setdefault(cell, []).append(i)
    sizes = [len(v) for v in cells.values()]
    if min(sizes) == max(sizes):
        return list(range(len(cell_of))), None
    r = min(sizes)
    keep = sorted(i for v in cells.values() for i in v[:r])
    return keep, UnbalancedDesign(r, max(sizes))
