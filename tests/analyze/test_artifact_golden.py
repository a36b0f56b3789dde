"""Golden values from the OrderSage paper's own raw data (memcached Table 3, NPBench Table 4).

benchsage must reproduce what OrderSage computed correctly (Kruskal-Wallis H, p, Δ%), and differ,
on purpose and visibly, where OrderSage's analysis was off: the effect size (H/(n-1) instead of
eta²_H), the CIs (normal-approximation ranks indexed 0-based) and the missing Bonferroni decision.
docs/ordersage-differences.md explains each difference; these tests pin its numbers.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from benchsage.analyze.diagnostics import RESET, diagnose
from benchsage.analyze.diagnostics.notes import ArmFirst, InterleavingDetail
from benchsage.analyze.order import analyze_table
from benchsage.analyze.verdict import Analysis, TestVerdict
from benchsage.store.importers import load_source
from benchsage.store.table import TrialTable

ARTIFACT = Path(os.environ.get("BENCHSAGE_TEST_ARTIFACT") or "/nonexistent")  # the OrderSage artifact data; .ci/run sets it
MEMCACHED = ARTIFACT / "memcached-table3"
NPBENCH = ARTIFACT / "npbench-table4"
pytestmark = pytest.mark.skipif(not MEMCACHED.is_dir(), reason="the OrderSage artifact data is not here")
FOLDERS = [(MEMCACHED, "all_exp_results.csv", "exp_command"), (NPBENCH, "all_test_results.csv", "test_command")]


def node_stats(folder: Path, key: str) -> dict[str, dict[str, str]]:
    with (folder / "node_stats.csv").open(newline="") as fh:
        return {row[key]: row for row in csv.DictReader(fh)}


def matches(ours: float | None, printed: str) -> bool:
    """Equal to 1e-9 relative, or to the last digit printed: the NPBench node_stats.csv was saved
    with 7 to 10 significant digits (0.02916428), the memcached one with full precision."""
    assert ours is not None
    mantissa, _, exponent = printed.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    half_digit = 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0))
    return abs(ours - float(printed)) <= max(1e-9 * abs(float(printed)), half_digit)


def load(folder: Path, name: str) -> tuple[TrialTable, Analysis]:
    table = load_source(folder / name)
    return table, analyze_table(table, alpha=0.05, correction="bonferroni", ci_method="exact-binomial", ci_level=0.95, ci_case_rule="paper")


def by_test(analysis: Analysis) -> dict[str, TestVerdict]:
    return {v.test: v for v in analysis.tests}


@pytest.mark.parametrize(("folder", "name", "key"), FOLDERS)
def test_kruskal_wallis_and_delta_equal_ordersage(folder: Path, name: str, key: str) -> None:
    _, analysis = load(folder, name)
    expected = node_stats(folder, key)
    assert set(by_test(analysis)) == set(expected)
    for test, v in by_test(analysis).items():
        row = expected[test]
        assert matches(v.kw_h, row["KW_test_stat"])
        assert matches(v.kw_p, row["KW_p-value"])
        assert matches(v.delta_pct, row["percent_diff"])
    if folder == MEMCACHED:  # full precision: 1e-9 relative, no rounding to hide behind
        row = expected["./get_hits_test.sh"]
        hits = by_test(analysis)["./get_hits_test.sh"]
        assert hits.kw_h == pytest.approx(float(row["KW_test_stat"]), rel=1e-9)
        assert hits.kw_p == pytest.approx(float(row["KW_p-value"]), rel=1e-9)
        assert hits.delta_pct == pytest.approx(float(row["percent_diff"]), rel=1e-9)


@pytest.mark.parametrize(("folder", "name", "key"), FOLDERS)
def test_effect_size_is_eta_squared_h_not_ordersages(folder: Path, name: str, key: str) -> None:
    _, analysis = load(folder, name)
    expected = node_stats(folder, key)
    for test, v in by_test(analysis).items():
        n = v.n_fixed + v.n_random
        assert v.kw_h is not None and v.eta2 is not None
        assert v.eta2 == pytest.approx((v.kw_h - 1) / (n - 2), rel=1e-12)  # (H - k + 1) / (n - k), k = 2
        printed = expected[test]["KW_effect_size"]
        assert matches(v.kw_h / (n - 1), printed)  # what OrderSage printed: H / (n - 1), i.e. k = 1
        assert not matches(v.eta2, printed)
        assert abs(v.eta2 - float(printed)) > 0.004


def test_get_hits_effect_sizes_side_by_side() -> None:
    v = by_test(load(MEMCACHED, "all_exp_results.csv")[1])["./get_hits_test.sh"]
    assert v.eta2 == pytest.approx(0.147355, abs=5e-7)  # (15.440792 - 1) / 98
    assert v.kw_h / 99 == pytest.approx(0.155968, abs=5e-7)  # OrderSage's KW_effect_size


def test_memcached_verdicts_and_table3_ci_cases() -> None:
    _, analysis = load(MEMCACHED, "all_exp_results.csv")
    v = by_test(analysis)
    assert analysis.alpha_corrected == pytest.approx(0.05 / 3)
    assert analysis.order_matters is True
    assert [t.test for t in analysis.significant_tests] == ["./get_hits_test.sh"]
    hits = v["./get_hits_test.sh"]
    assert hits.p_adjusted == pytest.approx(3 * 8.513070207694346e-05, rel=1e-9)
    # 95% exact-binomial intervals, the paper's Table 3: set and get case 2, get_hits case 3.
    assert [v[t].ci_case for t in ("./cmd_set_test.sh", "./cmd_get_test.sh", "./get_hits_test.sh")] == [2, 2, 3]
    assert hits.median_fixed == pytest.approx(70154.61288051444, rel=1e-12)
    assert hits.ci_fixed == pytest.approx((68758.2368923716, 73462.1503290293), rel=1e-12)
    assert hits.median_random == pytest.approx(67697.821102642, rel=1e-12)
    assert hits.ci_random == pytest.approx((65817.7431428186, 68776.8853470756), rel=1e-12)
    # Overlapping by 18.6 ops/s, neither median inside the other interval: case 3, not OrderSage's 1.
    assert hits.ci_random[1] > hits.ci_fixed[0]
    assert node_stats(MEMCACHED, "exp_command")["./get_hits_test.sh"]["ci_case"] == "1"


def test_npbench_softmax_is_not_significant_after_bonferroni() -> None:
    _, analysis = load(NPBENCH, "all_test_results.csv")
    v = by_test(analysis)
    softmax = v["./npBench-softmax.sh"]
    assert round(softmax.kw_p, 3) == 0.029
    assert softmax.kw_p > 0.05 / 3
    assert softmax.significant is False
    assert softmax.p_adjusted == pytest.approx(3 * softmax.kw_p, rel=1e-12)
    assert analysis.order_matters is False
    # OrderSage itself called it "different": the uncorrected 0.05.
    assert node_stats(NPBENCH, "test_command")["./npBench-softmax.sh"]["KW_dist_type"] == "different"
    assert [v[t].ci_case for t in ("./is.D.sh", "./npBench-softmax.sh", "./npBench-spmv.sh")] == [2, 3, 2]


@pytest.mark.parametrize(
    ("folder", "name", "key", "level"),
    [(MEMCACHED, "all_exp_results.csv", "exp_command", 0.95), (NPBENCH, "all_test_results.csv", "test_command", 1 - 0.05 / 3)],
)
def test_ordersage_cis_are_le_boudec_ranks_used_as_0_based_indices(folder: Path, name: str, key: str, level: float) -> None:
    """node_stats' CIs: Le Boudec's 1-based ranks used as 0-based indices, one order statistic
    above the interval Le Boudec defines; memcached's at 95%, NPBench's at 1 - 0.05/3."""
    table, _ = load(folder, name)
    ours = by_test(analyze_table(table, ci_method="le-boudec", ci_level=level))
    for test, row in node_stats(folder, key).items():
        code = table.test_names.index(test)
        for arm, side in ((0, "fixed"), (1, "random")):
            s = np.sort(table.value[(table.test == code) & (table.arm == arm)])
            n = len(s)
            eta = stats.norm.ppf((1 + level) / 2)
            lo = int(np.floor(n / 2 - eta * np.sqrt(n / 4)))
            hi = int(np.ceil(n / 2 + eta * np.sqrt(n / 4))) + 1
            assert (float(row[f"{side}_ci_low"]), float(row[f"{side}_ci_high"])) == pytest.approx((s[lo], s[hi]), rel=1e-9)
            interval = ours[test].ci_fixed if arm == 0 else ours[test].ci_random
            assert interval == pytest.approx((s[lo - 1], s[hi - 1]), rel=1e-12)


def test_memcached_diagnostics_get_hits_is_slower_first_after_the_reset() -> None:
    table, _ = load(MEMCACHED, "all_exp_results.csv")
    d = diagnose(table, alpha=0.05, correction="bonferroni")
    assert d is not None
    first = [p for p in d.position_effects if p.test == "./get_hits_test.sh" and p.position == 0][0]
    # result is ops/s: 4.5% fewer operations per second when get_hits runs right after the reset.
    assert (first.n_at, first.n_other) == (24, 26)
    assert first.median_at == pytest.approx(65538.28866544305, rel=1e-12)
    assert first.median_other == pytest.approx(68643.32221150034, rel=1e-12)
    assert first.effect_pct == pytest.approx(-4.5234313, abs=1e-6)
    assert first.p == pytest.approx(0.0018903313137629686, rel=1e-9)
    assert len(d.position_effects) == 9  # 3 tests x 3 positions, one family
    assert first.p_adjusted == pytest.approx(9 * first.p, rel=1e-12)
    assert first.significant is True
    assert [(p.test, p.position) for p in d.position_effects if p.significant] == [("./get_hits_test.sh", 0)]
    reset = [c for c in d.carryover if c.test == "./get_hits_test.sh" and c.after == RESET][0]
    assert reset.significant is True and reset.effect_pct == pytest.approx(first.effect_pct)
    assert [(c.test, c.after) for c in d.carryover if c.significant] == [("./get_hits_test.sh", RESET)]
    assert not any(t.significant for t in d.trends)
    assert d.interleaving is not None
    assert d.interleaving.interleaved is False
    assert d.interleaving.detail == InterleavingDetail((ArmFirst("fixed", 50, "random", 50),))


def test_npbench_arms_were_interleaved() -> None:
    table, _ = load(NPBENCH, "all_test_results.csv")
    d = diagnose(table)
    assert d is not None and d.interleaving is not None
    assert d.interleaving.interleaved is True
    assert (d.interleaving.n_fixed_runs, d.interleaving.n_random_runs) == (100, 100)
