"""The notes of the treatment analyses: what they have to tell about their rows and their data,
each a small frozen value holding its kind (the class) and the data it is about. The words of
each kind are in report/words/treatments.py; here are only the facts, so that a program reading
an analysis can act on them without parsing sentences.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ObserverBaselineOnly:
    """A warning: the order analysis and the comparisons keep the values measured at the
    lightest observer level (`baseline`): `examined` of the `total` finite values; the other
    levels are answered by the observer analysis."""

    baseline: str
    examined: int
    total: int


@dataclass(frozen=True)
class ObserverPerturbs:
    """A warning: values measured under observer `level` differ from those at `baseline` in
    `differing` of `pairs` (test, metric) pairs; the largest difference is on `test`'s `metric`,
    `effect_pct` percent (None when its baseline median is not positive)."""

    level: str
    baseline: str
    differing: int
    pairs: int
    test: str
    metric: str
    effect_pct: float | None


@dataclass(frozen=True)
class FactorNotTwoLevels:
    """Why a factorial row has no result: `factor` does not hold exactly two levels in the data."""

    factor: str


@dataclass(frozen=True)
class FactorLevelUndeclared:
    """Why a factorial row has no result: the data hold `level` of `factor`, which the
    experiment did not declare among its levels (more than two of them)."""

    factor: str
    level: str


@dataclass(frozen=True)
class UnbalancedDesign:
    """A factorial row's note: its cells hold `fewest` to `most` values, so the first `fewest`
    of each cell were analysed (a 2^k r design, or a full factorial design of any levels,
    `design` "full factorial", needs the same r in every cell)."""

    fewest: int
    most: int
    design: str = "2^k"


@dataclass(frozen=True)
class UnbalancedFactorial:
    """A warning: `test`'s `metric` is an unbalanced 2^k design (`design` says how)."""

    test: str
    metric: str
    design: UnbalancedDesign


@dataclass(frozen=True)
class ContextMethod:
    """How a context effect compares the values across contexts: Kruskal-Wallis, on values
    `aligned` on the factor levels when the design has factors."""

    aligned: bool


@dataclass(frozen=True)
class DimensionMethod:
    """How a context dimension is tested on the context medians: Spearman against the value
    for a `numeric` dimension, Kruskal-Wallis across the levels of a categorical one; `exact`
    when some p-value is an exact permutation p, `approximate` when some is the t or
    chi-squared approximation."""

    numeric: bool
    exact: bool
    approximate: bool


# The warnings the treatment analyses add to an analysis's.
TreatmentWarning = ObserverBaselineOnly | ObserverPerturbs | UnbalancedFactorial
