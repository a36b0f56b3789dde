"""Response curves (analyze/curves.py): medians and intervals per sweep level and series, the
series compared level by level, checked against the statistics functions called directly."""

from __future__ import annotations

import dataclasses
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

from benchsage.stats.compare import ratio_ci_bonett_price

from benchsage.analyze.curves import curve_analysis, family_name, level_value, ordered_levels
from benchsage.analyze.pipeline import Options, analyze_loaded
from benchsage.api import analyze_sources
from benchsage.report.json import analysis_json
from benchsage.stats.compare import compare
from benchsage.stats.correction import adjust
from benchsage.stats.median_ci import grouped_median_ci
from benchsage.store.importers import read_tidy
from benchsage.store.table import MetricInfo, TrialTable

sys.path.insert(0, str(Path(__file__).parent))
from curves_data import swept_columns, swept_table, write_tidy  # noqa: E402


def _values(cols: dict[str, list], test_prefix: str, metric: str, conns: str, governor: str, size: str | None = None) -> np.ndarray:
    keep = [v for v, t, m, c, g, s in zip(cols["value"], cols["test"], cols["metric"], cols["sweep:conns"], cols["factor:governor"],
                                           cols.get("sweep:size", [None] * len(cols["value"])))
            if t.startswith(test_prefix) and m == metric and c == conns and g == governor and s == size]
    return np.array(keep, dtype=np.float64)


@pytest.fixture(scope="module")
def cols() -> dict[str, list]:
    return swept_columns(seed=3)


@pytest.fixture(scope="module")
def tidy_file(tmp_path_factory: pytest.TempPathFactory, cols: dict[str, list]) -> Path:
    return write_tidy(tmp_path_factory.mktemp("curves") / "wrk.csv", cols)


def test_the_tidy_importer_reads_sweep_columns(tidy_file: Path) -> None:
    table = read_tidy(tidy_file)
    assert "sweep:conns" in table.dims and "factor:governor" in table.dims
    names, codes = table.levels("sweep:conns")
    assert names == ("2", "8", "32") and (codes >= 0).all()


@pytest.mark.parametrize("source", ["tidy", "table"])
def test_points_are_the_median_and_interval_of_the_stats_function(source: str, cols: dict[str, list], tidy_file: Path) -> None:
    table = read_tidy(tidy_file) if source == "tidy" else swept_table(cols)
    found = curve_analysis(table, ci_level=0.95, ci_method="exact-binomial")
    assert found is not None and found.ci_method == "exact-binomial"
    assert [(c.test, c.metric, c.sweep, dict(c.series)) for c in found.curves] == [
        ("wrk", m, "conns", {"governor": g}) for m in ("p99", "rps") for g in ("performance", "schedutil")]
    for curve in found.curves:
        assert [p.level for p in curve.points] == [2, 8, 32]
        for p in curve.points:
            x = _values(cols, "wrk", curve.metric, str(p.level), curve.series["governor"])
            direct = grouped_median_ci(x, np.zeros(len(x), dtype=np.int64), 1, 0.95, "exact-binomial")
            assert p.n == len(x) == 20
            assert p.median == pytest.approx(float(np.median(x)), rel=1e-12)
            assert p.ci == (pytest.approx(direct.low[0], rel=1e-12), pytest.approx(direct.high[0], rel=1e-12))


