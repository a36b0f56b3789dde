"""The treatment analyses: declared A vs B comparisons (comparisons.py), the measurement context
(Mytkowicz et al.; contexts.py), the observer effect of instrumentation (observer.py), and
factorial designs (2^k: Jain; Nogueira et al.; more levels: an ANOVA; factorial.py).

Each reads the treatment dimensions of a TrialTable (table.py) and gives frozen rows, which
report/treatments_json.py encodes as the analysis JSON's "comparisons", "context_effects",
"observer" and "factorial". Every family of p-values is corrected with the analysis's correction
at its alpha.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchsage.analyze.treatments.comparisons import ComparisonRow, StratumComparison, claims, comparison_rows
from benchsage.analyze.treatments.contexts import ContextEffect, context_effects
from benchsage.analyze.treatments.factorial import AnovaResult, FactorialRow, factorial_rows
from benchsage.analyze.treatments.notes import ObserverBaselineOnly, TreatmentWarning
from benchsage.analyze.treatments.observer import ObserverEffect, observer_effects, observer_warnings
from benchsage.analyze.treatments.options import SPEC_CLAIM, CompareRequest, TreatmentOptions
from benchsage.analyze.treatments.table import CONTEXT_PREFIX, NUMERIC_DIMENSIONS, observer_baseline, order_rows
from benchsage.stats.compare import MIN_VALUES  # the fewest values of a test a comparison tests
from benchsage.store.table import TrialTable
from benchsage.vocabulary import CONTEXT, FACTOR_PREFIX, OBSERVER, SWEEP_PREFIX

__all__ = [
    "AnovaResult",
    "CONTEXT",
    "CONTEXT_PREFIX",
    "FACTOR_PREFIX",
    "MIN_VALUES",
    "NUMERIC_DIMENSIONS",
    "OBSERVER",
    "SPEC_CLAIM",
    "CompareRequest",
    "ComparisonRow",
    "ContextEffect",
    "FactorialRow",
    "ObserverEffect",
    "StratumComparison",
    "TreatmentAnalysis",
    "TreatmentOptions",
    "analyze_treatments",
    "observer_baseline",
    "order_rows",
]


@dataclass(frozen=True)
class TreatmentAnalysis:
    """Everything the treatments of a table say; None for an analysis the table has no data for.

    order_table: the rows the order analysis (fixed vs random) examines: the lightest observer
    level only (see order_rows); the whole table without observer levels. warnings: notes
    (analyze/treatments/notes.py), put into words by the report.
    """

    order_table: TrialTable
    comparisons: tuple[ComparisonRow, ...] | None = None
    context_effects: tuple[ContextEffect, ...] | None = None
    observer: tuple[ObserverEffect, ...] | None = None
    factorial: tuple[FactorialRow, ...] | None = None
    warnings: tuple[TreatmentWarning, ...] = ()


def analyze_treatments(table: TrialTable, *, alpha: float = 0.05, correction: str = "bonferroni",
                       options: TreatmentOptions = TreatmentOptions()) -> TreatmentAnalysis:
    """All treatment analyses of a table (each None when the table has nothing for it).

    Raises UsageError naming the claim when a comparison requested in `options` names a test or
    metric the data does not hold.
    """
    requests = claims(table, options)
    # A sweep's level is constant within each (expanded) test: no treatment varied between runs.
    if all(d.startswith(SWEEP_PREFIX) for d in table.dims) and not requests:
        return TreatmentAnalysis(table)
    finite = np.isfinite(table.value)
    clean = table if finite.all() else table.select(finite)
    order_table = order_rows(table)
    examined = order_rows(clean)
    warnings: list[TreatmentWarning] = []
    baseline = observer_baseline(clean)
    if baseline is not None and len(examined) < len(clean):
        warnings.append(ObserverBaselineOnly(baseline, len(examined), len(clean)))
    comparisons = comparison_rows(examined, requests, alpha, correction, options) if requests else None
    contexts = context_effects(examined, alpha, correction) if examined.levels(CONTEXT) is not None else None
    observer = None
    if baseline is not None:
        observer = observer_effects(clean, baseline, alpha, correction, options)
        warnings.extend(observer_warnings(observer))
    factorial = None
    if any(d.startswith(FACTOR_PREFIX) for d in examined.dims):
        factorial, notes = factorial_rows(examined, alpha, correction)
        warnings.extend(notes)
    return TreatmentAnalysis(order_table, comparisons, contexts, observer, factorial, tuple(warnings))
