"""The analysis of a fleet: stratified combined rows, per-worker verdicts, the fleet and identity
diagnostics, on tables and on real journals written by several workers."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.analyze import fleet
from benchsage.analyze.effects import SIZE_FIELDS
from benchsage.analyze.notes import FileChanged
from benchsage.analyze.order import analyze_table
from benchsage.analyze.pipeline import Options, analyze_loaded
from benchsage.api import analyze_sources
from benchsage.analyze.strata import METHOD
from benchsage.analyze.verdict import TestVerdict
from benchsage.stats import van_elteren
from benchsage.store.importers.benchsage import read_experiment
from benchsage.store.table import TrialTable
from benchsage.report.json import analysis_json, analysis_json_text

sys.path.insert(0, str(Path(__file__).parent))
from fleet_data import snapshot, tidy_fleet, write_fleet  # noqa: E402

LEVELS = {"node1": 1.0, "node2": 1.5, "node3": 3.0}


def rows_of(doc: dict) -> dict[str, dict]:
    return {r["test"]: r for r in doc["tests"] if r["primary"]}


# -- the combined rows ------------------------------------------------------------------------------


def test_one_worker_gives_the_single_worker_json() -> None:
    table = tidy_fleet({"only": 1.0}, effect=0.1)
    doc = analysis_json(analyze_loaded(table))
    assert "combined" not in doc and "workers" not in doc
    assert set(doc["diagnostics"]) == {"interleaving", "position_effects", "carryover", "trends", "workers", "carryover_balance"}
    assert doc["tests"] == analysis_json(analyze_table(table))["tests"]


def test_combined_rows_are_van_elteren_on_raw_values() -> None:
    table = tidy_fleet(LEVELS, effect=0.05, seed=3)
    analysis = analyze_table(table)
    assert analysis.combined is not None and analysis.combined.workers == 3 and analysis.combined.method == METHOD
    for v in analysis.tests:
        code = table.test_names.index(v.test)
        sel = table.test == code
        strata = [(table.value[sel & (table.worker == w) & (table.arm == 0)], table.value[sel & (table.worker == w) & (table.arm == 1)]) for w in range(3)]
        # Direct formula: per worker the rank sum of the random arm, weights 1/(n+1).
        num = var = 0.0
        for x0, x1 in strata:
            both = np.concatenate([x0, x1])
            n, m = len(both), len(x1)
            r = stats.rankdata(both)[len(x0):].sum()
            num += (r - m * (n + 1) / 2) / (n + 1)
            var += m * (n - m) * (n + 1) / 12 / (n + 1) ** 2
        assert v.kw_h == pytest.approx(num * num / var, rel=1e-9)
        assert v.kw_p == pytest.approx(stats.chi2.sf(num * num / var, 1), rel=1e-9)
        n = v.n_fixed + v.n_random
        assert v.eta2 == pytest.approx((v.kw_h - 1) / (n - 2), rel=1e-12)
    assert [v.test for v in analysis.significant_tests] == ["t0"]


def test_pooled_kruskal_wallis_misses_what_the_stratified_test_finds() -> None:
    table = tidy_fleet({"n1": 1.0, "n2": 1.4, "n3": 2.1, "n4": 3.0}, effect=0.03, seed=11, runs_per_arm=15)
    stratified = {v.test: v for v in analyze_table(table).tests}
    pooled = {v.test: v for v in analyze_table(TrialTable.from_columns(
        test=np.array(table.test_names)[table.test], arm=table.arm, value=table.value)).tests}
    assert stratified["t0"].significant is True
    assert pooled["t0"].significant is False


def test_level_free_descriptive_fields() -> None:
    """Workers exactly 1x, 1.5x, 3x of each other: the level-free values are one worker's values
    repeated, so the medians are the fleet's typical level and Δ% is the within-worker one."""
    base = tidy_fleet({"node1": 1.0}, effect=0.1, seed=5)
    names = np.array(base.test_names)[base.test]
    arms = np.where(base.arm == 0, "fixed", "random")
    parts = [(w, level) for w, level in LEVELS.items()]
    table = TrialTable.from_columns(
        test=np.concatenate([names] * 3), arm=np.concatenate([arms] * 3),
        value=np.concatenate([base.value * level for _, level in parts]),
        worker=np.concatenate([[w] * len(base) for w, _ in parts]),
    )
    one = {v.test: v for v in analyze_table(base).tests}
    for v in analyze_table(table).tests:
        alone = one[v.test]
        # M / m = 1.5 / level: everything in the units of the middle worker (level 1.5).
        assert v.median_fixed == pytest.approx(alone.median_fixed * 1.5, rel=1e-12)
        assert v.median_random == pytest.approx(alone.median_random * 1.5, rel=1e-12)
        assert v.delta_pct == pytest.approx(alone.delta_pct, rel=1e-9)
        assert v.cv_fixed == pytest.approx(alone.cv_fixed, rel=1e-9)
        assert (v.n_fixed, v.n_random) == (3 * alone.n_fixed, 3 * alone.n_random)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_workers=st.integers(1, 4), effect=st.sampled_from([0.0, 0.05]))
