"""The order effect's size and what the design could detect, on real analyses (analyze/effects.py):
the rows' shift and its interval against brute force and the row's own test (duality), the least
p-value and `detectable` at the family's level, the detectable shift, fleets, the work budget, and
the fields in `benchsage analyze --json`."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from benchsage.analyze import effects
from benchsage.analyze.effects import EffectOptions, within_budget
from benchsage.analyze.order import analyze_table
from benchsage.analyze.pipeline import Options, analyze_loaded
from benchsage.stats import van_elteren
from benchsage.stats.detectable import critical_z, detectable_shift, least_p_untied, shift_percent
from benchsage.store.table import TrialTable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fleet_data import tidy_fleet  # noqa: E402


def _table(arms: list[tuple[np.ndarray, np.ndarray]], *, metric: str = "value") -> TrialTable:
    test, arm, value = [], [], []
    for i, (f, r) in enumerate(arms):
        test += [f"t{i}"] * (len(f) + len(r))
        arm += ["fixed"] * len(f) + ["random"] * len(r)
        value += list(f) + list(r)
    return TrialTable.from_columns(test=test, arm=arm, value=value, metric=[metric] * len(value))


def _excludes_no_effect(row) -> bool:
    null = 1.0 if row.shift_kind == "ratio" else 0.0
    return row.shift_ci is not None and (row.shift_ci[0] > null or row.shift_ci[1] < null)


def test_three_runs_per_arm_cannot_detect_anything() -> None:
    rng = np.random.default_rng(1)
    analysis = analyze_table(_table([(rng.lognormal(0, 0.01, 3) * 2, rng.lognormal(0, 0.01, 3)) for _ in range(2)]))
    for row in analysis.tests:
        assert row.kw_p is None and row.least_p is None and row.detectable is False
        assert row.shift is None and row.shift_ci is None and row.min_detectable_pct is None


def test_five_runs_per_arm_and_ten_tests_cannot_reach_the_corrected_level() -> None:
    rng = np.random.default_rng(2)
    # the first test's arms are completely apart: its p is the least p any 5 + 5 can give
    arms = [(rng.lognormal(0, 0.01, 5) * 2, rng.lognormal(0, 0.01, 5))] + [(rng.lognormal(0, 0.01, 5), rng.lognormal(0, 0.01, 5)) for _ in range(9)]
    analysis = analyze_table(_table(arms))
    first = analysis.tests[0]
    assert first.kw_p == pytest.approx(first.least_p) == pytest.approx(least_p_untied(5, 5)[0])
    assert first.least_p > analysis.alpha_corrected == 0.005
    assert all(row.detectable is False and row.significant is False for row in analysis.tests)
    # no interval reaches 99.5% with 5 + 5 values: the shift is given without one
    assert first.shift == pytest.approx(np.median(np.divide.outer(arms[0][0], arms[0][1])))
    assert first.shift_ci is None and first.shift_level == pytest.approx(0.995) and first.min_detectable_pct is None


def test_thirty_runs_per_arm_with_a_clear_effect() -> None:
    rng = np.random.default_rng(3)
    arms = [(rng.lognormal(0, 0.03, 30) * 1.08, rng.lognormal(0, 0.03, 30))] + [(rng.lognormal(0, 0.03, 30), rng.lognormal(0, 0.03, 30)) for _ in range(4)]
    analysis = analyze_table(_table(arms))
    row = analysis.tests[0]
    assert row.significant is True and row.detectable is True and row.shift_kind == "ratio"
    assert row.shift_ci is not None and row.shift_ci[0] > 1.0 and row.shift_ci[0] < row.shift < row.shift_ci[1]
    assert row.shift_level == pytest.approx(1 - 0.05 / 5)
    ratios = np.sort(np.divide.outer(*arms[0]).ravel())
    assert row.shift == pytest.approx(math.exp(np.median(np.log(ratios))), rel=1e-12)
    # the detectable shift is the stats module's on the row's pooled values at alpha / m
    pool = np.r_[arms[0][0], arms[0][1]]
    expected = shift_percent(detectable_shift(pool, 30, 30, critical_z(0.05 / 5), ratio=True), float(np.median(pool)))
    assert row.min_detectable_pct == pytest.approx(expected, rel=1e-12)
    assert all(r.min_detectable_pct is not None and 0 < r.min_detectable_pct < 10 for r in analysis.tests)


def test_least_p_is_the_rows_own_test_on_the_extreme_arrangement() -> None:
    rng = np.random.default_rng(4)
    arms = [(np.round(rng.normal(10, 1, 8)), np.round(rng.normal(10, 1, 11))) for _ in range(6)]
    for row, (f, r) in zip(analyze_table(_table(arms)).tests, arms):
        pooled = np.sort(np.r_[f, r])
        p = min(stats.kruskal(pooled[:8], pooled[8:]).pvalue, stats.kruskal(pooled[-8:], pooled[:-8]).pvalue)
        assert row.least_p == pytest.approx(p, rel=1e-9)
        assert row.least_p <= row.kw_p


def _random_analyses(tied: bool, positive: bool, seed: int, tables: int = 15, tests: int = 20):
    rng = np.random.default_rng(seed)
    for _ in range(tables):
        arms = []
        for _ in range(tests):
            nf, nr = rng.integers(5, 25, size=2)
            f, r = rng.normal(rng.choice([0, 0.5, 1.0, 1.5]), 1, nf), rng.normal(0, 1, nr)
            if tied:
                f, r = np.round(f * 2) / 2, np.round(r * 2) / 2
            if positive:
                f, r = np.exp(f), np.exp(r)
            arms.append((f, r))
        yield analyze_table(_table(arms))


@pytest.mark.parametrize("positive", [True, False], ids=["ratio", "difference"])
def test_the_interval_excludes_no_effect_exactly_when_the_row_is_significant(positive: bool) -> None:
    """Continuous values, 300 rows of 5-24 values per arm, families of 20: the interval is dual
    to the row's Kruskal-Wallis test at alpha / m (agreement 300 of 300)."""
    rows = [row for a in _random_analyses(False, positive, 1) for row in a.tests]
    assert sum(row.significant for row in rows) > 50
    assert all(_excludes_no_effect(row) == row.significant for row in rows)
    assert {row.shift_kind for row in rows} == {"ratio" if positive else "difference"}


