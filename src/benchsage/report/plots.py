"""The figures of the HTML report, drawn with matplotlib (Agg) and returned as inline SVG text.

Summary figures (the paper's Figures 2-6) draw every test in one vectorised figure; per-test
detail figures are drawn only for the tests the report singles out. Output is deterministic:
a fixed hash salt per figure, no dates, and point clouds rasterised so big data stays small.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import warnings
from dataclasses import dataclass, replace
from typing import Iterable, Iterator, Sequence

import matplotlib
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from benchsage.analyze.verdict import TestVerdict
from benchsage.report.logticks import log_axis

# Okabe-Ito colours: distinguishable with every common colour-vision deficiency.
FIXED_COLOUR = "#0072B2"  # blue
RANDOM_COLOUR = "#E69F00"  # orange
SIGNIFICANT_COLOUR = "#D55E00"  # vermillion
NEUTRAL_COLOUR = "#8C8C8C"
CASE_COLOURS = {1: "#D55E00", 2: "#009E73", 3: "#E69F00", None: "#8C8C8C"}

# Above this many tests a summary figure numbers tests by rank instead of naming them.
NAMED_TESTS_MAX = 40
# Above this many tests the median-CI figure becomes one normalised strip instead of panels.
CI_PANELS_MAX = 30
# Artists with more points than this are rasterised inside the SVG (text stays vector).
RASTER_POINTS = 400
DETAIL_RASTER_POINTS = 150  # a detail figure draws its points three times
LABEL_CHARS = 48

_RC = {
    "svg.fonttype": "none",  # text stays text: small, searchable, escaped by matplotlib's writer
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": 100,
    "savefig.dpi": 110,
}


@dataclass(frozen=True)
class Plot:
    """One rendered figure: key (unique in a report), title and caption, inline SVG markup."""

    key: str
    title: str
    caption: str
    svg: str


# -- labels -----------------------------------------------------------------------------------


def axis_label(metric: str, unit: str, better: str) -> str:
    """'throughput (ops/s), higher is better': the unit and which way is good."""
    head = short_label(f"{metric} ({unit})" if unit else metric, 40)
    if better in ("lower", "higher"):
        return f"{head}, {better} is better"
    return head


def short_axis_label(metric: str, unit: str, better: str) -> str:
    """'ops/s, ↑ better' for small panels."""
    head = short_label(unit or metric, 16)
    arrow = {"lower": "↓", "higher": "↑"}.get(better)
    return f"{head}, {arrow} better" if arrow else head


def short_label(text: str, limit: int = LABEL_CHARS) -> str:
    """A one-line, bounded label for a tick: control characters become spaces."""
    text = re.sub(r"[\x00-\x1f\x7f]+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def verdict_label(v: TestVerdict, with_metric: bool) -> str:
    return short_label(f"{v.test} [{v.metric}]" if with_metric else v.test)


# -- rendering --------------------------------------------------------------------------------

_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_STYLE_DEFS = re.compile(r"<defs>\s*<style type=\"text/css\">[^<]*</style>\s*</defs>\s*", re.S)
_TAG = re.compile(r"<[^>]*>")
_ID_ATTR = re.compile(r'\bid="([^"]*)"')
_REF = re.compile(r'(href="#|url\(#)([^")]*)')


def _scope_ids(svg: str, prefix: str) -> str:
    """Prefix every id (and every reference to one) so that figures inlined side by side in
    one HTML document cannot collide. Only tags are rewritten: text content (where test names
    live) never contains a raw '<' or '>', so the tag pattern cannot reach into it.
    """

    def fix(tag: re.Match[str]) -> str:
        t = _ID_ATTR.sub(lambda m: f'id="{prefix}{m.group(1)}"', tag.group(0))
        return _REF.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}", t)

    return _TAG.sub(fix, svg)


def render(fig: Figure, key: str, tight: bool = True) -> str:
    """The figure as SVG markup to inline in HTML; deterministic for the same figure and key.

    tight: crop to the drawn content (costs a second draw; figures with fixed margins skip it).
    """
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"benchsage-{key}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight" if tight else None)
    svg = _PROLOG.sub("", buf.getvalue(), count=1)
    svg = _METADATA.sub("", svg, count=1)
    # matplotlib's <style>*{...}</style> would apply to the whole HTML page; the report's
    # stylesheet carries the same rule scoped to plots.
    svg = _STYLE_DEFS.sub("", svg, count=1)
    svg = _scope_ids(svg, f"{key}-")
    return svg.replace("<svg ", '<svg class="plot" role="img" ', 1).strip()


def new_figure(width: float, height: float) -> Figure:
    # A bare Figure, not pyplot: no global figure registry to leak into, no GUI backend to
    # pick (the user's own matplotlib setup is left alone), and the SVG writer needs neither.
    return Figure(figsize=(width, height))


def _fixed_margins(fig: Figure, rows: int, cols: int, *, left: float, right: float, bottom: float,
                   top: float, wgap: float, hgap: float) -> None:
    """Margins and gaps in inches (subplots_adjust wants fractions of figure and axes)."""
    width, height = fig.get_size_inches()
    ax_w = (width - left - right - (cols - 1) * wgap) / cols
    ax_h = (height - bottom - top - (rows - 1) * hgap) / rows
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=wgap / ax_w, hspace=hgap / ax_h)


@contextlib.contextmanager
def style() -> Iterator[None]:
    """The report's rc settings (fonts, spines), without touching global state: figures are
    built and drawn under them."""
    with matplotlib.rc_context(_RC), warnings.catch_warnings():
        # Text is drawn by the browser (svg.fonttype none); matplotlib's font only
        # measures it, so a glyph it lacks (CJK, emoji in a test name) is no problem.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font")
        yield


def styled(func):  # type: ignore[no-untyped-def]
    """Draw under style()."""

    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        with style():
            return func(*args, **kwargs)

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


def _named_axis(ax, positions: np.ndarray, labels: Sequence[str]) -> None:  # type: ignore[no-untyped-def]
    # parse_math=False: a '$' in a test name is text, not a mathtext formula to parse.
    ax.set_yticks(positions, labels, parse_math=False, fontsize=7)


def _finite(values: Iterable[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


# -- summary figures (all tests) ---------------------------------------------------------------


@dataclass(frozen=True)
class _Ranking:
    """One of the paper's Figures 2-4: one number per test, sorted. lines: (value, label, colour)
    of each dashed reference line; descending: the largest first; bars: bars, not points."""

    key: str
    title: str
    caption: str
    ylabel: str
    lines: tuple[tuple[float, str, str], ...] = ()
    log: bool = False
    descending: bool = False
    bars: bool = False


_PVALUES = _Ranking(
    "fig-pvalues", "Kruskal-Wallis p-values, sorted",
    "One point per test (fixed arm vs random arm); beyond a dashed line (smaller p) the difference is significant at that "
    "level. Tests without a p-value are left out.",
    "p-value (log scale; lower = stronger evidence)", log=True)
_ETA2 = _Ranking(
    "fig-eta2", "Effect size eta²_H, sorted",
    "Share of the rank variance explained by the arm (fixed vs random). Rough guide: 0.01 small, 0.06 medium, 0.14 large.",
    "eta²_H (higher = larger order effect)",
    ((0.01, "small", NEUTRAL_COLOUR), (0.06, "medium", NEUTRAL_COLOUR), (0.14, "large", SIGNIFICANT_COLOUR)), descending=True)
_DELTA = _Ranking(
    "fig-delta", "Δ% between the arms, sorted",
    "Δ% = (mean of fixed − mean of random) / mean of fixed × 100. Positive: the fixed order measured larger values. "
    "Significant tests are drawn in red.",
    "Δ% (% of the fixed mean; > 0: fixed measured more)", ((0.0, "", NEUTRAL_COLOUR),), bars=True)


@styled
def pvalues_sorted(verdicts: Sequence[TestVerdict], alpha: float, alpha_corrected: float | None) -> Plot | None:
    """Paper Figure 2: Kruskal-Wallis p-values of all tests, sorted, against alpha lines."""
    fig = pvalues_figure(verdicts, alpha, alpha_corrected)
    return None if fig is None else Plot(_PVALUES.key, _PVALUES.title, _PVALUES.caption, render(fig, _PVALUES.key))


def pvalues_figure(verdicts: Sequence[TestVerdict], alpha: float, alpha_corrected: float | None) -> Figure | None:
    """The figure pvalues_sorted renders (drawn under style())."""
    lines = ((alpha, f"alpha = {alpha:g}", NEUTRAL_COLOUR),)
    if alpha_corrected:
        lines += ((alpha_corrected, f"corrected alpha = {alpha_corrected:.3g}", SIGNIFICANT_COLOUR),)
    return _ranking_figure(verdicts, _finite(v.kw_p for v in verdicts), replace(_PVALUES, lines=lines))


@styled
def eta2_sorted(verdicts: Sequence[TestVerdict]) -> Plot | None:
    """Paper Figure 3: effect sizes eta²_H of all tests, sorted."""
    return _sorted_values(verdicts, _finite(v.eta2 for v in verdicts), _ETA2)


@styled
def delta_sorted(verdicts: Sequence[TestVerdict]) -> Plot | None:
    """Paper Figure 4: Δ% = (mean fixed − mean random) / mean fixed × 100, sorted."""
    return _sorted_values(verdicts, _finite(v.delta_pct for v in verdicts), _DELTA)


def _sorted_values(verdicts: Sequence[TestVerdict], values: np.ndarray, figure: _Ranking) -> Plot | None:
    """`figure` of the tests whose value is known (not NaN), rendered; None when none is."""
    fig = _ranking_figure(verdicts, values, figure)
    return None if fig is None else Plot(figure.key, figure.title, figure.caption, render(fig, figure.key))


def _ranking_figure(verdicts: Sequence[TestVerdict], values: np.ndarray, figure: _Ranking) -> Figure | None:
    known = np.isfinite(values)
    if not known.any():
        return None
    verdicts = [v for v, keep in zip(verdicts, known) if keep]
    values = values[known]
    ylabel, log, hlines = figure.ylabel, figure.log, figure.lines
    order = np.argsort(-values if figure.descending else values, kind="stable")
    vals = values[order]
    sig = np.array([bool(verdicts[i].significant) for i in order], dtype=bool)
    colours = np.where(sig, SIGNIFICANT_COLOUR, FIXED_COLOUR)
    n = len(vals)
    if log:
        vals = np.maximum(vals, 1e-300)  # p can underflow to 0; keep it on a log axis
    if n <= NAMED_TESTS_MAX:
        # Few tests: one named row each, first in the sort order at the top; names read
        # horizontally, however long they are.
        with_metric = len({v.metric for v in verdicts}) > 1
        fig = new_figure(6.0, max(2.4, 0.9 + 0.2 * n))
        ax = fig.add_subplot()
        y = np.arange(n)[::-1]
        if log:
            ax.set_xscale("log")
        if figure.bars:
            ax.barh(y, vals, color=colours, height=0.7)
        else:
            ax.scatter(vals, y, c=colours, s=22, linewidths=0, zorder=3)
        for level, text, colour in hlines:
            ax.axvline(level, color=colour, linestyle="--", linewidth=0.9)
            if text:
                ax.annotate(text, xy=(level, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -2),
                            textcoords="offset points", ha="left", va="top", fontsize=7, color=colour, rotation=90)
        _named_axis(ax, y, [verdict_label(verdicts[i], with_metric) for i in order])
        ax.set_ylim(-0.7, n - 0.3)
        ax.set_xlabel(ylabel)
        ax.grid(axis="x", alpha=0.3)
        if log:
            _log_values(ax.xaxis, ax.set_xlim, vals, hlines)
    else:
        fig = new_figure(10.0, 4.2)
        ax = fig.add_subplot()
        x = np.arange(n)
        if log:
            ax.set_yscale("log")
        ax.scatter(x, vals, c=colours, s=6, linewidths=0, rasterized=n > RASTER_POINTS)
        for level, text, colour in hlines:
            ax.axhline(level, color=colour, linestyle="--", linewidth=0.9)
            if text:
                ax.annotate(text, xy=(1.0, level), xycoords=("axes fraction", "data"), xytext=(-2, 2),
                            textcoords="offset points", ha="right", va="bottom", fontsize=7, color=colour)
        ax.set_xlabel(f"tests, ranked ({n:,})")
        ax.set_ylabel(ylabel)
        ax.set_xlim(-0.01 * n, 1.01 * n)
        ax.grid(axis="y", alpha=0.3)
        if log:
            _log_values(ax.yaxis, ax.set_ylim, vals, hlines)
    return fig


def _log_values(axis, set_lim, vals: np.ndarray, hlines: Sequence[tuple[float, str, str]]) -> None:  # type: ignore[no-untyped-def]
    """The value axis of a log ranking: readable ticks, and every reference line in view (the
    p-values' alpha lines are what the points are read against)."""
    levels = [level for level, _, _ in hlines if level > 0]
    lo, hi = float(min([vals.min(), *levels])), float(max([vals.max(), *levels]))
    set_lim(lo / 1.6, hi * 1.6 if hi > 1 else min(hi * 1.6, 1.2))  # a p-value is at most 1
    log_axis(axis)


@styled
def ci_case_counts(counts_of_cases: Sequence[int], ci_level: float = 0.95) -> Plot | None:
    """Paper Figure 6: how many tests fall in each confidence-interval case (counts_of_cases:
    of case 1, 2, 3 and of no case, as analyze.summary.Summary.ci_cases)."""
    if not sum(counts_of_cases):
        return None
    cases = [1, 2, 3, None]
    names = {
        1: "case 1\nno overlap\n(red flag)",
        2: "case 2\nmedian inside\nother CI",
        3: "case 3\noverlap only\n(inconclusive)",
        None: "no CI\n(too few values)",
    }
    counts = np.array(counts_of_cases)
    if counts[-1] == 0:
        cases, counts = cases[:-1], counts[:-1]
    fig = new_figure(5.6, 3.6)
    ax = fig.add_subplot()
    x = np.arange(len(cases))
    ax.bar(x, counts, color=[CASE_COLOURS[c] for c in cases], width=0.65)
    for xi, c in zip(x, counts):
        ax.annotate(str(int(c)), xy=(xi, c), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom")
    ax.set_xticks(x, [names[c] for c in cases], fontsize=8)
    ax.set_ylabel("tests")
    ax.set_ylim(0, max(1, int(counts.max())) * 1.15)
    return Plot(
        "fig-ci-cases",
        "Confidence-interval cases",
        f"{ci_level:.0%} CIs of the fixed and random medians: case 1 the intervals do not overlap (the "
        "conclusion could change with the order), case 2 a median lies in the other arm's "
        "interval, case 3 they overlap but neither median is inside (inconclusive).",
        render(fig, "fig-ci-cases"),
    )


@styled
def median_cis(verdicts: Sequence[TestVerdict], ci_level: float = 0.95) -> Plot | None:
    """Paper Figure 5: each test's fixed and random medians with their CIs, side by side."""
    vs = [v for v in verdicts if v.median_fixed is not None and v.median_random is not None]
    if not vs:
        return None
    if len(vs) <= CI_PANELS_MAX:
        return _median_ci_panels(vs, ci_level)
    return _median_ci_strip(vs, ci_level)


def _median_ci_panels(vs: Sequence[TestVerdict], ci_level: float) -> Plot:
    with_metric = len({v.metric for v in vs}) > 1
    ncols = min(len(vs), 5)
    nrows = math.ceil(len(vs) / ncols)
    fig = new_figure(2.4 * ncols, 2.4 * nrows)
    _fixed_margins(fig, nrows, ncols, left=0.8, right=0.1, bottom=0.35, top=0.3, wgap=0.85, hgap=0.7)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat[len(vs):]:
        ax.set_visible(False)
    for ax, v in zip(axes.flat, vs):
        for x, median, ci, colour in ((0, v.median_fixed, v.ci_fixed, FIXED_COLOUR), (1, v.median_random, v.ci_random, RANDOM_COLOUR)):
            if ci is not None:
                err = [[max(0.0, median - ci[0])], [max(0.0, ci[1] - median)]]
                ax.errorbar([x], [median], yerr=err, fmt="o", color=colour, capsize=4, markersize=5)
            else:
                ax.plot([x], [median], "o", color=colour, markersize=5)
        ax.set_xlim(-0.6, 1.6)
        ax.set_xticks([0, 1], ["fixed", "random"], fontsize=8)
        ax.set_title(verdict_label(v, with_metric), fontsize=8, parse_math=False, y=1.0,
                     color=CASE_COLOURS[1] if v.ci_case == 1 else "black")
        ax.set_ylabel(short_axis_label(v.metric, v.unit, v.better), fontsize=7, parse_math=False)
        ax.tick_params(axis="y", labelsize=7)
        ax.margins(y=0.25)
    return Plot(
        "fig-median-ci",
        f"Median and {ci_level:.0%} CI per test, fixed vs random",
        "Blue: fixed arm, orange: random arm; bars are the confidence intervals of the "
        "medians. Titles in red are case 1 (the intervals do not overlap).",
        render(fig, "fig-median-ci", tight=False),
    )


def _median_ci_strip(vs: Sequence[TestVerdict], ci_level: float) -> Plot:
    # Tests have different units, so every interval is drawn relative to its fixed median.
    mf = _finite(v.median_fixed for v in vs)
    scale = np.where(mf != 0, np.abs(mf), np.nan)

    def rel(x: np.ndarray) -> np.ndarray:
        return (x - mf) / scale * 100

    lo_f = rel(_finite(v.ci_fixed[0] if v.ci_fixed else None for v in vs))
    hi_f = rel(_finite(v.ci_fixed[1] if v.ci_fixed else None for v in vs))
    mr = rel(_finite(v.median_random for v in vs))
    lo_r = rel(_finite(v.ci_random[0] if v.ci_random else None for v in vs))
    hi_r = rel(_finite(v.ci_random[1] if v.ci_random else None for v in vs))
    order = np.argsort(np.nan_to_num(mr, nan=0.0), kind="stable")
    n = len(vs)
    x = np.arange(n)
    fig = new_figure(10.0, 4.2)
    ax = fig.add_subplot()
    raster = n > RASTER_POINTS
    for xs, lo, hi, colour in ((x - 0.2, lo_f, hi_f, FIXED_COLOUR), (x + 0.2, lo_r, hi_r, RANDOM_COLOUR)):
        lo, hi = lo[order], hi[order]
        ok = np.isfinite(lo) & np.isfinite(hi)
        segs = np.stack([np.column_stack([xs[ok], lo[ok]]), np.column_stack([xs[ok], hi[ok]])], axis=1)
        ax.add_collection(LineCollection(segs, colors=colour, linewidths=0.8, rasterized=raster))
    ax.scatter(x - 0.2, np.zeros(n), s=3, color=FIXED_COLOUR, linewidths=0, rasterized=raster, label="fixed median and CI")
    case1 = np.array([vs[i].ci_case == 1 for i in order])
    ax.scatter((x + 0.2)[~case1], mr[order][~case1], s=4, color=RANDOM_COLOUR, linewidths=0, rasterized=raster, label="random median and CI")
    ax.scatter((x + 0.2)[case1], mr[order][case1], s=10, color=SIGNIFICANT_COLOUR, linewidths=0, rasterized=raster, label="random, case 1 (no overlap)")
    ax.axhline(0, color=NEUTRAL_COLOUR, linewidth=0.8)
    ax.set_xlim(-1, n)
    ax.set_xlabel(f"tests, ranked by the random median ({n})")
    ax.set_ylabel("% of the fixed median")
    ax.legend(loc="upper left", fontsize=7, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return Plot(
        "fig-median-ci",
        f"Median and {ci_level:.0%} CI per test, fixed vs random (relative to the fixed median)",
        "Every test, with both arms' medians and intervals expressed as % of the fixed median so "
        "that tests with different units share one axis. The per-test detail below shows the "
        "intervals in their own units.",
        render(fig, "fig-median-ci"),
    )


# -- per-test detail ---------------------------------------------------------------------------


def _jitter(n: int, seed: int) -> np.ndarray:
    # Deterministic, so the same data always gives the same report.
    return np.random.default_rng(seed).uniform(-0.18, 0.18, n)


def _time_axis(t: np.ndarray, origin: float | None = None) -> tuple[np.ndarray, str]:
    """Seconds since `origin` (default: the earliest) in a readable unit."""
    origin = float(np.nanmin(t)) if origin is None and len(t) else (origin or 0.0)
    span = float(np.nanmax(t) - origin) if len(t) else 0.0
    for div, unit in ((86400.0, "days"), (3600.0, "hours"), (60.0, "minutes")):
        if span >= 2 * div:
            return (t - origin) / div, unit
    return t - origin, "seconds"


def _binned_median(x: np.ndarray, y: np.ndarray, bins: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Median of y per value of x, or per equal-width bin of x when x has many values."""
    if len(x) == 0:
        return x, y
    uniq = np.unique(x)
    if len(uniq) <= bins:
        keys = x
        centres = uniq.astype(np.float64)
    else:
        edges = np.linspace(uniq[0], uniq[-1], bins + 1)
        keys = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, bins - 1)
        centres = (edges[:-1] + edges[1:]) / 2
        uniq = np.arange(bins)
    order = np.argsort(keys, kind="stable")
    ks, ys = keys[order], y[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    present = ks[starts]
    meds = np.array([np.median(seg) for seg in np.split(ys, starts[1:])])
    idx = np.searchsorted(uniq, present)
    return centres[idx], meds


@styled
def test_detail(
    v: TestVerdict,
    key: str,
    value: np.ndarray,
    arm: np.ndarray,
    position: np.ndarray | None = None,
    time: np.ndarray | None = None,
    *,
    time_origin: float | None = None,
    time_of: str = "trial",
    ci_level: float = 0.95,
) -> Plot:
    """One test's data: its distribution by arm with the medians' CIs, and, when the data
    has them, its values by position in run and over time.

    value, arm (0 fixed / 1 random), position and time are the rows of this test and metric;
    time is the start of each trial or of its run (`time_of`: "trial" or "run"), in seconds,
    drawn relative to `time_origin` (default: the earliest time given).
    """
    panels = 1 + (position is not None) + (time is not None)
    fig = new_figure(0.6 + 3.5 * panels, 3.2)
    # Fixed margins instead of a layout engine: detail figures are many, and measuring text
    # to lay them out would cost more than drawing them. One value axis serves all panels.
    _fixed_margins(fig, 1, panels, left=1.0, right=0.1, bottom=0.62, top=0.3, wgap=0.35, hgap=0)
    axes = fig.subplots(1, panels, squeeze=False, sharey=True)[0]
    ylabel = axis_label(v.metric, v.unit, v.better)
    fixed = arm == 0
    raster = len(value) > DETAIL_RASTER_POINTS
    size, alpha = (16, 0.6) if len(value) < 200 else (7, 0.45)

    ax = axes[0]
    for x, mask, colour, median, ci in (
        (0, fixed, FIXED_COLOUR, v.median_fixed, v.ci_fixed),
        (1, ~fixed, RANDOM_COLOUR, v.median_random, v.ci_random),
    ):
        ys = value[mask]
        ax.scatter(x + _jitter(len(ys), x), ys, s=size, color=colour, alpha=alpha, linewidths=0, rasterized=raster)
        if median is not None:
            err = [[max(0.0, median - ci[0])], [max(0.0, ci[1] - median)]] if ci is not None else None
            ax.errorbar([x + 0.32], [median], yerr=err, fmt="D", color="black", markersize=4, capsize=4, linewidth=1.2)
    ax.set_xticks([0, 1], [f"fixed\n(n={int(fixed.sum())})", f"random\n(n={int((~fixed).sum())})"])
    ax.set_xlim(-0.5, 1.6)
    ax.set_ylabel(ylabel, parse_math=False)
    ax.set_title(f"by arm (black: median, {ci_level:.0%} CI)", y=1.0)
    ax.grid(axis="y", alpha=0.3)

    i = 1
    if position is not None:
        ax = axes[i]
        i += 1
        for mask, colour, name in ((fixed, FIXED_COLOUR, "fixed"), (~fixed, RANDOM_COLOUR, "random")):
            ax.scatter(position[mask], value[mask], s=size, color=colour, alpha=alpha, linewidths=0, rasterized=raster, label=name)
        cx, cy = _binned_median(position[~fixed], value[~fixed])
        if len(cx) > 1:
            ax.plot(cx, cy, color="black", linewidth=1.0, label="random median")
        ax.set_xlabel("position in run (0 = first)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title("by position in run", y=1.0)
        ax.legend(fontsize=7, frameon=False)
        ax.grid(alpha=0.3)
    if time is not None:
        ax = axes[i]
        t, unit = _time_axis(time, time_origin)
        for mask, colour, name in ((fixed, FIXED_COLOUR, "fixed"), (~fixed, RANDOM_COLOUR, "random")):
            ax.scatter(t[mask], value[mask], s=size, color=colour, alpha=alpha, linewidths=0, rasterized=raster, label=name)
        ax.set_xlabel(f"{time_of} start, time since the first {time_of} ({unit})")
        ax.set_title("over time", y=1.0)
        ax.legend(fontsize=7, frameon=False)
        ax.grid(alpha=0.3)
    return Plot(key, v.test, "", render(fig, key, tight=False))


@styled
def run_timeline(run_start: np.ndarray, run_arm: np.ndarray) -> Plot | None:
    """When each run started, by arm: interleaved arms alternate, blocked arms separate."""
    if len(run_start) == 0 or not np.isfinite(run_start).all():
        return None
    t, unit = _time_axis(run_start)
    fig = new_figure(9.0, 1.9)
    ax = fig.add_subplot()
    for code, colour, name in ((0, FIXED_COLOUR, "fixed"), (1, RANDOM_COLOUR, "random")):
        m = run_arm == code
        ax.scatter(t[m], np.full(int(m.sum()), code), marker="|", s=120, color=colour, linewidths=1.2,
                   rasterized=len(t) > RASTER_POINTS)
    ax.set_yticks([0, 1], ["fixed", "random"])
    ax.set_ylim(-0.6, 1.6)
    ax.set_xlabel(f"run start, time since the first run ({unit})")
    ax.spines["left"].set_visible(False)
    return Plot(
        "fig-timeline",
        "Runs over time, by arm",
        "One tick per run. Interleaved arms alternate along the time axis; if all runs of one arm "
        "precede the other, drift over time can masquerade as an order effect.",
        render(fig, "fig-timeline"),
    )


# -- treatments: contexts (Mytkowicz et al.), instrumentation, factorial designs ----------------

A_BETTER_COLOUR = "#009E73"  # bluish green: the claim's a wins in this context
UNDECIDED_COLOUR = NEUTRAL_COLOUR
# Terms of a factorial design, in order; the error is always NEUTRAL_COLOUR.
TERM_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
CONTEXT_LABELS_MAX = 24  # above this many contexts a categorical axis is numbered, not named


@dataclass(frozen=True, eq=False)
class ContextPanel:
    """One panel of a per-context figure: per context, a point with its interval.

    x: each context's numeric setting (bytes of environment, say) to place it on a value axis,
    as Mytkowicz et al.'s Figures 6-7; None to set the contexts side by side, named by
    `labels` (their Figures 8-9, link orders). low/high: NaN where there is no interval.
    reference: a horizontal line, 1.0 for a ratio (above it a is larger than b). flagged: the
    title in red (a significant context effect).
    """

    title: str
    ylabel: str
    labels: Sequence[str]
    y: np.ndarray
    low: np.ndarray
    high: np.ndarray
    colours: Sequence[str]
    x: np.ndarray | None = None
    xlabel: str = "context"
    reference: float | None = None
    flagged: bool = False


def _context_axis(ax, p: ContextPanel) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Where each context goes on the x axis, with the axis labelled to match."""
    if p.x is not None:
        ax.set_xlabel(p.xlabel, parse_math=False)
        return np.asarray(p.x, dtype=np.float64)
    n = len(p.labels)
    xs = np.arange(n, dtype=np.float64)
    if n <= CONTEXT_LABELS_MAX:
        ax.set_xticks(xs, [short_label(s, 16) for s in p.labels], parse_math=False, fontsize=7,
                      rotation=90 if n > 8 else 0)
        ax.set_xlabel(p.xlabel, parse_math=False)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(f"{p.xlabel} (numbered, {n})", parse_math=False)
    ax.set_xlim(-0.6, n - 0.4)
    return xs


@styled
def per_context(key: str, title: str, caption: str, panels: Sequence[ContextPanel]) -> Plot | None:
    """Mytkowicz et al.'s Figures 6-9: one point with its confidence interval per measurement
    context, one panel per test or claim; a sign flip shows as points on both sides of 1.0."""
    panels = [p for p in panels if np.isfinite(np.asarray(p.y, dtype=np.float64)).any()]
    if not panels:
        return None
    ncols = min(len(panels), 3)
    nrows = math.ceil(len(panels) / ncols)
    fig = new_figure(3.9 * ncols, 3.0 * nrows)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, p in zip(axes.flat, panels):
        xs = _context_axis(ax, p)
        y, low, high = (np.asarray(a, dtype=np.float64) for a in (p.y, p.low, p.high))
        colours = np.asarray(p.colours)
        for colour in dict.fromkeys(p.colours):
            m = (colours == colour) & np.isfinite(y)
            has_ci = m & np.isfinite(low) & np.isfinite(high)
            if has_ci.any():
                err = np.vstack([np.maximum(0.0, y[has_ci] - low[has_ci]), np.maximum(0.0, high[has_ci] - y[has_ci])])
                ax.errorbar(xs[has_ci], y[has_ci], yerr=err, fmt="o", color=colour, markersize=4, capsize=3, linewidth=1)
            bare = m & ~has_ci
            if bare.any():
                ax.plot(xs[bare], y[bare], "o", color=colour, markersize=4)
        if p.reference is not None:
            ax.axhline(p.reference, color=NEUTRAL_COLOUR, linestyle="--", linewidth=0.9)
        ax.set_title(short_label(p.title), fontsize=8, parse_math=False, y=1.0, color=SIGNIFICANT_COLOUR if p.flagged else "black")
        ax.set_ylabel(p.ylabel, fontsize=7, parse_math=False)
        ax.tick_params(labelsize=7)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return Plot(key, title, caption, render(fig, key))


@styled
def observer_effects(labels: Sequence[str], effect_pct: np.ndarray, low_pct: np.ndarray, high_pct: np.ndarray,
                     significant: Sequence[bool | None]) -> Plot | None:
    """The observer effect: per test and instrumentation level, how much the median moved
    against the lightest level, in percent, with the interval of the ratio of medians."""
    effect = np.asarray(effect_pct, dtype=np.float64)
    if not np.isfinite(effect).any():
        return None
    n = len(labels)
    fig = new_figure(6.4, max(2.2, 0.9 + 0.24 * n))
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    low, high = np.asarray(low_pct, dtype=np.float64), np.asarray(high_pct, dtype=np.float64)
    sig = np.array([bool(s) for s in significant], dtype=bool)
    for mask, colour in ((sig, SIGNIFICANT_COLOUR), (~sig, FIXED_COLOUR)):
        m = mask & np.isfinite(effect)
        has_ci = m & np.isfinite(low) & np.isfinite(high)
        if has_ci.any():
            err = np.vstack([np.maximum(0.0, effect[has_ci] - low[has_ci]), np.maximum(0.0, high[has_ci] - effect[has_ci])])
            ax.errorbar(effect[has_ci], y[has_ci], xerr=err, fmt="o", color=colour, markersize=4, capsize=3, linewidth=1)
        if (m & ~has_ci).any():
            ax.plot(effect[m & ~has_ci], y[m & ~has_ci], "o", color=colour, markersize=4)
    ax.axvline(0.0, color=NEUTRAL_COLOUR, linestyle="--", linewidth=0.9)
    _named_axis(ax, y, [short_label(s) for s in labels])
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel("effect % (median at the level vs the lightest level)")
    ax.grid(axis="x", alpha=0.3)
    return Plot(
        "fig-observer",
        "Observer effect per instrumentation level",
        "One row per test and level: (median at the level − median at the lightest level) / median at the "
        "lightest level × 100, with the interval of the ratio of medians. Red: significant after the correction.",
        render(fig, "fig-observer"),
    )


@styled
def allocation_of_variation(names: Sequence[str], terms: Sequence[str], shares: np.ndarray) -> Plot | None:
    """Jain's allocation of variation in a 2^k r design: per test, the share of the total
    variation explained by each factor and interaction, and by the error (the replications)."""
    shares = np.nan_to_num(np.asarray(shares, dtype=np.float64), nan=0.0)
    if shares.size == 0 or not shares.any():
        return None
    n = len(names)
    fig = new_figure(7.0, max(2.0, 1.2 + 0.26 * n))
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    left = np.zeros(n)
    colours = iter(TERM_COLOURS * (1 + len(terms) // len(TERM_COLOURS)))
    for j, term in enumerate(terms):
        colour = NEUTRAL_COLOUR if term == "error" else next(colours)
        ax.barh(y, shares[:, j], left=left, height=0.65, color=colour, label=short_label(term, 24))
        left += shares[:, j]
    _named_axis(ax, y, [short_label(s) for s in names])
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlim(0, max(100.0, float(left.max())))
    ax.set_xlabel("share of the total variation (%)")
    legend = ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(len(terms), 4), fontsize=7, frameon=False)
    for text in legend.get_texts():
        text.set_parse_math(False)  # a factor named "$x$" is text
    return Plot(
        "fig-allocation",
        "Allocation of variation",
        "Per test, the share of the variation explained by each factor and interaction (Jain's "
        "sums of squares), and by the error: what the replications do not explain (grey).",
        render(fig, "fig-allocation"),
    )