def test_each_worker_running_its_own_tests_changes_nothing(seed: int, n_workers: int, effect: float) -> None:
    """Tests split between workers (no comparison spans two): the combined rows are exactly the
    single-worker analysis, and each worker's rows its own analysis."""
    table = tidy_fleet({"w": 1.0}, effect=effect, seed=seed, tests=6, runs_per_arm=6)
    owner = np.array([f"w{t % n_workers}" for t in range(6)])
    split = TrialTable.from_columns(
        test=np.array(table.test_names)[table.test], arm=table.arm, value=table.value, worker=owner[table.test],
        run=table.run, position=table.position, time=table.time,
    )
    plain = analysis_json(analyze_table(table))["tests"]
    ours = analyze_loaded(split, Options(diagnostics=False))
    assert json.dumps(analysis_json(ours)["tests"]) == json.dumps(plain)
    assert (ours.combined is not None) == (n_workers > 1)
    combined = {(v.test, v.metric): v for v in ours.tests}
    for w in ours.workers:
        alone = analyze_table(split.select(split.worker == split.worker_names.index(w.worker)))
        assert json.dumps([_level_free(v) for v in w.tests], default=str) == json.dumps([_level_free(v) for v in alone.tests], default=str)
        assert (w.order_matters, w.alpha_corrected) == (alone.order_matters, alone.alpha_corrected)
        # The shift's interval and the detectable shift keep the combined family's level.
        assert [_sizes(v) for v in w.tests] == [_sizes(combined[(v.test, v.metric)]) for v in w.tests]


def _level_free(v: TestVerdict) -> dict:
    """A row's fields but those computed at its family's level (effects.SIZE_FIELDS)."""
    return {k: x for k, x in vars(v).items() if k not in SIZE_FIELDS}


def _sizes(v: TestVerdict) -> tuple:
    return tuple(getattr(v, k) for k in SIZE_FIELDS)


# -- per-worker verdicts ----------------------------------------------------------------------------


def test_per_worker_verdicts_are_each_workers_own_analysis() -> None:
    table = tidy_fleet(LEVELS, effect=0.08, seed=2)
    analysis = analyze_loaded(table)
    assert [w.worker for w in analysis.workers] == list(LEVELS)
    for w in analysis.workers:
        alone = analyze_table(table.select(table.worker == table.worker_names.index(w.worker)))
        assert w.tests == alone.tests
        assert w.order_matters == alone.order_matters and w.alpha_corrected == pytest.approx(0.05 / 3)
        assert w.order_matters is True
    doc = analysis_json(analysis)
    assert [w["worker"] for w in doc["workers"]] == list(LEVELS)
    assert set(doc["workers"][0]["tests"][0]) == set(doc["tests"][0])


