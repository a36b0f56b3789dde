"""The figures of response curves: a metric against a sweep's levels, one line per series with
its confidence band, panels side by side (latency and energy against load, as a paper's figure).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from benchsage.report.logticks import log_axis
from benchsage.report.plots import TERM_COLOURS, Plot, new_figure, styled, render, short_axis_label, short_label

GEOMETRIC_STEP = 1.5  # consecutive levels this many times apart or more, steadily: a log axis
STEADY = 1.5  # "steadily": the largest step at most this many times the smallest


@dataclass(frozen=True)
class CurveLine:
    """One series of a panel: its name, and per level the median and interval (NaN: unknown)."""

    name: str
    median: np.ndarray
    low: np.ndarray
    high: np.ndarray


@dataclass(frozen=True)
class CurvePanel:
    """One metric against the sweep's levels (the same levels, in order, for every line)."""

    metric: str
    unit: str
    better: str
    levels: Sequence[object]
    lines: Sequence[CurveLine]


def numeric_levels(levels: Sequence[object]) -> np.ndarray | None:
    """The levels as numbers, or None when one is not a number."""
    if not levels or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in levels):
        return None
    return np.array(levels, dtype=np.float64)


def geometric(x: np.ndarray | None) -> bool:
    """Whether levels are a geometric progression (2, 8, 32; 1, 10, 100): all positive, each
    at least GEOMETRIC_STEP times the one before, the steps roughly equal. Drawn on a log axis
    such levels are evenly spaced, as the load points of a sweep are meant to be."""
    if x is None or len(x) < 2 or (x <= 0).any():
        return False
    steps = x[1:] / x[:-1]
    return bool((steps >= GEOMETRIC_STEP).all() and steps.max() <= STEADY * steps.min())


def _panel(ax, p: CurvePanel) -> None:  # type: ignore[no-untyped-def]
    x = numeric_levels(p.levels)
    if x is None:
        xs = np.arange(len(p.levels), dtype=np.float64)
        ax.set_xticks(xs, [short_label(str(v), 12) for v in p.levels], parse_math=False, fontsize=7)
    else:
        xs = x
        if geometric(x):
            ax.set_xscale("log")
            log_axis(ax.xaxis, at=xs, labels=[short_label(str(v), 12) for v in p.levels])
    for line, colour in zip(p.lines, TERM_COLOURS * (1 + len(p.lines) // len(TERM_COLOURS))):
        y, low, high = (np.asarray(a, dtype=np.float64) for a in (line.median, line.low, line.high))
        known = np.isfinite(y)
        ax.plot(xs[known], y[known], "o-", color=colour, markersize=3.5, linewidth=1.3, label=short_label(line.name, 24))
        band = known & np.isfinite(low) & np.isfinite(high)
        if band.any():
            ax.fill_between(xs[band], low[band], high[band], color=colour, alpha=0.2, linewidth=0)
    ax.set_title(short_label(p.metric, 32), fontsize=8, parse_math=False)
    ax.set_ylabel(short_axis_label(p.metric, p.unit, p.better), fontsize=7, parse_math=False)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)


@styled
def response_curves(key: str, title: str, sweep: str, panels: Sequence[CurvePanel], caption: str) -> Plot | None:
    """One row of panels, a metric each, against the sweep's levels; a line per series with
    its confidence band (fill_between); a legend of the series when there are several."""
    fig = curves_figure(sweep, panels)
    return None if fig is None else Plot(key, title, caption, render(fig, key))


def curves_figure(sweep: str, panels: Sequence[CurvePanel]) -> Figure | None:
    """The figure response_curves renders (drawn under plots.style()); None without a value."""
    panels = [p for p in panels if any(np.isfinite(np.asarray(line.median, dtype=np.float64)).any() for line in p.lines)]
    if not panels:
        return None
    fig = new_figure(3.3 * len(panels) + 0.4, 2.9)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, p in zip(axes, panels):
        _panel(ax, p)
        ax.set_xlabel(short_label(sweep, 24), fontsize=7, parse_math=False)
    if len(panels[0].lines) > 1:
        legend = axes[0].legend(fontsize=7, frameon=False)
        for text in legend.get_texts():
            text.set_parse_math(False)  # a level named "$x$" is text
    fig.tight_layout()
    return fig
