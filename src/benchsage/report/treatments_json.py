"""The treatment analyses in the analysis JSON: "comparisons", "context_effects", "observer"
and "factorial", one encoder per kind of row; the rows' notes (methods, reasons) in words."""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from benchsage.analyze.treatments import AnovaResult, ComparisonRow, ContextEffect, FactorialRow, ObserverEffect, StratumComparison
from benchsage.report.words import say


def _num(x: Any) -> float | None:
    """x as a JSON number: None when missing or not finite."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _interval(ci: tuple[float, float] | None) -> list[float | None] | None:
    return None if ci is None else [_num(ci[0]), _num(ci[1])]


def stratum_json(s: StratumComparison) -> dict[str, Any]:
    """a vs b within one order arm, context, worker or factor cell."""
    c = s.comparison
    out: dict[str, Any] = {"ratio": _num(c.ratio), "ci": _interval(c.ci), "p": _num(c.p)}
    if s.p_adjusted is not None:
        out["p_adjusted"] = s.p_adjusted
    out.update({"better": s.better, "n_a": c.n_a, "n_b": c.n_b})
    if s.values:
        out["values"] = dict(s.values)
    return out


def comparison_json(row: ComparisonRow) -> dict[str, Any]:
    """One declared claim "a is better than b", in "comparisons"."""
    c = row.overall
    return {
        "a": row.a,
        "b": row.b,
        "metric": row.metric,
        "ratio": _num(c.ratio),
        "ci": _interval(c.ci),
        "p": _num(c.p),
        "p_adjusted": row.p_adjusted,
        "better": row.better,
        "method": c.method,
        "ci_method": c.ci_method,
        "n_a": c.n_a,
        "n_b": c.n_b,
        "holds_in": dict(row.holds_in),
        "contexts": None if row.contexts is None else row.contexts.to_json(),
        "reason": c.reason,
        "unit": row.unit,
        "higher_is_better": row.higher_is_better,
        "alpha_each": row.alpha_each,
        "arms": {s.name: stratum_json(s) for s in row.arms},
        "per_context": [{"context": s.name, **stratum_json(s)} for s in row.per_context],
        # a fleet's keys only: the JSON of one worker's data is as before
        **({} if row.workers is None else {"workers": row.workers.to_json(),
                                           "per_worker": [{"worker": s.name, **stratum_json(s)} for s in row.per_worker]}),
        # with factors only
        **({} if row.factor_cells is None else {
            "factor_cells": row.factor_cells.to_json(),
            "per_factor_cell": [{"cell": s.name, **stratum_json(s)} for s in row.per_factor_cell]}),
    }


def context_effect_json(row: ContextEffect) -> dict[str, Any]:
    """One test's context effect, in "context_effects" (its per-context medians with their
    intervals, which the report draws, are not in the JSON)."""
    return {
        "test": row.test,
        "metric": row.metric,
        "kw_h": row.kw_h,
        "df": row.df,
        "kw_p": row.kw_p,
        "p_adjusted": row.p_adjusted,
        "significant": row.significant,
        "spread_pct": row.spread_pct,
        "by": dict(row.by),
        "by_detail": {k: _dimension_json(v) for k, v in row.by_detail.items()},
        "method": say(row.method),
        "medians": dict(row.medians),
        "n": dict(row.n),
    }


def _dimension_json(detail: Mapping[str, Any]) -> dict[str, Any]:
    """One context dimension's test in "by_detail", its method in words."""
    out = dict(detail)
    out["method"] = say(out["method"])
    return out


def observer_json(row: ObserverEffect) -> dict[str, Any]:
    """One instrumentation level against the lightest, in "observer"."""
    out = dict(vars(row))
    out["ci"] = _interval(row.ci)
    return out


def factorial_json(row: FactorialRow) -> dict[str, Any]:
    """One test's 2^k r design, in "factorial"; a design with a factor of more levels in
    anova_json."""
    if row.anova:
        return anova_json(row)
    out: dict[str, Any] = {"test": row.test, "metric": row.metric}
    out["terms"] = row.result.to_json()["terms"] if row.result is not None else []
    out["levels"] = {name: list(lv) for name, lv in row.levels.items()}
    if row.result is not None:
        out.update({"mean": row.result.q0, "r": row.result.r, "df": row.result.df, "ci_level": row.result.level})
    out["reason"] = say(row.reason)
    return out


def anova_json(row: FactorialRow) -> dict[str, Any]:
    """One test's full factorial design with a factor of more than two levels, in "factorial":
    "design": "anova", each term's df, ss, ms, f, p, p_adjusted (over every term of every row),
    significant and variation_pct, the error last (df, ss, ms, variation_pct), and each factor's main effect per level (mean at the level minus the grand mean)."""
    out: dict[str, Any] = {"test": row.test, "metric": row.metric, "design": "anova"}
    result = row.result
    out["terms"] = []
    if isinstance(result, AnovaResult):
        terms = result.to_json()["terms"]
        for term, p_adjusted, significant in zip(terms, row.p_adjusted, row.significant):
            term.update({"p_adjusted": p_adjusted, "significant": significant})
        out["terms"] = terms
    out["levels"] = {name: list(lv) for name, lv in row.levels.items()}
    if isinstance(result, AnovaResult):
        out.update({"mean": result.mean, "r": result.r, "df": result.error_df,
                    "effects": {name: dict(zip(lv, result.effects[name])) for name, lv in row.levels.items()}})
    out["reason"] = say(row.reason)
    return out


TREATMENT_JSON: dict[str, Callable[[Any], dict[str, Any]]] = {
    "comparisons": comparison_json,
    "context_effects": context_effect_json,
    "observer": observer_json,
    "factorial": factorial_json,
}