def test_recorrect_is_what_an_analysis_of_the_rows_alone_gives() -> None:
    table = tidy_fleet({"w": 1.0}, effect=0.04, seed=9, tests=5)
    full = analyze_table(table, correction="holm")
    rows, alpha_corrected, matters = fleet.recorrect(full.tests[:3], "holm", 0.05)
    alone = analyze_table(table.select(table.test < 3), correction="holm")
    assert [_level_free(v) for v in rows] == [_level_free(v) for v in alone.tests]
    assert alpha_corrected == alone.alpha_corrected and matters == alone.order_matters
    # detectable is judged again in the new family; the interval and the detectable shift keep
    # the level they were computed at, which shift_level names
    assert [v.detectable for v in rows] == [v.detectable for v in alone.tests]
    assert [_sizes(v) for v in rows] == [_sizes(v) for v in full.tests[:3]]
    assert {v.shift_level for v in rows} == {1 - 0.05 / 5}


# -- the fleet diagnostic -------------------------------------------------------------------------


def test_fleet_rows_against_scipy_and_numpy() -> None:
    table = tidy_fleet({"node1": 1.0, "node2": 1.0, "node3": 1.5}, seed=4)
    rows = {r.test: r for r in fleet.fleet_rows(table, alpha=0.05, correction="bonferroni")}
    assert set(rows) == {"t0", "t1", "t2"}
    for test, r in rows.items():
        sel = table.test == table.test_names.index(test)
        samples = [table.value[sel & (table.worker == w)] for w in range(3)]
        ref = stats.kruskal(*samples)
        assert r.kw_h == pytest.approx(ref.statistic, rel=1e-9) and r.kw_p == pytest.approx(ref.pvalue, rel=1e-9)
        assert r.df == 2 and r.workers == 3 and r.p_adjusted == pytest.approx(min(1.0, 3 * ref.pvalue), rel=1e-9)
        assert r.medians == pytest.approx({f"node{i + 1}": float(np.median(s)) for i, s in enumerate(samples)}, rel=1e-12)
        assert r.n == {"node1": 20, "node2": 20, "node3": 20}
        meds = [float(np.median(s)) for s in samples]
        assert r.spread_pct == pytest.approx((max(meds) - min(meds)) / min(meds) * 100, rel=1e-12)
        assert r.significant is True and r.outliers == ("node3",)
        # The outlier test: node3 against the other two pooled, Mann-Whitney (asymptotic, no continuity).
        mw = stats.mannwhitneyu(samples[2], np.concatenate(samples[:2]), method="asymptotic", use_continuity=False)
        assert mw.pvalue < 0.05 / 3 / 3