def test_with_ties_an_interval_that_excludes_no_effect_means_significant() -> None:
    """Values on a grid of half a standard deviation: a tied pair at no effect counts 1/2 in the
    test and 0 in the interval, so some significant rows' intervals touch no effect (agreement
    280 of 300 here); an interval that excludes it is always significant."""
    rows = [row for a in _random_analyses(True, True, 1) for row in a.tests]
    agree = sum(_excludes_no_effect(row) == row.significant for row in rows)
    assert all(row.significant for row in rows if _excludes_no_effect(row))
    assert 0.9 * len(rows) <= agree < len(rows)


def test_holm_uses_the_bonferroni_level_for_the_interval() -> None:
    rng = np.random.default_rng(6)
    arms = [(rng.normal(1.0 + 0.3 * i, 1, 20), rng.normal(0, 1, 20)) for i in range(6)]
    holm, bonferroni = analyze_table(_table(arms), correction="holm"), analyze_table(_table(arms))
    assert [r.shift_ci for r in holm.tests] == [r.shift_ci for r in bonferroni.tests]
    assert {r.shift_level for r in holm.tests} == {1 - 0.05 / 6}


def test_other_metrics_get_a_shift_at_their_own_familys_level_and_no_detectability() -> None:
    rng = np.random.default_rng(7)
    rows = {"test": [], "arm": [], "value": [], "metric": [], "primary": []}
    for t in range(3):
        for metric, primary in (("wall_time", True), ("max_rss", False), ("user_time", False)):
            for arm in ("fixed", "random"):
                rows["test"] += [f"t{t}"] * 12
                rows["arm"] += [arm] * 12
                rows["value"] += list(rng.lognormal(0, 0.05, 12))
                rows["metric"] += [metric] * 12
                rows["primary"] += [primary] * 12
    analysis = analyze_table(TrialTable.from_columns(**rows))
    for row in analysis.tests:
        assert row.shift is not None
        if row.primary:
            assert row.shift_level == pytest.approx(1 - 0.05 / 3) and row.detectable is not None and row.least_p is not None
        else:
            assert row.shift_level == pytest.approx(1 - 0.05 / 6)
            assert row.least_p is None and row.detectable is None and row.min_detectable_pct is None


def test_values_not_all_positive_give_a_difference_and_an_additive_detectable_shift() -> None:
    rng = np.random.default_rng(8)
    f, r = rng.normal(0.5, 1, 25), rng.normal(0, 1, 25)
    row = analyze_table(_table([(f, r)])).tests[0]
    assert row.shift_kind == "difference"
    assert row.shift == pytest.approx(np.median(np.subtract.outer(f, r)), rel=1e-12)
    pool = np.r_[f, r]
    found = detectable_shift(pool, 25, 25, critical_z(0.05), ratio=False)
    assert row.min_detectable_pct == pytest.approx(max(found.up, -found.down) / abs(np.median(pool)) * 100, rel=1e-12)