@pytest.mark.parametrize("correction", ["bonferroni", "holm"])
def test_comparisons_are_those_of_compare_corrected_over_levels_and_curves(correction: str, cols: dict[str, list]) -> None:
    table = swept_table(cols)
    found = curve_analysis(table, alpha=0.05, correction=correction)
    rows = found.comparisons
    assert [(r.metric, r.level) for r in rows] == [(m, lv) for m in ("p99", "rps") for lv in (2, 8, 32)]
    direct = []
    for r in rows:
        assert r.a == {"governor": "schedutil"} and r.b == {"governor": "performance"}
        a = _values(cols, "wrk", r.metric, str(r.level), "schedutil")
        b = _values(cols, "wrk", r.metric, str(r.level), "performance")
        c = compare(a, b, alpha=0.05, higher_is_better=r.metric == "rps")
        assert (r.comparison.ratio, r.comparison.ci, r.comparison.p) == (c.ratio, c.ci, c.p)
        assert r.comparison.ratio == pytest.approx(float(np.median(a) / np.median(b)), rel=1e-12)
        direct.append(c.p)
    # One family: every level of every curve of the primary metrics.
    expected = adjust(np.array(direct), correction, 0.05)
    assert [r.p_adjusted for r in rows] == pytest.approx(expected.p_adjusted.tolist(), rel=1e-12)
    assert all(r.p_adjusted >= r.comparison.p for r in rows)
    # schedutil is 1.4x slower at 32 connections only: worse on both metrics there, alike elsewhere.
    assert [(r.metric, r.level, r.better) for r in rows if r.better] == [("p99", 32, "b"), ("rps", 32, "b")]
    slow = next(r for r in rows if r.metric == "p99" and r.level == 32)
    assert slow.comparison.ci[0] < 1.4 < slow.comparison.ci[1]


def test_other_metrics_are_corrected_in_their_own_family(cols: dict[str, list]) -> None:
    table = swept_table(cols)
    table = dataclasses.replace(table, primary=table.metric == table.metric_names.index("p99"))
    found = curve_analysis(table, correction="holm")
    for primary in (True, False):
        rows = [r for r in found.comparisons if r.primary == primary]
        assert len(rows) == 3
        expected = adjust(np.array([r.comparison.p for r in rows]), "holm", 0.05).p_adjusted
        assert [r.p_adjusted for r in rows] == pytest.approx(expected.tolist(), rel=1e-12)
    assert [c.metric for c in found.curves] == ["p99", "p99", "rps", "rps"]
    assert [c.primary for c in found.curves] == [True, True, False, False]


