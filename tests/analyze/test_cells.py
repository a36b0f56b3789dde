"""The order analysis stratified by treatment cell: a factor's levels (or the measurement
contexts) are blocks of van Elteren's test as workers are, the top-level fields describe the
values with each block's level removed, and each row's cells hold each cell's own arms."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.analyze.cells import treatment_cells
from benchsage.analyze.diagnostics import diagnose
from benchsage.analyze.notes import NoStrata
from benchsage.analyze.order import analyze_table
from benchsage.analyze.pipeline import analyze_loaded
from benchsage.analyze.strata import METHOD, method
from benchsage.report.json import analysis_json
from benchsage.report.words import say, verdict_sentence
from benchsage.stats.median_ci import le_boudec_ranks
from benchsage.store.table import TrialTable

sys.path.insert(0, str(Path(__file__).parent))
from cells_data import LEVELS, factor_table, pooled  # noqa: E402


def van_elteren_by_hand(x: np.ndarray, arm: np.ndarray, block: np.ndarray) -> tuple[float, float]:
    """van Elteren (1960) straight from its definition: each block's random-arm rank sum, ranked
    within the block (average ranks for ties), weighted 1/(n_j + 1), with the tie-corrected
    variance of the Wilcoxon rank sum; chi-square with 1 df."""
    num = var = 0.0
    for b in np.unique(block):
        values, labels = x[block == b], arm[block == b]
        n, m = len(values), int(labels.sum())
        if m in (0, n):
            continue
        ranks = stats.rankdata(values)
        _, ties = np.unique(values, return_counts=True)
        s = ranks[labels == 1].sum() - m * (n + 1) / 2
        v = m * (n - m) * (n**3 - n - float((ties**3 - ties).sum())) / (12 * n * (n - 1))
        num += s / (n + 1)
        var += v / (n + 1) ** 2
    chi2 = num * num / var
    return chi2, float(stats.chi2.sf(chi2, 1))


def median_ci_by_hand(x: np.ndarray, level: float = 0.95) -> tuple[float, float, float] | tuple[float, None, None]:
    """The median and its exact distribution-free interval [x(l), x(n - l + 1)], l the largest
    with P(l <= B <= n - l) >= level for B ~ Binomial(n, 1/2), from scipy's binomial."""
    x = np.sort(x)
    n = len(x)
    l = np.arange(1, n + 1)
    ok = np.flatnonzero(stats.binom.cdf(n - l, n, 0.5) - stats.binom.cdf(l - 1, n, 0.5) >= level)
    if not len(ok):
        return float(np.median(x)), None, None
    k = int(l[ok[-1]])
    return float(np.median(x)), float(x[k - 1]), float(x[n - k])


