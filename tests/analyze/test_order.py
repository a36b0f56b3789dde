"""analyze_table: the paper's artifact numbers, scipy on random tables, nulls, families, properties."""

from __future__ import annotations

import csv
import os
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.analyze.notes import AllEqual, EmptyArm, NonFinite, NoValues, OnTest, TooFewForCI, TooFewToTest
from benchsage.analyze.order import analyze_table
from benchsage.store.table import MetricInfo, TrialTable
from benchsage.report.json import analysis_json

ARTIFACT = Path(os.environ.get("BENCHSAGE_TEST_ARTIFACT") or "/nonexistent")  # the OrderSage artifact data; .ci/run sets it


def _artifact_table(folder: str, name: str, column: str) -> TrialTable:
    """A few lines of csv reading (deliberately not the OrderSage importer)."""
    with open(ARTIFACT / folder / name, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["completion_status"] == "Success"]
    return TrialTable.from_columns(
        test=[r[column] for r in rows],
        arm=[r["order_type"] for r in rows],
        value=[float(r["result"]) for r in rows],
        metric=["result"] * len(rows),
        run=[int(r["run_num"]) for r in rows],
        position=[int(r["order_number"]) for r in rows],
        time=[float(r["time_start"]) for r in rows],
        sources=(str(ARTIFACT / folder / name),),
    )


def _node_stats(folder: str, column: str) -> dict[str, dict[str, str]]:
    with open(ARTIFACT / folder / "node_stats.csv", newline="") as f:
        return {r[column]: r for r in csv.DictReader(f)}


def _close_to_printed(value: float, printed: str) -> None:
    """Equal to 1e-9 relative, or to half a unit of the last digit node_stats.csv printed."""
    d = Decimal(printed)
    half_unit = 0.5 * 10.0 ** d.as_tuple().exponent
    assert value == pytest.approx(float(d), rel=1e-9, abs=half_unit)


@pytest.mark.parametrize(
    "folder, name, column",
    [
        ("memcached-table3", "all_exp_results.csv", "exp_command"),
        ("npbench-table4", "all_test_results.csv", "test_command"),
    ],
)
@pytest.mark.artifact
def test_kruskal_and_delta_match_ordersage(folder, name, column):
    analysis = analyze_table(_artifact_table(folder, name, column))
    expected = _node_stats(folder, column)
    assert {v.test for v in analysis.tests} == set(expected)
    for v in analysis.tests:
        row = expected[v.test]
        _close_to_printed(v.kw_h, row["KW_test_stat"])
        _close_to_printed(v.kw_p, row["KW_p-value"])
        _close_to_printed(v.delta_pct, row["percent_diff"])
        # OrderSage's effect size is H / (n - 1); benchsage reports eta²_H = (H - 1) / (n - 2).
        n = v.n_fixed + v.n_random
        _close_to_printed(v.kw_h / (n - 1), row["KW_effect_size"])
        assert v.eta2 == pytest.approx((v.kw_h - 1) / (n - 2), rel=1e-12)


@pytest.mark.artifact
def test_memcached_is_paper_table3():
    table = _artifact_table("memcached-table3", "all_exp_results.csv", "exp_command")
    analysis = analyze_table(table)
    assert [v.test for v in analysis.tests] == ["./cmd_set_test.sh", "./cmd_get_test.sh", "./get_hits_test.sh"]
    assert analysis.alpha_corrected == pytest.approx(0.05 / 3)
    assert analysis.order_matters is True
    by = {v.test: v for v in analysis.tests}
    hits = by["./get_hits_test.sh"]
    assert hits.significant is True and hits.kw_p < 0.05 / 3
    assert hits.p_adjusted == pytest.approx(3 * hits.kw_p)
    assert hits.ci_case == 3  # paper Table 3, with 95% exact-binomial CIs
    assert hits.ci_fixed == pytest.approx((68758.2368923716, 73462.1503290293))
    assert hits.ci_random == pytest.approx((65817.7431428186, 68776.8853470756))
    assert hits.median_fixed == pytest.approx(70154.6129, rel=1e-9)
    assert (hits.n_fixed, hits.n_random) == (50, 50)
    assert by["./cmd_set_test.sh"].significant is False and by["./cmd_set_test.sh"].ci_case == 2
    assert by["./cmd_get_test.sh"].significant is False and by["./cmd_get_test.sh"].ci_case == 2
    assert analysis.significant_tests == (hits,)
    assert analysis.sources == table.sources and analysis.warnings == ()
    # Per-arm CVs, population std over mean (node_stats.csv here has only a CV over both arms).
    assert hits.cv_fixed == pytest.approx(0.0657, abs=1e-4) and hits.cv_random == pytest.approx(0.0484, abs=1e-4)