def _two_series(a: np.ndarray, b: np.ndarray, levels: tuple[str, ...] = ("1", "4", "16")) -> TrialTable:
    """Series "x" with values a and series "y" with values b at every level."""
    values, tests, conns, series = [], [], [], []
    for level in levels:
        for name, sample in (("y", b), ("x", a)):
            values.extend(sample)
            tests.extend([f"t[n={level}]"] * len(sample))
            conns.extend([level] * len(sample))
            series.extend([name] * len(sample))
    return TrialTable.from_columns(test=tests, arm=["fixed", "random"] * (len(values) // 2), value=values,
                                   treatments={"sweep:n": conns, "factor:f": series},
                                   metrics_info={"value": MetricInfo("value", "s", "lower")})


def test_a_series_shifted_by_20_percent_is_found_with_its_ratio() -> None:
    rng = np.random.default_rng(11)
    b = rng.lognormal(0.0, 0.05, 40)
    found = curve_analysis(_two_series(1.2 * b, b), correction="holm")
    assert len(found.comparisons) == 3
    for r in found.comparisons:
        assert (r.a, r.b) == ({"f": "x"}, {"f": "y"})
        assert r.comparison.ratio == pytest.approx(1.2, rel=1e-12)
        assert r.comparison.ci[0] < 1.2 < r.comparison.ci[1]
        assert r.p_adjusted < 0.001 and r.better == "b"  # x is slower: y is better
        # The simultaneous interval (level 1 - alpha/3 over the 3 levels) is the per-level one widened.
        expected, _ = ratio_ci_bonett_price(1.2 * b, b, 1 - 0.05 / 3)
        assert r.ci_adjusted == pytest.approx(expected, rel=1e-12)
        assert r.ci_adjusted[0] < r.comparison.ci[0] and r.comparison.ci[1] < r.ci_adjusted[1] and r.ci_adjusted[0] > 1


@pytest.mark.parametrize("seed", range(5))
def test_identical_distributions_are_not_significant(seed: int) -> None:
    rng = np.random.default_rng(seed)
    found = curve_analysis(_two_series(rng.lognormal(0.0, 0.05, 30), rng.lognormal(0.0, 0.05, 30)))
    for r in found.comparisons:
        assert r.better is None and r.p_adjusted >= r.comparison.p
        assert r.comparison.ci[0] < 1.0 < r.comparison.ci[1]
        assert r.ci_adjusted[0] < 1.0 < r.ci_adjusted[1]


def test_numeric_levels_are_in_numeric_order_whatever_the_order_seen() -> None:
    assert ordered_levels(["32", "2", "8"]) == ["2", "8", "32"]
    assert ordered_levels(["0.5", "16", "2"]) == ["0.5", "2", "16"]
    assert ordered_levels(["small", "large", "medium"]) == ["small", "large", "medium"]  # first seen
    assert ordered_levels(["small", "large", "medium"], ["small", "medium", "large"]) == ["small", "medium", "large"]  # declared
    assert [level_value(x) for x in ("8", "0.5", "1k", "-3")] == [8, 0.5, "1k", -3]
    assert family_name("wrk[conns=8,size=1k]") == "wrk" and family_name("a[b") == "a[b"
    # A table whose levels are recorded as text in first-seen order ("32" before "2").
    rng = np.random.default_rng(0)
    table = _two_series(rng.lognormal(0, 0.05, 10), rng.lognormal(0, 0.05, 10), levels=("32", "2", "8"))
    k = table.dims.index("sweep:n")
    names = table.dim_levels[k]
    remap = np.array([("32", "2", "8").index(n) for n in names])
    table = dataclasses.replace(table, dim_levels=table.dim_levels[:k] + (("32", "2", "8"),) + table.dim_levels[k + 1:],
                                treatment=np.column_stack([remap[table.treatment[:, k]] if j == k else table.treatment[:, j]
                                                           for j in range(len(table.dims))]).astype(np.int32))
    found = curve_analysis(table)
    assert [[p.level for p in c.points] for c in found.curves] == [[2, 8, 32], [2, 8, 32]]
    assert [r.level for r in found.comparisons] == [2, 8, 32]


def test_declared_sweep_levels_order_text_levels() -> None:
    rng = np.random.default_rng(1)
    table = _two_series(rng.lognormal(0, 0.05, 10), rng.lognormal(0, 0.05, 10), levels=("large", "small", "medium"))
    assert [p.level for p in curve_analysis(table).curves[0].points] == ["large", "small", "medium"]
    declared = dataclasses.replace(table, provenance={"sweeps": [{"name": "n", "levels": ["small", "medium", "large"]}]})
    assert [p.level for p in curve_analysis(declared).curves[0].points] == ["small", "medium", "large"]


def test_crossed_sweeps_fix_the_other_sweep_along_each_curve() -> None:
    cols = swept_columns(seed=5, sizes=("1k", "64k"), runs=6)
    found = curve_analysis(swept_table(cols))
    p99 = [c for c in found.curves if c.metric == "p99"]
    # Along conns: one curve per size and governor; along size: one per conns and governor.
    assert [(c.sweep, dict(c.fixed), c.series["governor"]) for c in p99] == [
        ("conns", {"size": s}, g) for s in ("1k", "64k") for g in ("performance", "schedutil")] + [
        ("size", {"conns": n}, g) for n in (2, 8, 32) for g in ("performance", "schedutil")]
    along_size = next(c for c in p99 if c.sweep == "size" and c.fixed == {"conns": 8})
    x = _values(cols, "wrk", "p99", "8", "performance", "64k")
    assert along_size.points[1].level == "64k" and along_size.points[1].median == pytest.approx(float(np.median(x)))
    # Each point compared once, along the first sweep: 3 conns x 2 sizes x 2 metrics.
    assert len(found.comparisons) == 12 and {r.sweep for r in found.comparisons} == {"conns"}
    assert len({(r.metric, r.level, tuple(r.fixed.items())) for r in found.comparisons}) == 12


def test_without_factors_there_is_one_curve_per_metric_and_nothing_to_compare() -> None:
    cols = swept_columns(seed=2, governors=("performance",))
    del cols["factor:governor"]
    found = curve_analysis(swept_table(cols))
    assert [(c.metric, dict(c.series)) for c in found.curves] == [("p99", {}), ("rps", {})]
    assert found.comparisons == ()


def test_three_factor_levels_give_every_pair() -> None:
    cols = swept_columns(seed=4, governors=("performance", "schedutil", "powersave"), runs=5)
    found = curve_analysis(swept_table(cols))
    pairs = {(r.a["governor"], r.b["governor"]) for r in found.comparisons}
    assert pairs == {("schedutil", "performance"), ("powersave", "performance"), ("powersave", "schedutil")}
    assert len(found.comparisons) == 3 * 3 * 2


def test_analysis_json_has_the_contract_shape(cols: dict[str, list]) -> None:
    analysis = analyze_loaded(swept_table(cols), Options(correction="holm"))
    doc = analysis_json(analysis)
    curve = doc["curves"][0]
    assert list(curve)[:5] == ["test", "metric", "sweep", "series", "points"]
    assert curve["series"] == {"governor": "performance"} and curve["fixed"] == {}
    assert set(curve["points"][0]) == {"level", "median", "ci", "n"} and curve["points"][0]["level"] == 2
    row = doc["curve_comparisons"][0]
    assert list(row)[:11] == ["test", "metric", "sweep", "level", "a", "b", "ratio", "ci", "ci_adjusted", "p_adjusted", "better"]
    assert row["a"] == {"governor": "schedutil"} and row["method"] == "mann-whitney" and row["ci_method"] == "bonett-price"
    # The order analysis runs per expanded test as for any test.
    assert {v.test for v in analysis.tests} == {"wrk[conns=2]", "wrk[conns=8]", "wrk[conns=32]"}


def test_an_experiment_without_sweeps_has_no_curve_keys() -> None:
    rng = np.random.default_rng(0)
    table = TrialTable.from_columns(test=["a", "b"] * 20, arm=["fixed"] * 20 + ["random"] * 20, value=rng.uniform(1, 2, 40),
                                    treatments={"factor:g": ["x", "y"] * 20})
    analysis = analyze_loaded(table)
    assert analysis.curves is None
    assert not {"curves", "curve_comparisons"} & set(analysis_json(analysis))


def test_analyze_sources_of_a_tidy_file_finds_the_curves(tidy_file: Path) -> None:
    analysis, _ = analyze_sources([str(tidy_file)], format="tidy")
    assert analysis.curves is not None and len(analysis.curves.curves) == 4
    assert [r.level for r in analysis.curves.comparisons if r.better] == [32, 32]


def test_levels_of_a_curve_missing_a_series_are_left_out() -> None:
    cols = swept_columns(seed=6, runs=6)
    drop = [i for i, (c, g) in enumerate(zip(cols["sweep:conns"], cols["factor:governor"])) if c == "2" and g == "schedutil"]
    kept = {k: [v for i, v in enumerate(col) if i not in set(drop)] for k, col in cols.items()}
    found = curve_analysis(swept_table(kept))
    schedutil = [c for c in found.curves if c.series["governor"] == "schedutil"]
    assert all([p.level for p in c.points] == [8, 32] for c in schedutil)
    assert sorted({r.level for r in found.comparisons}) == [8, 32]
    assert list(itertools.chain.from_iterable([p.n for p in c.points] for c in schedutil)) == [12] * 4


def test_a_test_without_sweep_levels_has_no_curve() -> None:
    rng = np.random.default_rng(2)
    tests = ["wrk[n=1]", "wrk[n=4]", "ping"] * 12
    table = TrialTable.from_columns(test=tests, arm=["fixed"] * 18 + ["random"] * 18, value=rng.uniform(1, 2, 36),
                                    treatments={"sweep:n": [t[6] if t != "ping" else None for t in tests]})
    found = curve_analysis(table)
    assert [(c.test, [p.level for p in c.points], [p.n for p in c.points]) for c in found.curves] == [("wrk", [1, 4], [12, 12])]
