"""The report's figures: inline SVG that is well-formed, deterministic, self-contained, with
ids that cannot collide across figures, test names kept as literal text, and point clouds
rasterised when they are large."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.analyze.summary import summarize
from benchsage.analyze.verdict import TestVerdict
from benchsage.report import plots

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def texts(svg: str) -> list[str]:
    return ["".join(el.itertext()) for el in parse(svg).iter(f"{SVG}text")]


def axes_count(plot: plots.Plot) -> int:
    return len(re.findall(rf'id="{re.escape(plot.key)}-axes_\d+"', plot.svg))


@pytest.fixture(scope="module")
def verdicts(small_analysis) -> tuple[TestVerdict, ...]:  # type: ignore[no-untyped-def]
    return small_analysis.tests


@pytest.fixture(scope="module")
def pvalues(small_analysis) -> plots.Plot:  # type: ignore[no-untyped-def]
    plot = plots.pvalues_sorted(small_analysis.tests, small_analysis.alpha, small_analysis.alpha_corrected)
    assert plot is not None
    return plot


def many(v: TestVerdict, n: int) -> list[TestVerdict]:
    """n distinct verdicts shaped like v, with spread-out p-values, effects and cases."""
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        p = float(10 ** -rng.uniform(0, 8))
        out.append(dataclasses.replace(
            v, test=f"./t{i}.sh", kw_p=p, p_adjusted=min(1.0, p * n), significant=p * n < 0.05,
            eta2=float(rng.uniform(-0.01, 0.5)), delta_pct=float(rng.normal(0, 3)),
            median_random=v.median_fixed * (1 + rng.normal(0, 0.02)), ci_case=int(rng.integers(1, 4)),
        ))
    return out


def test_figure_is_inline_svg_without_prolog_or_metadata(pvalues: plots.Plot) -> None:
    svg = pvalues.svg
    assert svg.startswith('<svg class="plot" role="img" ')
    assert svg.endswith("</svg>")
    for absent in ("<?xml", "<!DOCTYPE", "<metadata", "<dc:date", "<script"):
        assert absent not in svg
    root = parse(svg)  # well-formed XML, so it inlines into HTML unchanged
    assert root.tag == f"{SVG}svg"


def test_ids_are_scoped_to_the_figure_and_every_reference_resolves(pvalues: plots.Plot) -> None:
    ids = re.findall(r'\bid="([^"]*)"', pvalues.svg)
    assert ids and all(i.startswith("fig-pvalues-") for i in ids)
    assert len(ids) == len(set(ids))
    refs = re.findall(r'(?:href="#|url\(#)([^")]*)', pvalues.svg)
    assert refs, "matplotlib's clip paths and markers are referenced by id"
    assert set(refs) <= set(ids)


def test_figures_share_no_ids(small_analysis) -> None:  # type: ignore[no-untyped-def]
    a = plots.eta2_sorted(small_analysis.tests)
    b = plots.delta_sorted(small_analysis.tests)
    assert a is not None and b is not None
    ids_a = set(re.findall(r'\bid="([^"]*)"', a.svg))
    ids_b = set(re.findall(r'\bid="([^"]*)"', b.svg))
    assert ids_a and ids_b and not ids_a & ids_b


def test_rendering_is_deterministic(small_analysis, pvalues: plots.Plot) -> None:  # type: ignore[no-untyped-def]
    again = plots.pvalues_sorted(small_analysis.tests, small_analysis.alpha, small_analysis.alpha_corrected)
    assert again == pvalues


def test_test_names_stay_literal_text(make_table, analyze) -> None:  # type: ignore[no-untyped-def]
    names = ['<img src=x onerror="alert(1)">', "cost $x^2$ \\frac{1}{0}", "a & b </text> --> <!--", "tab\there"]
    analysis = analyze(make_table(len(names), 6, seed=1, names=names))
    for plot in (
        plots.pvalues_sorted(analysis.tests, 0.05, 0.0125),
        plots.delta_sorted(analysis.tests),
        plots.median_cis(analysis.tests),
    ):
        assert plot is not None
        shown = texts(plot.svg)
        # Escaped by matplotlib's XML writer, not interpreted as mathtext, not markup.
        for name in names[:3]:
            assert name in shown, (name, plot.key)
        assert "tab here" in shown  # control characters become spaces in labels
        assert "<img" not in plot.svg
        elements = list(parse(plot.svg).iter())
        assert not [el for el in elements if el.tag.endswith("img") or any(a.startswith("on") for a in el.attrib)]


def test_long_names_are_shortened_in_labels() -> None:
    label = plots.short_label("x" * 200)
    assert len(label) == plots.LABEL_CHARS and label.endswith("…")


def test_many_tests_are_ranked_not_named_and_rasterised(verdicts) -> None:  # type: ignore[no-untyped-def]
    vs = many(verdicts[0], 1000)
    for plot in (plots.pvalues_sorted(vs, 0.05, 0.05 / 1000), plots.eta2_sorted(vs), plots.delta_sorted(vs), plots.median_cis(vs)):
        assert plot is not None
        assert "./t1.sh" not in plot.svg
        assert any("1,000" in t or "1000" in t for t in texts(plot.svg))
        assert "data:image/png;base64," in plot.svg  # the point cloud is one embedded image
        assert len(plot.svg) < 250_000, (plot.key, len(plot.svg))


def test_p_values_without_a_value_are_left_out(verdicts) -> None:  # type: ignore[no-untyped-def]
    blank = [dataclasses.replace(v, kw_p=None, p_adjusted=None, significant=None, eta2=None, delta_pct=None) for v in verdicts]
    assert plots.pvalues_sorted(blank, 0.05, None) is None
    assert plots.eta2_sorted(blank) is None
    assert plots.delta_sorted(blank) is None
    mixed = plots.pvalues_sorted(blank[:3] + list(verdicts[3:]), 0.05, 0.005)
    assert mixed is not None
    shown = texts(mixed.svg)
    assert verdicts[0].test not in shown and verdicts[3].test in shown


def test_p_value_zero_stays_on_the_log_axis(verdicts) -> None:  # type: ignore[no-untyped-def]
    vs = [dataclasses.replace(verdicts[0], kw_p=0.0)] + list(verdicts[1:])
    assert plots.pvalues_sorted(vs, 0.05, 0.005) is not None


def test_ci_case_counts(verdicts) -> None:  # type: ignore[no-untyped-def]
    cases = [1, 1, 2, 3, 3, 3, None]
    vs = [dataclasses.replace(verdicts[i], ci_case=c) for i, c in enumerate(cases)]
    plot = plots.ci_case_counts(summarize(vs).ci_cases)
    assert plot is not None
    shown = texts(plot.svg)
    # The bars' annotations come last, in the order case 1, 2, 3, no CI.
    assert [t for t in shown if t.isdigit()][-4:] == ["2", "1", "3", "1"]
    assert any("no CI" in t for t in shown)
    without_none = plots.ci_case_counts(summarize(vs[:-1]).ci_cases)
    assert without_none is not None and not any("no CI" in t for t in texts(without_none.svg))


def test_median_cis_are_panels_for_few_tests_and_one_strip_for_many(verdicts) -> None:  # type: ignore[no-untyped-def]
    few = plots.median_cis(verdicts)
    assert few is not None and axes_count(few) == len(verdicts)
    assert verdicts[0].test in texts(few.svg)
    lots = plots.median_cis(many(verdicts[0], plots.CI_PANELS_MAX + 1))
    assert lots is not None and axes_count(lots) == 1
    assert any("% of the fixed median" in t for t in texts(lots.svg))


def test_detail_has_one_panel_per_kind_of_data(small_table, verdicts) -> None:  # type: ignore[no-untyped-def]
    v = verdicts[0]
    rows = np.flatnonzero(small_table.test == small_table.test_names.index(v.test))
    value, arm = small_table.value[rows], small_table.arm[rows]
    full = plots.test_detail(v, "fig-d-0", value, arm, small_table.position[rows], small_table.time[rows])
    assert axes_count(full) == 3
    shown = texts(full.svg)
    assert "wall_time (s), lower is better" in shown
    assert "position in run (0 = first)" in shown
    assert "trial start, time since the first trial (minutes)" in shown
    assert shown.count("(n=15)") == 2  # both arms, 15 runs each
    assert "data:image/png" not in full.svg  # 30 points stay vector
    bare = plots.test_detail(v, "fig-d-1", value, arm)
    assert axes_count(bare) == 1


def test_detail_of_a_large_test_is_rasterised_and_small(make_table, analyze) -> None:  # type: ignore[no-untyped-def]
    table = make_table(3, 400, seed=2)
    analysis = analyze(table)
    rows = np.flatnonzero(table.test == 0)
    plot = plots.test_detail(analysis.tests[0], "fig-d-0", table.value[rows], table.arm[rows], table.position[rows], table.time[rows])
    assert plot.svg.count("data:image/png;base64,") == 3
    assert len(plot.svg) < 150_000


def test_run_timeline(small_table) -> None:  # type: ignore[no-untyped-def]
    assert plots.run_timeline(np.zeros(0), np.zeros(0, dtype=np.int8)) is None
    assert plots.run_timeline(np.array([1.0, np.nan]), np.array([0, 1], dtype=np.int8)) is None
    plot = plots.run_timeline(np.array([0.0, 100.0, 200.0, 7300.0]), np.array([0, 1, 1, 0], dtype=np.int8))
    assert plot is not None
    assert "run start, time since the first run (hours)" in texts(plot.svg)


def test_axis_labels_say_unit_and_direction() -> None:
    assert plots.axis_label("throughput", "ops/s", "higher") == "throughput (ops/s), higher is better"
    assert plots.axis_label("result", "", "") == "result"
    assert plots.short_axis_label("wall_time", "s", "lower") == "s, ↓ better"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 60), st.floats(-1e6, 1e6, allow_nan=False)), min_size=1, max_size=200),
)
def test_binned_median_is_the_median_of_each_group(pairs: list[tuple[int, float]]) -> None:
    x = np.array([p for p, _ in pairs])
    y = np.array([v for _, v in pairs])
    cx, cy = plots._binned_median(x, y, bins=20)
    uniq = np.unique(x)
    if len(uniq) <= 20:
        assert np.array_equal(cx, uniq)
        assert np.allclose(cy, [np.median(y[x == u]) for u in uniq])
    else:
        edges = np.linspace(uniq[0], uniq[-1], 21)
        assert len(cx) == len(cy) <= 20
        assert np.all(np.diff(cx) > 0) and cx[0] >= edges[0] and cx[-1] <= edges[-1]
        assert np.all((cy >= y.min()) & (cy <= y.max()))


# -- treatments ---------------------------------------------------------------------------------


def context_panel(n: int, x: np.ndarray | None = None, **kw) -> plots.ContextPanel:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(n)
    y = rng.uniform(0.9, 1.1, n)
    return plots.ContextPanel(title=kw.pop("title", "o3 / o2 (wall_time)"), ylabel="ratio", labels=[f"link order {i}" for i in range(n)],
                              y=y, low=y - 0.02, high=y + 0.02, colours=[plots.A_BETTER_COLOUR] * n, x=x, **kw)


def test_per_context_places_contexts_by_size_or_names_them() -> None:
    by_size = plots.per_context("fig-c", "t", "", [context_panel(6, x=np.array([0.0, 512, 1024, 2048, 3000, 4096]), xlabel="env_bytes",
                                                                  reference=1.0)])
    assert by_size is not None and "env_bytes" in texts(by_size.svg)
    assert not any(t.startswith("link order") for t in texts(by_size.svg))
    named = plots.per_context("fig-c", "t", "", [context_panel(6)])
    assert named is not None and "link order 5" in texts(named.svg)
    many = plots.per_context("fig-c", "t", "", [context_panel(plots.CONTEXT_LABELS_MAX + 1)])
    assert many is not None and not any(t.startswith("link order") for t in texts(many.svg))
    assert f"context (numbered, {plots.CONTEXT_LABELS_MAX + 1})" in texts(many.svg)


def test_per_context_has_a_panel_per_claim_or_test_and_skips_empty_ones() -> None:
    empty = dataclasses.replace(context_panel(3), y=np.full(3, np.nan))
    assert plots.per_context("fig-c", "t", "", [empty]) is None
    plot = plots.per_context("fig-c", "t", "", [context_panel(3), empty, context_panel(4, title="$x$ <b>")])
    assert plot is not None and axes_count(plot) == 2
    assert "$x$ <b>" in texts(plot.svg)  # literal text: no mathtext, no markup
    parse(plot.svg)


def test_observer_effects_one_row_per_test_and_level() -> None:
    labels = ["o3 [strace]", "o3 [perf]", "o2 [strace]"]
    effect = np.array([35.0, 2.0, np.nan])
    plot = plots.observer_effects(labels, effect, effect - 1, effect + 1, [True, False, None])
    assert plot is not None and {"o3 [strace]", "o3 [perf]", "o2 [strace]"} <= set(texts(plot.svg))
    assert plots.observer_effects(labels[2:], effect[2:], effect[2:], effect[2:], [None]) is None


def test_allocation_of_variation_stacks_the_terms_and_the_error() -> None:
    terms = ["$smt$", "governor", "$smt$:governor", "error"]
    shares = np.array([[70.0, 20.0, 1.0, 9.0], [10.0, 5.0, np.nan, 85.0]])
    plot = plots.allocation_of_variation(["o3", "o2"], terms, shares)
    assert plot is not None
    shown = texts(plot.svg)
    assert set(terms) <= set(shown) and {"o3", "o2"} <= set(shown)
    grey = len(re.findall(r"fill: #8c8c8c", plot.svg))
    assert grey >= 2  # the error of each test
    assert plots.allocation_of_variation(["o3"], terms, np.zeros((1, 4))) is None