@pytest.mark.artifact
def test_npbench_softmax_is_not_significant_at_the_corrected_alpha():
    analysis = analyze_table(_artifact_table("npbench-table4", "all_test_results.csv", "test_command"))
    by = {v.test: v for v in analysis.tests}
    softmax = by["./npBench-softmax.sh"]
    assert softmax.kw_p == pytest.approx(0.02916428, rel=1e-6)
    assert softmax.kw_p < 0.05 and softmax.significant is False  # 0.029 > 0.05 / 3
    assert analysis.order_matters is False
    assert all(v.significant is False for v in analysis.tests)
    assert (softmax.n_fixed, softmax.n_random) == (100, 100)
    # Holm does not change that: the smallest p faces the same alpha / 3.
    assert analyze_table(_artifact_table("npbench-table4", "all_test_results.csv", "test_command"), correction="holm").order_matters is False


def _random_table(rng: np.random.Generator, n_tests: int, *, ties: bool = False, metrics: int = 1) -> TrialTable:
    tests, arms, values, mets = [], [], [], []
    for t in range(n_tests):
        shift = rng.normal(0, 0.5)
        for m in range(metrics):
            for arm, loc in (("fixed", 10.0), ("random", 10.0 + shift)):
                k = int(rng.integers(6, 40))
                x = rng.normal(loc, 1.0, k)
                values.extend(np.round(x) if ties else x)
                tests.extend([f"test-{t}"] * k)
                arms.extend([arm] * k)
                mets.extend([f"m{m}"] * k)
    return TrialTable.from_columns(test=tests, arm=arms, value=values, metric=mets)


def test_agrees_with_scipy_on_random_tables():
    rng = np.random.default_rng(21)
    for ties in (False, True):
        table = _random_table(rng, 25, ties=ties, metrics=2)
        analysis = analyze_table(table)
        assert len(analysis.tests) == 50
        for v in analysis.tests:
            t = table.test_names.index(v.test)
            m = table.metric_names.index(v.metric)
            rows = (table.test == t) & (table.metric == m)
            f = table.value[rows & (table.arm == 0)]
            r = table.value[rows & (table.arm == 1)]
            ref = stats.kruskal(f, r)
            assert v.kw_h == pytest.approx(ref.statistic, rel=1e-9, abs=1e-11)
            if ref.statistic > 1e-8:
                assert v.kw_p == pytest.approx(ref.pvalue, rel=1e-9)
            assert v.p_adjusted == pytest.approx(min(1.0, ref.pvalue * 50), rel=1e-6)
            assert v.significant == (v.p_adjusted <= 0.05)
            assert v.eta2 == pytest.approx((v.kw_h - 1) / (len(f) + len(r) - 2), rel=1e-12, abs=1e-15)
            assert v.delta_pct == pytest.approx((f.mean() - r.mean()) / f.mean() * 100, rel=1e-9)
            assert v.median_fixed == np.median(f) and v.median_random == np.median(r)
            assert v.cv_fixed == pytest.approx(stats.variation(f), rel=1e-9)
            assert v.mean_random == pytest.approx(r.mean(), rel=1e-12)
            assert (v.n_fixed, v.n_random) == (len(f), len(r))
            assert v.ci_case in (1, 2, 3)