def test_an_agreeing_fleet_has_no_outliers() -> None:
    hits = 0
    for seed in range(20):
        rows = fleet.fleet_rows(tidy_fleet({"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, seed=seed), alpha=0.05, correction="bonferroni")
        hits += any(r.significant for r in rows)
        assert all(r.outliers == () for r in rows if not r.significant)
    assert hits <= 3  # family-wise 5% over 20 fleets: 1 expected


def test_two_workers_that_differ_are_both_listed() -> None:
    rows = fleet.fleet_rows(tidy_fleet({"a": 1.0, "b": 1.3}, seed=1), alpha=0.05, correction="holm")
    assert all(r.significant and r.outliers == ("a", "b") for r in rows)


def test_workers_with_too_few_values_are_left_out() -> None:
    table = tidy_fleet({"a": 1.0, "b": 1.0}, runs_per_arm=10)
    few = table.select((table.worker == 0) | (table.run % 1000 < 2))  # b: 2 runs, 2 values per test
    assert fleet.fleet_rows(few, alpha=0.05, correction="bonferroni") == ()


# -- on real journals -----------------------------------------------------------------------------


def test_a_fleet_journal_end_to_end(tmp_path: Path) -> None:
    write_fleet(tmp_path, {"node1": 1.0, "node2": 1.0, "node3": 1.6}, effect=0.15, seed=1,
                snapshots={"node3": {"files": {"/srv/exp/bin/app": "9" * 64, "/usr/bin/python3": "2" * 64}, "kernel": "6.1.0-21-amd64"}})
    analysis, table = analyze_sources([str(tmp_path)], format="benchsage")
    assert table.worker_names == ("node1", "node2", "node3")
    assert set(table.provenance["run_boot_ids"].values()) == {f"node{w}-boot-{r}" for w, r in
                                                              [(w, r) for w in (1, 2, 3) for r in range(16 * (w - 1), 16 * w)]}
    doc = json.loads(analysis_json_text(analysis))
    assert doc["combined"]["workers"] == 3 and doc["combined"]["method"].startswith("stratified by worker: van Elteren")
    assert [w["worker"] for w in doc["workers"]] == ["node1", "node2", "node3"]
    assert rows_of(doc)["a"]["significant"] is True and doc["order_matters"] is True
    identity = doc["diagnostics"]["identity"]
    assert identity["identical"] is False and identity["workers"] == ["node1", "node2", "node3"]
    assert identity["differences"] == [
        {"what": "file bin/app", "values": {"node1": "sha256:" + "1" * 64, "node2": "sha256:" + "1" * 64, "node3": "sha256:" + "9" * 64}},
        {"what": "kernel", "values": {"node1": "6.1.0-18-amd64", "node2": "6.1.0-18-amd64", "node3": "6.1.0-21-amd64"}},
    ]
    fleet_doc = {r["test"]: r for r in doc["diagnostics"]["fleet"]}
    assert set(fleet_doc) == {"a", "b", "c"}  # wall_time, the primary metric
    assert all(r["outliers"] == ["node3"] and r["significant"] for r in fleet_doc.values())
    assert fleet_doc["b"]["spread_pct"] == pytest.approx(60, abs=5)
    warnings = doc["warnings"]
    assert any(w.startswith("workers ran different versions of bin/app: sha256:111111111111 on node1, node2; sha256:999999999999 on node3") for w in warnings)
    assert "workers differ in kernel: '6.1.0-18-amd64' on node1, node2; '6.1.0-21-amd64' on node3" in warnings
    assert any(w.startswith("the workers' results differ in 3 of 3 tests") and "node3 (3 tests)" in w for w in warnings)
    # Said once, by the identity diagnostic, not again by the run-to-run snapshot comparison.
    assert not any("differs between" in w for w in warnings)


def test_identical_fleet_journal(tmp_path: Path) -> None:
    write_fleet(tmp_path, seed=3)
    analysis, _ = analyze_sources([str(tmp_path)], format="benchsage")
    doc = analysis_json(analysis)
    assert doc["diagnostics"]["identity"] == {"identical": True, "differences": [], "workers": ["node1", "node2", "node3"], "missing": []}
    assert doc["order_matters"] is False
    assert not any("workers" in w for w in doc["warnings"])


def test_a_worker_whose_software_changed_between_runs(tmp_path: Path) -> None:
    write_fleet(tmp_path, {"node1": 1.0, "node2": 1.0}, runs_per_arm=3, seed=2)
    from benchsage.store.journal import Journal

    journal = Journal.open(tmp_path)
    last = [a for a in journal.attempts() if a["worker"] == "node2"][-1]
    journal.record_snapshot(last["id"], snapshot("node2", last["run_id"], app="7" * 64))
    journal.close()
    analysis, _ = analyze_sources([str(tmp_path)], format="benchsage")
    d = analysis.diagnostics
    assert d is not None and d.identity is not None
    (diff,) = d.identity.differences
    assert diff.values == {"node1": "sha256:" + "1" * 64, "node2": f"sha256:{'1' * 64} / sha256:{'7' * 64}"}
    changed = [w for w in analysis.warnings if isinstance(w, FileChanged)]
    assert [(w.path, w.group, w.worker) for w in changed] == [("/srv/exp/bin/app", "", "node2")]


def test_tidy_fleet_without_snapshots_has_no_identity() -> None:
    analysis = analyze_loaded(tidy_fleet(LEVELS))
    doc = analysis_json(analysis)
    assert doc["diagnostics"]["identity"] is None and len(doc["diagnostics"]["fleet"]) == 3


def test_no_diagnostics_keeps_the_per_worker_verdicts() -> None:
    analysis = analyze_loaded(tidy_fleet(LEVELS), Options(diagnostics=False))
    doc = analysis_json(analysis)
    assert "diagnostics" not in doc and len(doc["workers"]) == 3


def test_journal_rows_and_boot_ids_in_the_tidy_export(tmp_path: Path) -> None:
    from benchsage.store.exporters.tidy import COLUMNS, tidy_table

    write_fleet(tmp_path, {"node1": 1.0, "node2": 1.0}, runs_per_arm=2)
    exported = tidy_table(tmp_path)
    assert tuple(exported.column_names) == COLUMNS and {"worker", "boot_id"} <= set(COLUMNS)
    frame = exported.to_pydict()
    pairs = set(zip(frame["worker"], frame["run"], frame["boot_id"]))
    assert pairs == {(w, r, f"{w}-boot-{r}") for w, runs in (("node1", range(4)), ("node2", range(4, 8))) for r in runs}
    table = read_experiment(tmp_path)
    assert set(np.array(table.worker_names)[table.worker]) == {"node1", "node2"}


def test_the_tidy_export_reads_back_with_workers_and_boot_ids(tmp_path: Path) -> None:
    """A fleet exported to tidy CSV and analysed from the file: each run keeps its worker and its
    boot id, as read from the journal (the report's runs-and-boots per worker need both)."""
    from benchsage.store.exporters.tidy import tidy_table
    from benchsage.store.importers.tidy import read_tidy

    write_fleet(tmp_path / "exp", {"node1": 1.0, "node2": 1.0, "node3": 1.2}, runs_per_arm=3)
    csv_path = tmp_path / "fleet.csv"
    import pyarrow.csv as pacsv

    pacsv.write_csv(tidy_table(tmp_path / "exp"), csv_path)
    journal = read_experiment(tmp_path / "exp")
    tidy = read_tidy(csv_path)

    def by_label(table: TrialTable) -> dict:
        workers, boots = table.provenance["run_workers"], table.provenance["run_boot_ids"]
        assert set(workers) == set(boots)
        return {(str(workers[r]), boots[r]) for r in workers}

    assert by_label(tidy) == by_label(journal) and len(by_label(tidy)) == 3 * 6
    # Without a boot_id column the workers are still known; boots are not invented.
    plain = tmp_path / "plain.csv"
    pacsv.write_csv(tidy_table(tmp_path / "exp").drop(["boot_id"]), plain)
    assert "run_boot_ids" not in read_tidy(plain).provenance and len(read_tidy(plain).provenance["run_workers"]) == 18


def test_old_journal_without_boot_ids(tmp_path: Path) -> None:
    """A journal written before trials recorded a boot id (the column dropped; opening it adds
    the column back, empty, where the file is writable) reads and exports."""
    import sqlite3

    from benchsage.store.exporters.tidy import tidy_table
    from benchsage.store.journal import journal_path

    write_fleet(tmp_path, {"node1": 1.0, "node2": 1.0}, runs_per_arm=2)
    with sqlite3.connect(journal_path(tmp_path)) as conn:
        conn.execute("ALTER TABLE trials DROP COLUMN boot_id")
    conn.close()
    table = read_experiment(tmp_path)
    assert "run_boot_ids" not in table.provenance
    assert set(tidy_table(tmp_path).to_pydict()["boot_id"]) == {None}


def test_van_elteren_is_the_combined_test_used() -> None:
    """The combined p of each row is stats.van_elteren's on the raw values with worker strata."""
    table = tidy_fleet(LEVELS, seed=8)
    res = van_elteren(table.value, table.test.astype(np.int64), table.worker.astype(np.int64), table.arm.astype(np.int64), 3, 3)
    assert [v.kw_p for v in analyze_table(table).tests] == pytest.approx(res.pvalue.tolist(), rel=1e-12)


def test_boot_ids_of_a_journal_without_the_column() -> None:
    import sqlite3

    from benchsage.store.importers.benchsage import trial_boot_ids

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE trials (id INTEGER PRIMARY KEY, worker TEXT)")
    conn.execute("INSERT INTO trials(worker) VALUES ('a')")
    assert trial_boot_ids(conn) == {}
    conn.execute("ALTER TABLE trials ADD COLUMN boot_id TEXT")
    conn.execute("UPDATE trials SET boot_id = 'b1'")
    assert trial_boot_ids(conn) == {1: "b1"}


def test_a_fleets_diagnostics_remove_each_workers_level(tmp_path: Path) -> None:
    """A slower machine whose runs end later is not a trend over time, nor a position effect."""
    from benchsage.analyze.diagnostics import diagnose

    write_fleet(tmp_path, {"node1": 1.0, "node2": 1.0, "node3": 1.6}, seed=1)
    analysis, table = analyze_sources([str(tmp_path)], format="benchsage")
    pooled = diagnose(table)
    assert pooled is not None and any(t.significant for t in pooled.trends)
    d = analysis.diagnostics
    assert d is not None and not any(t.significant for t in d.trends)
    assert not any(p.significant for p in d.position_effects) and not any(c.significant for c in d.carryover)
    assert d.interleaving == pooled.interleaving


# -- naming the odd worker: Shaffer's step-down after the Kruskal-Wallis gate ------------------------


def _noisy_fleet(rng: np.random.Generator, levels: Sequence[float], values: int = 10, cv: float = 0.2, tests: int = 1) -> TrialTable:
    """Each worker measures each test `values` times, lognormal noise of this CV (a loaded machine)."""
    sigma = math.sqrt(math.log1p(cv * cv))
    rows: dict[str, list] = {k: [] for k in ("test", "arm", "value", "worker", "run", "position")}
    for w, level in enumerate(levels):
        for r in range(values):
            for t in range(tests):
                rows["test"].append(f"t{t}")
                rows["arm"].append(("fixed", "random")[r % 2])
                rows["value"].append(level * (1 + t) * math.exp(sigma * rng.standard_normal()))
                rows["worker"].append(f"node{w + 1}")
                rows["run"].append(1000 * w + r)
                rows["position"].append(t)
    return TrialTable.from_columns(**rows)


def test_shaffer_limits_are_shaffers_table() -> None:
    # Shaffer (1986), Table 1: the most hypotheses that can be true after i - 1 rejections (with the gate)
    assert fleet.shaffer_limits(2) == (0,)
    assert fleet.shaffer_limits(3) == (1, 1, 1)
    assert fleet.shaffer_limits(4) == (3, 3, 3, 3, 2, 1)
    assert fleet.shaffer_limits(5) == (6, 6, 6, 6, 6, 4, 4, 3, 2, 1)


def test_the_odd_worker_of_three_with_ten_values_each_is_named() -> None:
    # the third worker 50% slower, 10 values per worker, CV 20%: Holm over the three pairs
    # named it in 78% of such fleets, the step-down after the gate in 88% (docs/validation.md)
    rng = np.random.default_rng(24)
    named = wrong = 0
    for _ in range(40):
        (row,) = fleet.fleet_rows(_noisy_fleet(rng, [1.0, 1.0, 1.5]), alpha=0.05, correction="bonferroni")
        named += row.outliers == ("node3",)
        wrong += any(w != "node3" for w in row.outliers)
    assert named >= 32 and wrong == 0


def test_pairs_of_three_workers_are_tested_at_the_full_share_once_the_gate_rejects() -> None:
    # p of the two pairs with node3 between share / 3 and share: Holm over the pairs kept them,
    # Shaffer's step-down rejects both (with three workers at most one pair can be alike)
    share = 0.05
    pairs = [(0, 2, 0.03), (1, 2, 0.04), (0, 1, 0.7)]
    assert fleet._outliers(pairs, 3, share) == [2]
    assert fleet._outliers([(0, 2, 0.03), (1, 2, 0.06), (0, 1, 0.7)], 3, share) == []


def test_an_agreeing_fleet_names_no_worker_more_often_than_alpha() -> None:
    rng = np.random.default_rng(5)
    reps = 150
    named = sum(any(r.outliers for r in fleet.fleet_rows(_noisy_fleet(rng, [1.0, 1.0, 1.0], tests=3), alpha=0.05,
                                                          correction="bonferroni")) for _ in range(reps))
    assert named <= 14  # family-wise at most 5%: more than 14 of 150 (9.3%) has probability < 0.01