def rows_of(table: TrialTable, test: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A test's values, arms and cells (by level name)."""
    sel = table.test == table.test_names.index(test)
    names, codes = table.levels(table.dims[0])  # type: ignore[misc]
    return table.value[sel], table.arm[sel].astype(np.int64), np.array(names)[codes[sel]]


# -- the stratified test ---------------------------------------------------------------------------


def test_a_factor_5x_apart_hides_an_order_effect_from_the_pooled_test_not_from_the_stratified_one() -> None:
    table = factor_table(seed=0)
    found = analyze_table(table)
    before = analyze_table(pooled(table))
    row, was = found.tests[0], before.tests[0]
    assert row.test == "t0" and row.significant is True and found.order_matters
    assert was.significant is False and not before.order_matters
    x, arm, cell = rows_of(table, "t0")
    chi2, p = van_elteren_by_hand(x, arm, cell)
    assert row.kw_h == pytest.approx(chi2, rel=1e-9) and row.kw_p == pytest.approx(p, rel=1e-9)
    assert was.kw_p == pytest.approx(stats.kruskal(x[arm == 0], x[arm == 1]).pvalue, rel=1e-9)
    assert row.eta2 == pytest.approx((chi2 - 1) / (len(x) - 2), rel=1e-12)
    # Test t1 has no order effect; both analyses leave it alone.
    assert found.tests[1].significant is False and before.tests[1].significant is False
    assert found.combined is not None and (found.combined.workers, found.combined.cells) == (1, 2)
    assert found.combined.method == method(False, True) and found.combined.method.startswith("stratified by treatment cell: van Elteren")
    assert not found.fleet and before.combined is None


def test_each_cell_holds_its_own_arms_medians_and_intervals() -> None:
    table = factor_table(seed=2, runs_per_arm=15)
    for row in analyze_table(table).tests:
        x, arm, cell = rows_of(table, row.test)
        assert row.cells is not None and [c.cell for c in row.cells] == [(("server", "python"),), (("server", "nginx"),)]
        for c in row.cells:
            level = c.cell[0][1]
            fixed, random = x[(cell == level) & (arm == 0)], x[(cell == level) & (arm == 1)]
            assert (c.n_fixed, c.n_random) == (len(fixed), len(random))
            assert (c.median_fixed, *c.ci_fixed) == median_ci_by_hand(fixed)
            assert (c.median_random, *c.ci_random) == median_ci_by_hand(random)
    # The fixed arm of t0 is 10% slower in each cell, and the cells are 5x apart.
    python, nginx = analyze_table(table).tests[0].cells
    assert nginx.median_random / python.median_random == pytest.approx(5.0, rel=0.1)
    assert python.median_fixed / python.median_random == pytest.approx(1.1, rel=0.05)


def test_the_cells_intervals_follow_the_level_and_method_of_the_analysis() -> None:
    table = factor_table(seed=4, runs_per_arm=24)
    row = analyze_table(table, ci_level=0.9, ci_method="le-boudec").tests[1]
    x, arm, cell = rows_of(table, "t1")
    j, k = (int(r) for r in le_boudec_ranks(12, 0.9))
    assert row.cells is not None and len(row.cells) == 2
    for c in row.cells:
        values = np.sort(x[(cell == c.cell[0][1]) & (arm == 1)])
        assert c.ci_random == (values[j - 1], values[k - 1])


def test_the_top_level_fields_describe_the_values_with_each_cells_level_removed() -> None:
    table = factor_table(seed=3)
    row = analyze_table(table).tests[0]
    x, arm, cell = rows_of(table, "t0")
    level = {c: np.median(x[cell == c]) for c in LEVELS}
    typical = np.median(list(level.values()))
    free = x * typical / np.array([level[c] for c in cell])
    assert row.median_fixed == pytest.approx(np.median(free[arm == 0]), rel=1e-12)
    assert row.median_random == pytest.approx(np.median(free[arm == 1]), rel=1e-12)
    assert row.delta_pct == pytest.approx((free[arm == 0].mean() - free[arm == 1].mean()) / free[arm == 0].mean() * 100, rel=1e-9)
    # The order effect of 10%, not the 5x between the servers.
    assert row.median_fixed / row.median_random == pytest.approx(1.1, abs=0.04)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.floats(0.01, 100.0))
def test_a_cells_scale_changes_neither_the_test_nor_the_other_cells(seed: int, scale: float) -> None:
    """Ranks are taken within cells: multiplying one cell's values changes no p."""
    table = factor_table(seed=seed, runs_per_arm=6)
    names, codes = table.levels("factor:server")  # type: ignore[misc]
    scaled = dataclasses.replace(table, value=np.where(codes == names.index("nginx"), table.value * scale, table.value))
    a, b = analyze_table(table), analyze_table(scaled)
    assert [v.kw_p for v in b.tests] == pytest.approx([v.kw_p for v in a.tests], rel=1e-9)
    for v, w in zip(a.tests, b.tests):
        assert v.cells is not None and w.cells is not None
        assert w.cells[0] == v.cells[0]  # python
        assert w.cells[1].median_fixed == pytest.approx(v.cells[1].median_fixed * scale, rel=1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), effect=st.sampled_from([0.0, 0.1]))
def test_one_cell_is_the_analysis_without_cells(seed: int, effect: float) -> None:
    """A factor with one level: Kruskal-Wallis and pooled values exactly as without it; the row
    holds that one cell."""
    table = factor_table({"only": 1.0}, seed=seed, effect=effect, runs_per_arm=6)
    found, before = analyze_table(table), analyze_table(pooled(table))
    assert found.combined is None
    assert [dataclasses.replace(v, cells=None) for v in found.tests] == list(before.tests)
    assert all(v.cells is not None and [c.cell for c in v.cells] == [(("server", "only"),)] for v in found.tests)
    assert all(v.cells[0].median_fixed == v.median_fixed and v.cells[0].ci_random == v.ci_random for v in found.tests)  # type: ignore[index]


