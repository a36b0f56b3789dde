"""The response curves in the analysis JSON: "curves" (a point per level with the median, its
interval and n) and "curve_comparisons" (series a against series b at each level)."""

from __future__ import annotations

import math
from typing import Any

from benchsage.analyze.curves import Curve, CurveAnalysis, CurveComparison


def _num(x: Any) -> float | None:
    """x as a JSON number: None when missing or not finite."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _interval(ci: tuple[float, float] | None) -> list[float | None] | None:
    return None if ci is None else [_num(ci[0]), _num(ci[1])]


def curve_json(curve: Curve, found: CurveAnalysis) -> dict[str, Any]:
    """One curve: a metric of a test family along one sweep, for one series."""
    return {
        "test": curve.test,
        "metric": curve.metric,
        "sweep": curve.sweep,
        "series": dict(curve.series),
        "points": [{"level": p.level, "median": _num(p.median), "ci": _interval(p.ci), "n": p.n} for p in curve.points],
        "fixed": dict(curve.fixed),
        "primary": curve.primary,
        "unit": curve.unit,
        "better": curve.better,
        "ci_method": found.ci_method,
        "ci_level": found.ci_level,
    }


def curve_comparison_json(row: CurveComparison) -> dict[str, Any]:
    """Series a against series b at one level of a curve."""
    c = row.comparison
    return {
        "test": row.test,
        "metric": row.metric,
        "sweep": row.sweep,
        "level": row.level,
        "a": dict(row.a),
        "b": dict(row.b),
        "ratio": _num(c.ratio),
        "ci": _interval(c.ci),
        "ci_adjusted": _interval(row.ci_adjusted),
        "p_adjusted": row.p_adjusted,
        "better": row.better,
        "fixed": dict(row.fixed),
        "p": _num(c.p),
        "method": c.method,
        "ci_method": c.ci_method,
        "n_a": c.n_a,
        "n_b": c.n_b,
        "primary": row.primary,
        "reason": None if c.p is not None else c.reason,
    }


def curves_json(found: CurveAnalysis) -> dict[str, list[dict[str, Any]]]:
    """The two keys the analysis JSON adds for an experiment with sweeps."""
    return {
        "curves": [curve_json(c, found) for c in found.curves],
        "curve_comparisons": [curve_comparison_json(r) for r in found.comparisons],
    }
