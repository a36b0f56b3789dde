"""The observer effect: does an instrumentation level (strace, perf) change what it measures?
Each level is compared with the lightest one, the baseline (Mytkowicz et al.).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from benchsage.analyze.treatments.notes import ObserverPerturbs
from benchsage.analyze.treatments.options import TreatmentOptions
from benchsage.analyze.treatments.table import comparisons_of, names_of, num, split_rows
from benchsage.stats.compare import compare
from benchsage.stats.correction import adjust
from benchsage.store.table import TrialTable
from benchsage.vocabulary import OBSERVER


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


def observer_effects(table: TrialTable, baseline: str, alpha: float, correction: str,
                      options: TreatmentOptions) -> tuple[ObserverEffect, ...]:
    names, codes = table.levels(OBSERVER)  # type: ignore[misc]
    base = names.index(baseline)
    rows, group, keys = comparisons_of(table, codes >= 0)
    found: list[ObserverEffect] = []
    for g, idx in enumerate(split_rows(group, len(keys))):
        test, metric = names_of(table, int(keys[g]))
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
                n_baseline=len(reference), median_level=num(m_level), median_baseline=num(m_base),
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
        replace(e, p_adjusted=num(adjusted[i]), significant=bool(reject[i]) if e.p is not None else None)
        for i, e in enumerate(found)
    )


def observer_warnings(effects: Sequence[ObserverEffect]) -> list[ObserverPerturbs]:
    """One warning per instrumentation level that perturbs what it measures, naming its
    largest effect."""
    out = []
    for level in dict.fromkeys(e.level for e in effects):
        rows = [e for e in effects if e.level == level]
        hit = [e for e in rows if e.significant]
        if not hit:
            continue
        worst = max(hit, key=lambda e: abs(e.effect_pct or 0.0))
        out.append(ObserverPerturbs(level, worst.baseline, len(hit), len(rows), worst.test, worst.metric, worst.effect_pct))
    return out
