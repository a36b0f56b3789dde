"""The words of the treatment analyses' notes (analyze/treatments/notes.py): the warnings about
the observer levels and the factorial designs, why a factorial row has no result, and how the
context effects were tested.
"""

from __future__ import annotations

from benchsage.analyze.treatments.notes import (
    ContextMethod,
    DimensionMethod,
    FactorLevelUndeclared,
    FactorNotTwoLevels,
    ObserverBaselineOnly,
    ObserverPerturbs,
    UnbalancedDesign,
    UnbalancedFactorial,
)
from benchsage.report.words.registry import say, words


@words(ObserverBaselineOnly)
def observer_baseline_only(n: ObserverBaselineOnly) -> str:
    return (
        f"the order analysis and the comparisons use the values measured at observer level '{n.baseline}' only "
        f"({n.examined} of {n.total}): the other levels are compared with it under 'observer'"
    )


@words(ObserverPerturbs)
def observer_perturbs(n: ObserverPerturbs) -> str:
    size = f"{n.effect_pct:+.1f}%" if n.effect_pct is not None else "a significant change"
    return (
        f"observer level '{n.level}' perturbs what it measures: {n.differing} of {n.pairs} (test, metric) pairs differ from "
        f"'{n.baseline}' (largest: {n.test} {n.metric} {size}); values collected under '{n.level}' are not the tests' own"
    )


@words(FactorNotTwoLevels)
def factor_not_two_levels(n: FactorNotTwoLevels) -> str:
    return f"factor {n.factor!r} does not have exactly two levels in the data"


@words(FactorLevelUndeclared)
def factor_level_undeclared(n: FactorLevelUndeclared) -> str:
    return f"factor {n.factor!r} has level {n.level!r} in the data, which the experiment does not declare"


@words(UnbalancedDesign)
def unbalanced_design(n: UnbalancedDesign) -> str:
    return f"unbalanced {n.design} design ({n.fewest}-{n.most} values per combination of levels): the first {n.fewest} of each analysed"


@words(UnbalancedFactorial)
def unbalanced_factorial(n: UnbalancedFactorial) -> str:
    return f"{n.test} ({n.metric}): {say(n.design)}"


@words(ContextMethod)
def context_method(n: ContextMethod) -> str:
    text = "kruskal-wallis across contexts"
    if n.aligned:
        text += "; values aligned on the factor levels (each combination's median replaced by the test's)"
    return text


@words(DimensionMethod)
def dimension_method(n: DimensionMethod) -> str:
    """The test and how its p-values were found, e.g. "spearman of the context medians against
    the value (exact permutation p, t approximation)"."""
    if n.numeric:
        name, approximation = "spearman of the context medians against the value", "t approximation"
    else:
        name, approximation = "kruskal-wallis of the context medians across the levels", "chi-squared approximation"
    kinds = sorted(({"exact permutation p"} if n.exact else set()) | ({approximation} if n.approximate else set()))
    return f"{name} ({', '.join(kinds)})"
