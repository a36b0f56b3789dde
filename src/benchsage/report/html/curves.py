"""Response curves of swept tests: per test and sweep, each metric against the levels, a line
per series with its confidence band, and where the series differ, level by level."""

from __future__ import annotations

from typing import Any, Sequence

from benchsage.analyze.curves import Curve, CurveAnalysis
from benchsage.report import curveplots
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import counted
from benchsage.report.html.rows import floats
from benchsage.report.words.curves import curve_pair_sentence, fixed_text, pairs, series_name

KEY = "curves"
TITLE = "Curves"
HEADING = "Response curves"
OPEN = True  # a swept experiment's answer is its curves
CURVE_FIGURES = 12  # figures (a test, sweep and the other sweeps' levels each) the section draws
PANELS = 4  # metrics side by side in one figure
POINT_ROWS = 200  # rows of the table of points
ENERGY_WORDS = ("energy", "power", "watt", "joule")
ENERGY_UNITS = ("J", "W", "mJ", "kJ")


def energy_like(curve: Curve) -> bool:
    """A metric of energy or power (a collector's server_energy, RAPL's energy): drawn beside
    the primary metrics, as power against load is drawn beside latency against load."""
    return curve.unit in ENERGY_UNITS or any(w in curve.metric.lower() for w in ENERGY_WORDS)


def _figure_groups(found: CurveAnalysis) -> dict[tuple[Any, ...], dict[str, list[Curve]]]:
    """(test, sweep, fixed) -> metric -> its curves (a series each): the primary metrics and the
    energy-like ones, at most PANELS metrics."""
    groups: dict[tuple[Any, ...], dict[str, list[Curve]]] = {}
    for c in found.curves:
        if c.primary or energy_like(c):
            metrics = groups.setdefault((c.test, c.sweep, tuple(c.fixed.items())), {})
            if c.metric in metrics or len(metrics) < PANELS:
                metrics.setdefault(c.metric, []).append(c)
    return groups


def _panel(curves: Sequence[Curve]) -> curveplots.CurvePanel:
    levels = list(dict.fromkeys(p.level for c in curves for p in c.points))
    lines = []
    for c in curves:
        at = {p.level: p for p in c.points}
        lines.append(curveplots.CurveLine(
            series_name(c.series),
            floats(at[lv].median if lv in at else None for lv in levels),
            floats(at[lv].ci[0] if lv in at and at[lv].ci else None for lv in levels),
            floats(at[lv].ci[1] if lv in at and at[lv].ci else None for lv in levels),
        ))
    return curveplots.CurvePanel(curves[0].metric, curves[0].unit, curves[0].better, levels, lines)


def gist(shown: dict[str, Any]) -> str:
    """'2 figures; the series differ at 1 of 6 levels'."""
    text = counted(len(shown["figures"]) + shown["more_figures"], "figure")
    if shown["compared"]:
        text += f"; the series differ at {shown['differ']:,} of {counted(shown['compared'], 'level')}"
    return text


def view(material: Material) -> dict[str, Any] | None:
    """The figures (a row of metric panels per test and sweep), the sentences comparing the
    series, and the points as a table; None without sweeps."""
    found = material.analysis.curves
    if found is None:
        return None
    groups = list(_figure_groups(found).items())
    figures = []
    caption = (f"Median per level with its {found.ci_level:.0%} confidence interval (band, {found.ci_method}); one line per "
               "series (the factor levels). Numeric levels in geometric steps are drawn on a log axis.")
    for i, ((test, sweep, fixed), metrics) in enumerate(groups[:CURVE_FIGURES]):
        plot = curveplots.response_curves(f"fig-curve-{i}", f"{test} along {sweep}{fixed_text(dict(fixed))}", sweep,
                                          [_panel(curves) for curves in metrics.values()], caption)
        if plot is not None:
            figures.append(plot)
    sentences = [(any(r.better for r in rows), curve_pair_sentence(rows)) for rows in pairs(r for r in found.comparisons if r.primary)]
    points = [{"test": c.test, "metric": c.metric, "sweep": c.sweep, "fixed": fixed_text(c.fixed).strip(" ()"),
               "series": series_name(c.series), "level": p.level, "median": p.median, "ci": p.ci, "n": p.n, "unit": c.unit}
              for c in found.curves for p in c.points]
    primary = [r for r in found.comparisons if r.primary]
    return {"figures": figures, "more_figures": max(0, len(groups) - CURVE_FIGURES), "sentences": sentences,
            "compared": len(primary), "differ": sum(1 for r in primary if r.better), "n_points": len(points),
            "points": points[:POINT_ROWS], "more_points": max(0, len(points) - POINT_ROWS),
            "correction": found.correction.capitalize(), "ci_level": found.ci_level}
