"""Response curves of swept tests: a metric against the levels of a sweep (latency vs load),
one curve per series (a combination of factor levels), and the series compared level by level.

A test that names a sweep becomes one test per level (`wrk[conns=8]`); its rows carry the
level in a `sweep:NAME` dimension. The tests sharing the name before `[` are one family. For
each family, metric and sweep, a curve holds the median of each level with its
distribution-free interval (stats/median_ci.py); with several sweeps crossed, the other sweeps'
levels are held fixed along a curve (`fixed`), so a family swept over conns and size has one
curve along conns per size and one along size per conns.

The series of a curve are compared at each level with the declared comparisons' statistics
(stats/compare.py: the ratio of medians a/b with its interval, and the test), every pair once:
a is the later series, b the earlier (the first factor level is the baseline). Each point
(one expanded test, metric and pair) is compared once, on the curve along the first sweep;
the p-values are corrected over the levels and curves, primary metrics in one family and the
other metrics in their own, as the order analysis's families are.

All values of a cell are pooled: both order arms, every context and worker, the lightest
observer level only (the rows the order analysis examines), as the declared comparisons pool them.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from benchsage.stats.compare import DEFAULT_RATIO_CI, Comparison, compare, ratio_ci_bonett_price
from benchsage.stats.compare import ratio_ci as bauer_ratio_ci
from benchsage.stats.correction import adjust
from benchsage.stats.median_ci import grouped_median_ci
from benchsage.store.table import TrialTable
from benchsage.vocabulary import FACTOR_PREFIX, SWEEP_PREFIX

Level = int | float | str  # a level as the JSON writes it: a number when it reads as one

_INTEGER = re.compile(r"[+-]?\d+")


@dataclass(frozen=True)
class CurvePoint:
    """One level of a curve: the median of its values, the interval of the median (None when
    there are too few values for the level), and the number of values."""

    level: Level
    median: float | None
    ci: tuple[float, float] | None
    n: int


@dataclass(frozen=True)
class Curve:
    """A metric of a test family against one sweep's levels, for one series.

    series: the factor levels of the curve ({} without factors); fixed: the other sweeps'
    levels, held along the curve ({} with one sweep); points: in level order (numbers in
    numeric order, other levels as declared or first seen)."""

    test: str
    metric: str
    sweep: str
    series: Mapping[str, str]
    fixed: Mapping[str, Level]
    points: tuple[CurvePoint, ...]
    primary: bool
    unit: str
    better: str


@dataclass(frozen=True)
class CurveComparison:
    """Series a against series b at one level of a curve: comparison holds the ratio of medians
    a/b with its per-level interval and the test's p; p_adjusted is p after the correction over
    the family; ci_adjusted: the interval of the ratio at the family's corrected level (1 -
    alpha/m, the Bonferroni level whatever the correction: simultaneous over the family), which
    is what the corrected decision is read beside; better: "a", "b" or None (not significant
    after the correction, or untested)."""

    test: str
    metric: str
    sweep: str
    level: Level
    fixed: Mapping[str, Level]
    a: Mapping[str, str]
    b: Mapping[str, str]
    comparison: Comparison
    p_adjusted: float | None
    better: str | None
    primary: bool
    unit: str
    higher_is_better: bool
    ci_adjusted: tuple[float, float] | None = None


@dataclass(frozen=True)
class CurveAnalysis:
    """Every curve and every comparison of series, with how they were computed: ci_method and
    ci_level of the medians' intervals, the correction and alpha of the comparisons."""

    curves: tuple[Curve, ...]
    comparisons: tuple[CurveComparison, ...]
    ci_method: str
    ci_level: float
    correction: str
    alpha: float


def family_name(test: str) -> str:
    """The name a sweep expanded: "wrk[conns=8,size=1k]" -> "wrk"."""
    head, bracket, _ = test.partition("[")
    return head if bracket and test.endswith("]") else test


def level_value(text: str) -> Level:
    """A level as the JSON writes it: "8" -> 8, "0.5" -> 0.5, "1k" -> "1k"."""
    if _INTEGER.fullmatch(text):
        return int(text)
    try:
        x = float(text)
    except ValueError:
        return text
    return x if math.isfinite(x) else text


def ordered_levels(names: Sequence[str], declared: Sequence[str] = ()) -> list[str]:
    """Levels in curve order: numbers numerically (2, 8, 32), otherwise as declared, then
    as given (the table's order: first seen)."""
    values = [level_value(n) for n in names]
    if values and all(not isinstance(v, str) for v in values):
        return [n for _, n in sorted(zip(values, names), key=lambda pair: float(pair[0]))]
    rank = {str(d): i for i, d in enumerate(declared)}
    return sorted(names, key=lambda n: rank.get(n, len(rank)))


def _declared(table: TrialTable, key: str) -> dict[str, list[str]]:
    """The levels of each sweep or factor as the experiment declared them (provenance), if it says."""
    out: dict[str, list[str]] = {}
    for source in (table.provenance, *(table.provenance.get("parts") or ())):
        for item in (source.get(key) or ()) if isinstance(source, Mapping) else ():
            if isinstance(item, Mapping) and "name" in item:
                out.setdefault(str(item["name"]), [str(v) for v in item.get("levels") or ()])
    return out