def test_a_table_without_treatments_has_no_cells() -> None:
    table = pooled(factor_table(seed=1))
    assert treatment_cells(table) is None
    assert all(v.cells is None for v in analyze_table(table).tests)
    assert "cells" not in analysis_json(analyze_table(table))["tests"][0]


# -- which dimensions make cells -------------------------------------------------------------------


def test_contexts_are_cells_and_their_own_settings_do_not_split_them() -> None:
    """The context's env_bytes (one per context), the observer level and a sweep's level are
    not cells: the rows are stratified by context alone."""
    table = factor_table({"c1": 1.0, "c2": 5.0}, dimension="context", seed=5, extra={
        "context:env_bytes": lambda c: {"c1": "120", "c2": "3900"}[c],
        "observer": lambda c: "none",
        "sweep:conns": lambda c: "8",
    })
    cells = treatment_cells(table)
    assert cells is not None and cells.cells == ((("context", "c1"),), (("context", "c2"),))
    found = analyze_table(table)
    x, arm, cell = rows_of(table, "t0")
    assert found.tests[0].kw_p == pytest.approx(van_elteren_by_hand(x, arm, cell)[1], rel=1e-9)
    assert found.combined is not None and found.combined.cells == 2


def test_factors_and_context_cross_into_cells_in_dimension_order() -> None:
    table = factor_table({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}, seed=6, runs_per_arm=16, extra={
        "context": lambda c: "c1" if c in "ab" else "c2",
        "factor:smt": lambda c: "on" if c in "ac" else "off",
    })
    table = dataclasses.replace(table, dims=table.dims[1:], dim_levels=table.dim_levels[1:], treatment=table.treatment[:, 1:])
    cells = treatment_cells(table)
    assert cells is not None and cells.cells == (
        (("context", "c1"), ("smt", "on")), (("context", "c1"), ("smt", "off")),
        (("context", "c2"), ("smt", "on")), (("context", "c2"), ("smt", "off")),
    )
    row = analyze_table(table).tests[0]
    assert row.cells is not None and len(row.cells) == 4 and all((c.n_fixed, c.n_random) == (4, 4) for c in row.cells)


def test_rows_that_do_not_know_their_level_form_a_cell_of_their_own() -> None:
    base = factor_table(seed=7)
    names, codes = base.levels("factor:server")  # type: ignore[misc]
    levels = [None if (i % 7 == 0) else names[c] for i, c in enumerate(codes.tolist())]
    table = TrialTable.from_columns(test=np.array(base.test_names)[base.test], arm=base.arm, value=base.value,
                                    treatments={"factor:server": levels})
    row = analyze_table(table).tests[0]
    assert row.cells is not None and [c.cell for c in row.cells] == [(), (("server", "python"),), (("server", "nginx"),)]
    assert analysis_json(analyze_table(table))["tests"][0]["cells"][0]["cell"] == {}
    x, arm = table.value[table.test == 0], table.arm[table.test == 0].astype(np.int64)
    block = np.array(["?" if lv is None else lv for lv in levels])[table.test == 0]
    assert row.kw_p == pytest.approx(van_elteren_by_hand(x, arm, block)[1], rel=1e-9)


def test_cells_without_both_arms_say_why_there_is_no_test() -> None:
    """Each cell ran one arm only: nothing to compare within a cell."""
    table = TrialTable.from_columns(test=["t"] * 12, arm=["fixed"] * 6 + ["random"] * 6, value=np.arange(12.0),
                                    treatments={"factor:server": ["python"] * 6 + ["nginx"] * 6})
    row = analyze_table(table).tests[0]
    assert row.kw_p is None and NoStrata(workers=False, cells=True) in row.notes
    assert [(c.n_fixed, c.n_random, c.median_random, c.ci_random) for c in row.cells or ()] == [(6, 0, None, None), (0, 6, 8.5, (6.0, 11.0))]
    assert say(NoStrata(workers=False, cells=True)).startswith("no treatment cell has values in both arms")


# -- a fleet with cells, and what is not a fleet ---------------------------------------------------