def test_output_order_is_table_order_then_metric_order():
    table = TrialTable.from_columns(
        test=["b", "b", "a", "a", "c", "c"] * 5,
        metric=["y", "x", "y", "x", "x", "y"] * 5,
        arm=(["fixed"] * 6 + ["random"] * 6) * 2 + ["fixed"] * 6,
        value=np.arange(30.0),
    )
    analysis = analyze_table(table)
    assert [(v.test, v.metric) for v in analysis.tests] == [
        ("b", "y"), ("b", "x"), ("a", "y"), ("a", "x"), ("c", "y"), ("c", "x"),
    ]  # metrics in the table's metric order (first appearance: y, then x), for every test


def test_too_few_values_and_identical_values_give_nulls_with_reasons():
    table = TrialTable.from_columns(
        test=["few"] * 9 + ["flat"] * 12 + ["one-armed"] * 7 + ["ok"] * 20,
        arm=["fixed"] * 3 + ["random"] * 6 + ["fixed"] * 6 + ["random"] * 6 + ["fixed"] * 7 + ["fixed", "random"] * 10,
        value=list(range(9)) + [4.5] * 12 + list(range(7)) + list(np.linspace(1, 2, 20)),
    )
    analysis = analyze_table(table)
    by = {v.test: v for v in analysis.tests}

    few = by["few"]
    assert few.kw_h is None and few.kw_p is None and few.p_adjusted is None and few.significant is None and few.eta2 is None
    assert few.ci_fixed is None and few.ci_random == (3.0, 8.0) and few.ci_case is None
    assert few.median_fixed == 1.0 and few.delta_pct is not None
    assert TooFewToTest(n_fixed=3, n_random=6, least=5) in few.notes
    assert any(isinstance(n, TooFewForCI) and (n.arm, n.n, n.level, n.method) == ("fixed", 3, 0.95, "exact-binomial") for n in few.notes)

    flat = by["flat"]
    assert flat.kw_p is None and flat.significant is None and flat.eta2 is None
    assert AllEqual(n=12, value=4.5) in flat.notes
    assert flat.delta_pct == 0.0 and flat.ci_case == 2

    one = by["one-armed"]
    assert one.n_random == 0 and one.kw_p is None and one.median_random is None and one.delta_pct is None
    assert one.mean_random is None and one.cv_random is None
    assert EmptyArm("random") in one.notes

    ok = by["ok"]
    assert ok.kw_p is not None and ok.notes == ()
    # Only the testable comparison is in the family: m = 1.
    assert analysis.alpha_corrected == 0.05 and ok.p_adjusted == ok.kw_p
    assert len(analysis.warnings) == 3
    assert OnTest("few", "value", few.notes) in analysis.warnings
    assert OnTest("flat", "value", flat.notes) in analysis.warnings
    assert analysis_json(analysis)["tests"][0]["kw_p"] is None


def test_nothing_testable():
    table = TrialTable.from_columns(test=["a"] * 4, arm=["fixed", "random"] * 2, value=[1.0, 2.0, 3.0, 4.0])
    analysis = analyze_table(table)
    assert analysis.order_matters is False and analysis.alpha_corrected is None
    assert analysis.tests[0].significant is None


def test_empty_table():
    table = TrialTable.from_columns(test=[], arm=[], value=[])
    analysis = analyze_table(table)
    assert analysis.tests == () and analysis.order_matters is False
    assert NoValues() in analysis.warnings


def test_non_finite_values_are_left_out_with_a_warning():
    rng = np.random.default_rng(2)
    values = rng.normal(size=20)
    values[3] = np.nan
    values[7] = np.inf
    table = TrialTable.from_columns(test=["a"] * 20, arm=["fixed", "random"] * 10, value=values)
    analysis = analyze_table(table)
    assert analysis.tests[0].n_fixed + analysis.tests[0].n_random == 18
    assert NonFinite(2) in analysis.warnings