@dataclass(frozen=True)
class _Dim:
    """One sweep or factor dimension of a family: its name, column, and level codes in order."""

    name: str
    column: int
    order: tuple[int, ...]  # level codes in curve order

    def label(self, table: TrialTable, code: int) -> str:
        return table.dim_levels[self.column][code]


def _dims(table: TrialTable, rows: np.ndarray, prefix: str, declared: Mapping[str, list[str]]) -> list[_Dim]:
    """The dimensions of `prefix` with a known level in `rows`, in table order, levels ordered."""
    out = []
    for k, dim in enumerate(table.dims):
        if not dim.startswith(prefix):
            continue
        codes = np.unique(table.treatment[rows, k])
        codes = codes[codes >= 0]
        if not len(codes):
            continue
        name = dim[len(prefix):]
        names = ordered_levels([table.dim_levels[k][c] for c in codes], declared.get(name, ()))
        index = {table.dim_levels[k][c]: int(c) for c in codes}
        out.append(_Dim(name, k, tuple(index[n] for n in names)))
    return out


def curve_analysis(table: TrialTable, *, alpha: float = 0.05, correction: str = "bonferroni", ci_level: float = 0.95,
                   ci_method: str = "exact-binomial", compare_method: str = "mann-whitney",
                   ratio_ci: str | None = None) -> CurveAnalysis | None:
    """The curves of every swept test family and metric, and their series compared level by
    level; None when the table has no sweep dimension."""
    if not any(d.startswith(SWEEP_PREFIX) for d in table.dims):
        return None
    finite = np.isfinite(table.value)
    sweeps_declared, factors_declared = _declared(table, "sweeps"), _declared(table, "factors")
    families: dict[str, list[int]] = {}
    for code, name in enumerate(table.test_names):
        families.setdefault(family_name(name), []).append(code)
    curves: list[Curve] = []
    pending: list[tuple[dict[str, object], np.ndarray, np.ndarray]] = []
    for family, codes in families.items():
        rows = finite & np.isin(table.test, codes)
        sweeps = _dims(table, rows, SWEEP_PREFIX, sweeps_declared)
        if not sweeps:
            continue
        factors = _dims(table, rows, FACTOR_PREFIX, factors_declared)
        columns = [d.column for d in sweeps + factors]
        rows &= np.all(table.treatment[:, columns] >= 0, axis=1)
        if not rows.any():
            continue
        found = _Family(table, family, np.flatnonzero(rows), sweeps, factors, ci_level, ci_method)
        curves.extend(found.curves())
        pending.extend(found.pairs())
    comparisons = _compared(table, pending, alpha, correction, compare_method, ratio_ci)
    return CurveAnalysis(tuple(curves), comparisons, ci_method, float(ci_level), correction, float(alpha))