def test_a_fleets_least_p_is_van_elterens_on_the_extreme_arrangement_and_its_shift_the_level_free_values() -> None:
    table = tidy_fleet({"a": 1.0, "b": 3.0}, runs_per_arm=6, effect=0.05, seed=3, tests=2)
    analysis = analyze_table(table)
    assert analysis.combined is not None
    for t, row in enumerate(analysis.tests):
        rows = table.test == t
        value, worker, arm = table.value[rows], table.worker[rows], table.arm[rows]
        best = 1.0
        for low_first in (True, False):
            label = np.zeros(len(value), dtype=np.int64)
            for w in (0, 1):
                mine = np.flatnonzero(worker == w)
                ordered = mine[np.argsort(value[mine])]
                n_fixed = int(np.sum(arm[mine] == 0))
                fixed = ordered[:n_fixed] if low_first else ordered[-n_fixed:]
                label[mine] = 1
                label[fixed] = 0
            best = min(best, float(van_elteren(value, np.zeros(len(value), dtype=np.int64), worker, label, 1, 2).pvalue[0]))
        assert row.least_p == pytest.approx(best, rel=1e-12) and row.least_p <= row.kw_p
        assert row.shift is not None and row.shift_kind == "ratio"
    # the shift describes the level-free values, as the medians do
    one = analyze_table(table.select(table.worker == 0)).tests[0]
    assert analysis.tests[0].shift == pytest.approx(one.shift, rel=0.05)


def test_the_budget_is_all_or_nothing_and_the_cheap_fields_always_come() -> None:
    n = np.array([[1000, 1000]] * 25)
    everything = np.ones(25, dtype=bool)
    assert within_budget(n, everything, everything) == (False, False)
    assert within_budget(n[:1], everything[:1], everything[:1]) == (True, True)
    assert within_budget(np.array([[30, 30]] * 50), np.ones(50, bool), np.ones(50, bool)) == (True, True)
    rng = np.random.default_rng(9)
    table = _table([(rng.lognormal(0, 0.03, 30) * 1.1, rng.lognormal(0, 0.03, 30))])
    skipped = analyze_table(table, effects=EffectOptions(shift=False, simulate=False)).tests[0]
    assert skipped.shift is None and skipped.shift_ci is None and skipped.min_detectable_pct is None
    assert skipped.least_p is not None and skipped.detectable is True


def test_the_same_data_give_the_same_fields_whatever_else_is_analysed() -> None:
    rng = np.random.default_rng(10)
    arms = [(rng.lognormal(0, 0.05, 15), rng.lognormal(0, 0.05, 17)) for _ in range(4)]
    alone = analyze_table(_table(arms[:1]), effects=EffectOptions(family_sizes=(4, 0))).tests[0]
    among = analyze_table(_table(arms)).tests[0]
    assert (alone.shift, alone.shift_ci, alone.least_p, alone.min_detectable_pct) == (among.shift, among.shift_ci, among.least_p, among.min_detectable_pct)


def test_significant_rows_are_detectable() -> None:
    for analysis in _random_analyses(True, False, 2, tables=5):
        for row in analysis.tests:
            if row.significant:
                assert row.detectable
            if row.kw_p is not None:
                assert row.least_p <= row.kw_p


def test_analyze_json_carries_the_fields(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    path = tmp_path / "trials.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["test", "order", "value"])
        for t, (runs, factor) in enumerate([(30, 1.1), (30, 1.0), (3, 1.0)]):
            for arm, scale in (("fixed", factor), ("random", 1.0)):
                for v in rng.lognormal(0, 0.03, runs) * scale:
                    out.writerow([f"t{t}", arm, v])
    done = subprocess.run([sys.executable, "-m", "benchsage", "analyze", str(path), "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = {r["test"]: r for r in json.loads(done.stdout)["tests"]}
    clear, none, few = rows["t0"], rows["t1"], rows["t2"]
    assert clear["significant"] and clear["detectable"] and clear["shift_ci"][0] > 1 and clear["shift_kind"] == "ratio"
    assert none["detectable"] and not none["significant"] and none["min_detectable_pct"] > 0 and none["least_p"] < 1e-10
    assert few["detectable"] is False and few["least_p"] is None and few["shift"] is None
    assert effects.SIZE_FIELDS == ("shift", "shift_ci", "shift_level", "shift_kind", "min_detectable_pct")