def test_a_fleet_with_cells_has_a_block_per_worker_and_cell_and_cells_pooled_over_workers() -> None:
    fleet = factor_table(seed=8, workers=("node1", "node2"))
    # node2 is 3x slower than node1
    fleet = dataclasses.replace(fleet, value=np.where(fleet.worker == fleet.worker_names.index("node2"), 3 * fleet.value, fleet.value))
    found = analyze_loaded(fleet)
    assert found.combined is not None and (found.combined.workers, found.combined.cells) == (2, 2) and found.fleet
    assert found.combined.method == method(True, True) and found.combined.method.startswith("stratified by worker and treatment cell")
    assert "van Elteren's test stratified by 2 workers and 2 treatment cells" in verdict_sentence(found)
    x, arm, cell = rows_of(fleet, "t0")
    worker = fleet.worker[fleet.test == 0]
    block = np.char.add(cell.astype(str), worker.astype(str))
    assert found.tests[0].kw_p == pytest.approx(van_elteren_by_hand(x, arm, block)[1], rel=1e-9)
    python = found.tests[0].cells[0]  # type: ignore[index]
    assert (python.n_fixed, python.n_random) == (12, 12)
    assert python.median_fixed == np.median(x[(cell == "python") & (arm == 0)])
    assert [w.worker for w in found.workers] == ["node1", "node2"]
    assert all(v.cells is not None and v.cells[0].n_fixed == 6 for w in found.workers for v in w.tests)
    doc = analysis_json(found)
    assert doc["combined"]["workers"] == 2 and doc["combined"]["cells"] == 2 and len(doc["workers"]) == 2


def test_one_worker_with_cells_is_not_a_fleet() -> None:
    found = analyze_loaded(factor_table(seed=9))
    assert not found.fleet and found.workers == ()
    assert found.diagnostics is not None and found.diagnostics.fleet is None and found.diagnostics.identity is None
    doc = analysis_json(found)
    assert "workers" not in doc and doc["combined"] == {"workers": 1, "cells": 2, "method": method(False, True)}
    assert "(van Elteren's test stratified by 2 treatment cells, Bonferroni family-wise α = 0.05" in verdict_sentence(found)
    assert "cells" in doc["tests"][0] and set(doc["tests"][0]["cells"][0]) == {
        "cell", "n_fixed", "n_random", "median_fixed", "median_random", "ci_fixed", "ci_random"}
    assert doc["tests"][0]["cells"][0]["cell"] == {"server": "python"}


def test_a_fleet_without_cells_is_described_as_before() -> None:
    assert METHOD == method(True, False)
    found = analyze_table(factor_table({"only": 1.0}, seed=10, workers=("a", "b")))
    assert found.combined is not None and (found.combined.workers, found.combined.cells, found.combined.method) == (2, 1, METHOD)


# -- diagnostics ----------------------------------------------------------------------------------


def test_a_slower_cell_later_in_time_is_not_a_trend_nor_a_position_effect() -> None:
    """The factor changed half-way through (python first, nginx 5x slower after): pooled, every
    test trends over time; with each cell's level removed, nothing does."""
    table = factor_table(seed=11, late=True, effect=0.0, tests=3)
    before = diagnose(pooled(table))
    assert before is not None and any(t.significant for t in before.trends)
    d = analyze_loaded(table).diagnostics
    assert d is not None and d.trends and not any(t.significant for t in d.trends)
    assert not any(p.significant for p in d.position_effects) and not any(c.significant for c in d.carryover)
    assert d.interleaving == before.interleaving


def test_the_python_api_gives_a_row_per_test_metric_and_cell() -> None:
    from benchsage.api import Result

    table = factor_table(seed=12, extra={"context": lambda c: "c1"})
    result = Result(analyze_loaded(table), table)
    frame = result.cells
    assert list(frame.columns) == ["test", "metric", "server", "context", "n_fixed", "n_random", "median_fixed", "ci_fixed_low",
                                   "ci_fixed_high", "median_random", "ci_random_low", "ci_random_high"]
    assert frame[["test", "server", "context"]].values.tolist() == [
        ["t0", "python", "c1"], ["t0", "nginx", "c1"], ["t1", "python", "c1"], ["t1", "nginx", "c1"]]
    first = result.analysis.tests[0].cells[0]  # type: ignore[index]
    assert frame.iloc[0]["median_fixed"] == first.median_fixed and frame.iloc[0]["ci_fixed_high"] == first.ci_fixed[1]  # type: ignore[index]
    assert "cells" not in result.tests.columns and result.combined == {"workers": 1, "cells": 2, "method": method(False, True)}
    assert Result(analyze_loaded(pooled(table)), pooled(table)).cells.empty