def test_primary_and_secondary_families_are_corrected_separately():
    rng = np.random.default_rng(9)
    n = 30
    tests, metrics, arms, values, primary = [], [], [], [], []
    for t in range(3):
        for metric, is_primary, shift in (("result", True, 0.0), ("wall_time", False, 3.0 if t == 0 else 0.0)):
            for arm in ("fixed", "random"):
                loc = 10 + (shift if arm == "random" else 0)
                values.extend(rng.normal(loc, 1, n))
                tests.extend([f"t{t}"] * n)
                metrics.extend([metric] * n)
                arms.extend([arm] * n)
                primary.extend([is_primary] * n)
    table = TrialTable.from_columns(test=tests, metric=metrics, arm=arms, value=values, primary=primary)
    analysis = analyze_table(table)
    sec = [v for v in analysis.tests if not v.primary]
    pri = [v for v in analysis.tests if v.primary]
    assert len(sec) == len(pri) == 3
    for v in pri + sec:
        assert v.p_adjusted == pytest.approx(min(1.0, 3 * v.kw_p))  # m = 3 in each family, not 6
    wall = next(v for v in sec if v.test == "t0")
    assert wall.significant is True
    # A significant non-primary metric does not decide the verdict.
    assert analysis.order_matters is any(v.significant for v in pri)
    assert analysis.alpha_corrected == pytest.approx(0.05 / 3)


def test_metric_info_fills_unit_and_better():
    table = TrialTable.from_columns(
        test=["a"] * 20,
        metric=["throughput"] * 10 + ["wall_time"] * 10,
        arm=["fixed", "random"] * 10,
        value=np.arange(20.0),
        metrics_info={"throughput": MetricInfo("throughput", "MB/s", "higher")},
        warnings=("12 rows were excluded: status failed",),
        excluded=12,
        provenance={"seed": 7},
    )
    analysis = analyze_table(table, tool_version="9.9.9")
    by = {v.metric: v for v in analysis.tests}
    assert (by["throughput"].unit, by["throughput"].better) == ("MB/s", "higher")
    assert (by["wall_time"].unit, by["wall_time"].better) == ("s", "lower")
    assert analysis.warnings[0] == "12 rows were excluded: status failed"
    assert analysis.excluded == 12 and analysis.provenance == {"seed": 7}
    assert analysis.tool_version == "9.9.9"


