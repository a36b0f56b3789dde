"""Readable log axes (report/logticks.py), checked on the figures as matplotlib draws them: no two
tick labels' boxes overlap, at least two and at most a handful are labelled, plain numbers on a
short span and powers of ten on a long one."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.axis import Axis, XAxis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from benchsage.analyze.verdict import TestVerdict
from benchsage.report import curveplots, logticks, plots

POWER = re.compile(r"^10[⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+$")
PLAIN = re.compile(r"^[0-9][0-9,]*(\.[0-9]+)?$")


def labelled(fig: Figure, axis: Axis) -> list[tuple[str, object]]:
    """(text, rendered box) of each shown tick label of `axis`, drawn as the report draws it."""
    canvas = FigureCanvasAgg(fig)
    with plots.style():
        canvas.draw()
        renderer = canvas.get_renderer()
        shown = [t for t in axis.get_majorticklabels() + axis.get_minorticklabels() if t.get_visible() and t.get_text()]
        lo, hi = sorted(axis.get_view_interval())
        at = 0 if isinstance(axis, XAxis) else 1
        inside = [t for t in shown if lo * (1 - 1e-9) <= t.get_position()[at] <= hi * (1 + 1e-9)]
        return [(t.get_text(), t.get_window_extent(renderer)) for t in inside]


def assert_readable(fig: Figure, axis: Axis) -> list[str]:
    """No two labels overlap, 2 to MOST_LABELS of them; returns their texts."""
    labels = labelled(fig, axis)
    texts = [t for t, _ in labels]
    assert 2 <= len(labels) <= logticks.MOST_LABELS, texts
    boxes = [b for _, b in labels]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (texts, a, b)
    return texts


def verdicts_with(template: TestVerdict, ps: list[float]) -> list[TestVerdict]:
    return [dataclasses.replace(template, test=f"./t{i}.sh", kw_p=p, p_adjusted=min(1.0, p * len(ps)),
                                significant=p * len(ps) < 0.05) for i, p in enumerate(ps)]


@pytest.fixture(scope="module")
def verdict(small_analysis) -> TestVerdict:  # type: ignore[no-untyped-def]
    return small_analysis.tests[0]


def pvalue_axis(verdict: TestVerdict, ps: list[float], alpha_corrected: float | None = None) -> tuple[Figure, Axis]:
    vs = verdicts_with(verdict, ps)
    with plots.style():
        fig = plots.pvalues_figure(vs, 0.05, 0.05 / len(ps) if alpha_corrected is None else alpha_corrected)
    assert fig is not None
    (ax,) = fig.axes
    return fig, ax.xaxis if len(ps) <= plots.NAMED_TESTS_MAX else ax.yaxis


def test_p_values_between_002_and_008_get_plain_labels_that_do_not_overlap(verdict: TestVerdict) -> None:
    # The figure that printed "3×10⁻²4×10⁻²6×10⁻²": its labels now read 0.01, 0.02, ...
    fig, axis = pvalue_axis(verdict, [0.021, 0.034, 0.047, 0.063, 0.079])
    texts = assert_readable(fig, axis)
    assert all(PLAIN.match(t) for t in texts), texts
    assert "0.05" in texts or "0.04" in texts
    # The alpha lines are in view: the points are read against them.
    lo, hi = sorted(axis.get_view_interval())
    assert lo < 0.01 and hi > 0.079


def test_p_values_between_002_and_008_without_the_corrected_line(verdict: TestVerdict) -> None:
    fig, axis = pvalue_axis(verdict, [0.02, 0.03, 0.05, 0.08], alpha_corrected=0.05)
    texts = assert_readable(fig, axis)
    assert all(PLAIN.match(t) for t in texts), texts


@pytest.mark.parametrize("ps", [
    [1e-300, 1e-200, 0.5, 0.9],  # p underflowing to 0 is drawn at 1e-300
    [1e-12, 3e-7, 0.004, 0.9, 1.0],
    [1e-5, 1e-3, 0.2],
], ids=["underflow", "twelve-decades", "five-decades"])
def test_wide_p_value_ranges_get_powers_of_ten(verdict: TestVerdict, ps: list[float]) -> None:
    fig, axis = pvalue_axis(verdict, ps)
    texts = assert_readable(fig, axis)
    assert all(POWER.match(t) for t in texts), texts


@pytest.mark.parametrize("ps", [[0.3], [1.0], [0.004], [0.9, 0.95, 0.97, 0.99, 1.0], [0.51, 0.52]],
                         ids=["single", "one-at-1", "single-small", "near-1", "two-close"])
def test_a_single_value_and_values_near_1(verdict: TestVerdict, ps: list[float]) -> None:
    fig, axis = pvalue_axis(verdict, ps)
    assert_readable(fig, axis)


def test_many_tests_put_p_on_a_readable_vertical_log_axis(verdict: TestVerdict) -> None:
    rng = np.random.default_rng(1)
    for ps in (list(rng.uniform(0.02, 0.08, 300)), list(10 ** -rng.uniform(0, 30, 300))):
        fig, axis = pvalue_axis(verdict, ps)
        assert_readable(fig, axis)


def curve_axis(levels: list[float]) -> tuple[Figure, Axis]:
    n = len(levels)
    line = curveplots.CurveLine("a", np.linspace(1, 2, n), np.linspace(0.9, 1.9, n), np.linspace(1.1, 2.1, n))
    panels = [curveplots.CurvePanel(m, "s", "lower", levels, [line]) for m in ("p99", "rps", "p50", "cpu")]
    with plots.style():
        fig = curveplots.curves_figure("conns", panels)
    assert fig is not None
    return fig, fig.axes[0].xaxis


@pytest.mark.parametrize("levels", [
    [2, 8, 32],
    [2**k for k in range(16)],
    [10**k for k in range(8)],
    [1_000_000 * 2**k for k in range(10)],
], ids=["three", "sixteen", "eight-decades", "long-labels"])
def test_sweep_levels_on_a_log_axis_are_labelled_where_they_fit(levels: list[float]) -> None:
    fig, axis = curve_axis(levels)
    assert axis.get_scale() == "log"
    texts = assert_readable(fig, axis)
    assert set(texts) <= {str(v) for v in levels}
    assert texts[0] == str(levels[0])  # the first level is always named
    # Every level keeps its tick, named or not.
    assert len(axis.get_majorticklocs()) == len(levels)


@settings(max_examples=25, deadline=None)
@given(low=st.floats(-40, 6), decades=st.floats(0.01, 40), width=st.floats(1.5, 8), vertical=st.booleans())
def test_any_range_on_any_axis_is_readable(low: float, decades: float, width: float, vertical: bool) -> None:
    with plots.style():
        fig = Figure(figsize=(width, width))
        ax = fig.add_subplot()
        values = [10**low, 10 ** (low + decades)]
        ax.plot(values if not vertical else [0, 1], [0, 1] if not vertical else values, "o")
        axis = ax.yaxis if vertical else ax.xaxis
        (ax.set_yscale if vertical else ax.set_xscale)("log")
        logticks.log_axis(axis)
    texts = assert_readable(fig, axis)
    lo, hi = sorted(axis.get_view_interval())
    if math.log10(hi / lo) >= logticks.PLAIN_DECADES:
        assert all(POWER.match(t) for t in texts), texts


def test_labels_are_written_by_hand() -> None:
    assert [logticks.plain(x) for x in (0.03, 0.00025, 250.0, 20_000.0, 3e-5, 1e-7, 2.5e7)] == [
        "0.03", "0.00025", "250", "20,000", "3×10⁻⁵", "10⁻⁷", "2.5×10⁷"]
    assert logticks.label(1e-5, 3.0) == "10⁻⁵" and logticks.label(0.03, 1.0) == "0.03" and logticks.label(1.0, 5) == "10⁰"
    assert logticks.log_ticks(0.02, 0.08, lambda ticks, texts: True) == [0.02, 0.03, 0.04, 0.05, 0.06, 0.08]
    assert logticks.log_ticks(1e-9, 1.0, lambda ticks, texts: True) == [1e-8, 1e-6, 1e-4, 1e-2, 1.0]