class _Family:
    """The cells of one test family: a cell is (metric, a level of every sweep, a level of
    every factor), with its values' median and interval from one grouped sort."""

    def __init__(self, table: TrialTable, name: str, rows: np.ndarray, sweeps: list[_Dim], factors: list[_Dim],
                 ci_level: float, ci_method: str) -> None:
        self.table, self.name, self.sweeps, self.factors = table, name, sweeps, factors
        key = np.column_stack([table.metric[rows]] + [table.treatment[rows, d.column] for d in sweeps + factors])
        cells, group = np.unique(key, axis=0, return_inverse=True)
        group = group.ravel()
        self.cell = {tuple(int(x) for x in c): i for i, c in enumerate(cells)}
        self.ci = grouped_median_ci(table.value[rows], group, len(cells), ci_level, ci_method)
        order = np.argsort(group, kind="stable")
        self.values = np.split(table.value[rows][order], np.cumsum(np.bincount(group, minlength=len(cells)))[:-1])
        self.primary = np.zeros(len(cells), dtype=bool)
        np.logical_or.at(self.primary, group, table.primary[rows])
        # Primary metrics first (as the report shows them), each in the table's order.
        metric_primary = {int(m): bool(self.primary[cells[:, 0] == m].any()) for m in np.unique(cells[:, 0])}
        self.metrics = sorted(metric_primary, key=lambda m: (not metric_primary[m], m))

    def _labels(self, dims: Sequence[_Dim], codes: Sequence[int]) -> dict[str, str]:
        return {d.name: d.label(self.table, c) for d, c in zip(dims, codes)}

    def _fixed(self, s: int, others: Sequence[int]) -> dict[str, Level]:
        rest = [d for j, d in enumerate(self.sweeps) if j != s]
        return {d.name: level_value(d.label(self.table, c)) for d, c in zip(rest, others)}

    def _series(self) -> list[tuple[int, ...]]:
        return list(itertools.product(*(d.order for d in self.factors)))

    def _key(self, m: int, s: int, level: int, others: Sequence[int], series: Sequence[int]) -> tuple[int, ...]:
        sweep_codes = list(others)
        sweep_codes.insert(s, level)
        return (m, *sweep_codes, *series)

    def _point(self, cell: int, level: Level) -> CurvePoint:
        ci = self.ci
        low, high = float(ci.low[cell]), float(ci.high[cell])
        bounds = (low, high) if math.isfinite(low) and math.isfinite(high) else None
        return CurvePoint(level, float(ci.median[cell]), bounds, int(ci.n[cell]))

    def _lines(self, s: int) -> itertools.product[tuple[tuple[int, ...], ...]]:
        others = [d.order for j, d in enumerate(self.sweeps) if j != s]
        return itertools.product(itertools.product(*others), self._series())

    def curves(self) -> list[Curve]:
        out = []
        for m in self.metrics:
            metric = self.table.metric_names[m]
            info = self.table.metric_info(metric)
            for s, sweep in enumerate(self.sweeps):
                for others, series in self._lines(s):
                    cells = [(self.cell.get(self._key(m, s, level, others, series)), level) for level in sweep.order]
                    points = tuple(self._point(c, level_value(sweep.label(self.table, lv))) for c, lv in cells if c is not None)
                    if not points:
                        continue
                    primary = bool(self.primary[[c for c, _ in cells if c is not None]].any())
                    out.append(Curve(self.name, metric, sweep.name, self._labels(self.factors, series), self._fixed(s, others),
                                     points, primary, info.unit, info.better))
        return out

    def pairs(self) -> list[tuple[dict[str, object], np.ndarray, np.ndarray]]:
        """Each pair of series at each level of the curves along the first sweep: the row's
        fields and the two samples (a: the later series, b: the earlier)."""
        out: list[tuple[dict[str, object], np.ndarray, np.ndarray]] = []
        series = self._series()
        if len(series) < 2:
            return out
        sweep = self.sweeps[0]
        for m in self.metrics:
            metric = self.table.metric_names[m]
            info = self.table.metric_info(metric)
            others_all = itertools.product(*(d.order for d in self.sweeps[1:]))
            for others in others_all:
                for level in sweep.order:
                    cells = [self.cell.get(self._key(m, 0, level, others, sr)) for sr in series]
                    for (i, b), (j, a) in itertools.combinations(enumerate(series), 2):
                        cb, ca = cells[i], cells[j]
                        if ca is None or cb is None:
                            continue
                        fields = dict(test=self.name, metric=metric, sweep=sweep.name,
                                      level=level_value(sweep.label(self.table, level)), fixed=self._fixed(0, others),
                                      a=self._labels(self.factors, a), b=self._labels(self.factors, b),
                                      primary=bool(self.primary[ca] or self.primary[cb]), unit=info.unit,
                                      higher_is_better=info.better == "higher")
                        out.append((fields, self.values[ca], self.values[cb]))
        return out


def _compared(table: TrialTable, pending: Sequence[tuple[dict[str, object], np.ndarray, np.ndarray]], alpha: float,
              correction: str, method: str, ratio_ci: str | None) -> tuple[CurveComparison, ...]:
    """Each pair compared (stats.compare), corrected over its family (primary metrics, or the
    others), and decided on the adjusted p."""
    kw = {"method": method} if ratio_ci is None else {"method": method, "ci_method": ratio_ci}
    results = [compare(a, b, alpha=alpha, higher_is_better=bool(f["higher_is_better"]), **kw) for f, a, b in pending]
    p = np.array([np.nan if c.p is None else c.p for c in results], dtype=np.float64)
    primary = np.array([bool(f["primary"]) for f, _, _ in pending], dtype=bool)
    adjusted = np.full(len(p), np.nan)
    reject = np.zeros(len(p), dtype=bool)
    for family in (primary, ~primary):
        if family.any():
            done = adjust(p[family], correction, alpha)
            adjusted[family], reject[family] = done.p_adjusted, done.reject
    interval = bauer_ratio_ci if ratio_ci_method(ratio_ci) == "bauer" else ratio_ci_bonett_price
    tested = {bool(f): int(np.isfinite(p[primary == f]).sum()) for f in (True, False)}
    out = []
    for i, ((fields, a, b), c) in enumerate(zip(pending, results)):
        better = None
        if reject[i] and c.direction != 0:
            better = "a" if (c.direction < 0) != c.higher_is_better else "b"
        p_adj = float(adjusted[i]) if math.isfinite(adjusted[i]) else None
        m = max(tested[bool(primary[i])], 1)
        simultaneous = interval(a, b, 1.0 - alpha / m)[0] if c.ratio is not None else None
        out.append(CurveComparison(comparison=c, p_adjusted=p_adj, better=better, ci_adjusted=simultaneous, **fields))  # type: ignore[arg-type]
    return tuple(out)


def ratio_ci_method(name: str | None) -> str:
    """The ratio interval asked for, by its name in stats.compare (None: the default)."""
    return name if name is not None else DEFAULT_RATIO_CI