@pytest.mark.artifact
def test_options_are_recorded_and_applied():
    table = _artifact_table("memcached-table3", "all_exp_results.csv", "exp_command")
    a = analyze_table(table, correction="holm", ci_method="le-boudec", ci_level=0.9, ci_case_rule="algorithm-2", alpha=0.01)
    assert (a.correction, a.ci_method, a.ci_level, a.ci_case_rule, a.alpha) == ("holm", "le-boudec", 0.9, "algorithm-2", 0.01)
    assert a.alpha_corrected == pytest.approx(0.01 / 3)
    hits = next(v for v in a.tests if v.test == "./get_hits_test.sh")
    x = np.sort(table.value[(table.test == table.test_names.index("./get_hits_test.sh")) & (table.arm == 0)])
    z = stats.norm.ppf(0.95)
    j = int(np.floor(25 - z * np.sqrt(50) / 2))
    k = int(np.ceil(26 + z * np.sqrt(50) / 2))
    assert hits.ci_fixed == (x[j - 1], x[k - 1])
    # With algorithm-2, cmd_set (one median inside) is no longer case 2 unless both are inside.
    b = analyze_table(table, ci_case_rule="algorithm-2")
    for v, w in zip(analyze_table(table).tests, b.tests):
        assert (v.ci_case == 1) == (w.ci_case == 1)


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("correction", "sidak", "unknown correction 'sidak'"),
        ("ci_method", "bootstrap", "unknown CI method 'bootstrap'"),
        ("ci_case_rule", "strict", "unknown CI case rule 'strict'"),
        ("alpha", 0.0, "alpha must lie strictly between 0 and 1"),
        ("ci_level", 95, "ci_level must lie strictly between 0 and 1"),
        ("min_values", 0, "min_values must be a whole number"),
    ],
)
def test_invalid_options_raise_value_error(option, value, message):
    table = TrialTable.from_columns(test=["a"] * 4, arm=["fixed", "random"] * 2, value=[1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match=message):
        analyze_table(table, **{option: value})


# --- properties ---------------------------------------------------------------------------


@st.composite
def small_tables(draw):
    n_tests = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    distinct = draw(st.sampled_from([2, 4, 50, 0]))
    tests, arms, values = [], [], []
    for t in range(n_tests):
        for arm in ("fixed", "random"):
            k = int(rng.integers(0, 15))
            x = rng.integers(1, distinct + 1, k).astype(float) if distinct else rng.lognormal(2, 0.5, k)
            values.extend(x)
            tests.extend([f"t{t}"] * k)
            arms.extend([arm] * k)
    return tests, arms, values


def _by_test(analysis):
    return {v.test: v for v in analysis.tests}


def _same(a, b, rel=1e-12):
    """Tuples equal up to rel, None only where the other is None."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is y
        else:
            assert x == pytest.approx(y, rel=rel)


@settings(max_examples=60, deadline=None)
@given(small_tables(), st.randoms(use_true_random=False))
def test_properties(case, rnd):
    tests, arms, values = case
    if not values:
        return
    base = analyze_table(TrialTable.from_columns(test=tests, arm=arms, value=values))
    for v in base.tests:
        if v.kw_p is not None:
            assert 0.0 <= v.kw_p <= 1.0 and v.kw_p <= v.p_adjusted <= 1.0
            assert v.eta2 is not None and v.eta2 <= 1.0
        if v.delta_pct is not None and v.mean_fixed > 0:
            assert (v.delta_pct > 0) == (v.mean_fixed > v.mean_random)
        assert (v.significant is None) == (v.kw_p is None)
    assert base.order_matters == any(v.significant for v in base.tests)

    # Relabelling tests (new names, new row order) changes nothing but the names.
    names = sorted(set(tests))
    new_names = [f"renamed-{i}" for i in range(len(names))]
    rnd.shuffle(new_names)
    rename = dict(zip(names, new_names))
    perm = list(range(len(values)))
    rnd.shuffle(perm)
    relabelled = _by_test(
        analyze_table(
            TrialTable.from_columns(test=[rename[tests[i]] for i in perm], arm=[arms[i] for i in perm], value=[values[i] for i in perm])
        )
    )
    for v in base.tests:
        w = relabelled[rename[v.test]]
        _same((w.kw_h, w.kw_p, w.p_adjusted, w.significant, w.ci_case), (v.kw_h, v.kw_p, v.p_adjusted, v.significant, v.ci_case))

    # A strictly increasing transform keeps the ranks: same H and p; and where both arms have
    # an odd number of values, every median and interval bound is an order statistic, so the
    # CI case is kept too (an even sample's median is a midpoint, which a convex transform
    # moves relative to the other arm's bounds).
    transformed = _by_test(analyze_table(TrialTable.from_columns(test=tests, arm=arms, value=[2.0 * x**3 + 1.0 for x in values])))
    for v in base.tests:
        w = transformed[v.test]
        _same((w.kw_h, w.kw_p, w.significant), (v.kw_h, v.kw_p, v.significant))
        if v.n_fixed % 2 and v.n_random % 2:
            assert w.ci_case == v.ci_case

    # Swapping the arms: KW is symmetric; Δ% changes sign; the CI case is symmetric.
    swapped = _by_test(
        analyze_table(TrialTable.from_columns(test=tests, arm=["random" if a == "fixed" else "fixed" for a in arms], value=values))
    )
    for v in base.tests:
        w = swapped[v.test]
        _same((w.kw_h, w.kw_p, w.ci_case), (v.kw_h, v.kw_p, v.ci_case))
        assert (w.n_fixed, w.n_random) == (v.n_random, v.n_fixed)
        if v.delta_pct is not None and w.delta_pct is not None and v.delta_pct != 0:
            assert np.sign(w.delta_pct) == -np.sign(v.delta_pct)
