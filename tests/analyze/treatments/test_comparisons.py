"""Declared comparisons on tables with known effects: the winner that flips with the environment,
on a worker of a fleet or in a combination of factor levels; reference values from scipy; the
correction over claims; swapping a and b; bad claims; the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.report.quantity import sig3
from benchsage.analyze.treatments import CompareRequest, TreatmentOptions, analyze_treatments
from benchsage.errors import UsageError
from benchsage.stats.compare import ratio_ci_bonett_price
from benchsage.store.table import TrialTable
from benchsage.report.treatments_json import comparison_json
from benchsage.report.words import comparison_sentence

sys.path.insert(0, str(Path(__file__).parent))
from treatment_data import ENV, build, claims, columns_of, const, env_time, fleet_table  # noqa: E402


def test_a_comparison_whose_winner_depends_on_the_environment_flips_and_sleeps_get_their_ratio() -> None:
    table = build({"envsize": env_time, "s15": const(0.015), "s20": const(0.020), "s30": const(0.030)})
    rows = analyze_treatments(table, options=claims(("envsize", "s15"), ("s20", "s30"))).comparisons
    flip, sleeps = rows
    assert flip.contexts.n == 8 and flip.contexts.flips
    assert flip.contexts.a_better >= 3 and flip.contexts.b_better >= 3
    assert sleeps.ratio == pytest.approx(0.667, abs=0.01)
    assert sleeps.ci[0] <= 2 / 3 <= sleeps.ci[1] and sleeps.ci[1] - sleeps.ci[0] < 0.02
    assert sleeps.better == "a" and sleeps.overall.ci_method == "bonett-price"
    assert sleeps.holds_in == {"fixed": True, "random": True}
    assert not sleeps.contexts.flips and sleeps.contexts.a_better == 8


def test_comparison_matches_scipy_mann_whitney_and_the_bonett_price_interval() -> None:
    table = build({"o3": const(0.0931), "o2": const(0.100)}, contexts=0, runs=15, cv=0.03, seed=7)
    (row,) = analyze_treatments(table, options=claims(("o3", "o2"))).comparisons
    frame = table.to_pandas()
    a, b = (frame[frame.test == t].value.to_numpy() for t in ("o3", "o2"))
    assert row.p == pytest.approx(stats.mannwhitneyu(a, b, method="exact").pvalue, rel=1e-9)  # 30 values each, no ties
    assert row.ratio == pytest.approx(np.median(a) / np.median(b), rel=1e-12)
    assert row.ci == ratio_ci_bonett_price(a, b)[0]
    assert row.contexts is None and row.per_context == ()
    for arm in ("fixed", "random"):
        fa, fb = (frame[(frame.test == t) & (frame.arm == arm)].value.to_numpy() for t in ("o3", "o2"))
        assert comparison_json(row)["arms"][arm]["p"] == pytest.approx(stats.mannwhitneyu(fa, fb, method="exact").pvalue, rel=1e-9)
    doc = comparison_json(row)
    assert {"a", "b", "metric", "ratio", "ci", "p", "better", "method", "holds_in", "contexts"} <= set(doc)
    assert doc["method"] == "mann-whitney" and doc["ci_method"] == "bonett-price" and doc["contexts"] is None
    bauer = analyze_treatments(table, options=TreatmentOptions((CompareRequest("o3", "o2"),), ratio_ci="bauer")).comparisons[0]
    assert bauer.overall.ci_method == "bauer-exact"
    touati = analyze_treatments(table, options=TreatmentOptions((CompareRequest("o3", "o2"),), compare_method="touati")).comparisons[0]
    assert touati.overall.method.startswith("touati:") and comparison_json(touati)["method"] == touati.overall.method


def test_comparisons_are_corrected_over_the_claims() -> None:
    table = build({"a": const(1.0), "b": const(1.004), "c": const(1.0)}, contexts=0, runs=10, cv=0.01, seed=11)
    rows = analyze_treatments(table, options=claims(("a", "b"), ("a", "c"), ("b", "c"))).comparisons
    p = np.array([r.p for r in rows])
    assert [r.p_adjusted for r in rows] == pytest.approx(np.minimum(1, 3 * p).tolist())
    assert all(r.alpha_each == pytest.approx(0.05 / 3) for r in rows)
    holm = analyze_treatments(table, correction="holm", options=claims(("a", "b"), ("a", "c"), ("b", "c"))).comparisons
    assert all(h.p_adjusted <= r.p_adjusted for h, r in zip(holm, rows))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), ratio=st.floats(0.5, 2.0), n=st.integers(5, 40))
def test_swapping_a_and_b_inverts_the_ratio_and_swaps_the_winner(seed: int, ratio: float, n: int) -> None:
    table = build({"a": const(ratio), "b": const(1.0)}, contexts=4, runs=n, cv=0.05, seed=seed)
    ab, ba = analyze_treatments(table, options=claims(("a", "b"), ("b", "a"))).comparisons
    assert ba.ratio == pytest.approx(1 / ab.ratio, rel=1e-12)
    assert ba.ci == (pytest.approx(1 / ab.ci[1], rel=1e-9), pytest.approx(1 / ab.ci[0], rel=1e-9))
    assert ba.p == pytest.approx(ab.p, rel=1e-9)
    assert {ab.better, ba.better} in ({None}, {"a", "b"})
    assert (ab.contexts.a_better, ab.contexts.b_better) == (ba.contexts.b_better, ba.contexts.a_better)


def test_unknown_test_or_metric_in_a_claim_is_a_usage_error_naming_it() -> None:
    table = build({"x": const(1.0), "y": const(2.0)}, contexts=0, runs=6)
    with pytest.raises(UsageError, match=r"--compare x,nope: no test 'nope' in the data \(tests: 'x', 'y'\)"):
        analyze_treatments(table, options=claims(("x", "nope")))
    with pytest.raises(UsageError, match=r"test 'x' has no values of metric 'rss' \(it has: wall_time\)"):
        analyze_treatments(table, options=claims(("x", "y", "rss")))
    with pytest.raises(UsageError, match="the same test"):
        analyze_treatments(table, options=claims(("x", "x")))
    with pytest.raises(UsageError, match="unknown comparison method"):
        TreatmentOptions(compare_method="t-test")


def test_a_claim_of_the_spec_whose_test_has_no_values_gets_a_reason() -> None:
    table = build({"x": const(1.0), "y": const(2.0)}, contexts=0, runs=6)
    declared = TrialTable.from_columns(**columns_of(table), provenance={"compare": [{"a": "x", "b": "gone", "metric": None}]})
    (row,) = analyze_treatments(declared).comparisons
    assert row.p is None and row.better is None and "no test 'gone'" in row.overall.reason
    assert comparison_json(row)["ratio"] is None


def test_too_few_values_per_context_are_said_so_not_read_as_undecided() -> None:
    table = build({"a": const(1.0), "b": const(1.2)}, contexts=8, runs=16)  # 4 values of each test per context
    (row,) = analyze_treatments(table, options=claims(("a", "b"))).comparisons
    assert row.better == "a" and row.contexts.undecided == 8 and not row.contexts.flips
    assert row.holds_in == {"fixed": True, "random": True} and all(c.comparison.p is None for c in row.per_context)


def test_compare_on_the_command_line(tmp_path: Path) -> None:
    frame = build({"o3": const(0.0931), "o2": const(0.1)}, contexts=0, runs=10).to_pandas()
    frame.rename(columns={"arm": "order"}).to_csv(tmp_path / "t.csv", index=False)

    def bench(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "benchsage", "analyze", "t.csv", *args], cwd=tmp_path, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=120)

    ok = bench("--compare", "o3,o2", "--json")
    assert ok.returncode == 0, ok.stderr
    (row,) = json.loads(ok.stdout)["comparisons"]
    assert row["better"] == "a" and row["ratio"] == pytest.approx(0.931, abs=0.01)
    text = bench("--compare", "o3,o2").stdout
    # The claim's answer is on the first screen, right under the verdict: a factor with its interval.
    headline = f"o3 ran {sig3(1 / row['ratio'])}× faster than o2 [{sig3(1 / row['ci'][1])}, {sig3(1 / row['ci'][0])}] (95% CI; Mann-Whitney p = "
    assert text.splitlines()[1].startswith(headline), text
    assert text.splitlines()[1].endswith("; holds in both orders") and "\x1b" not in text
    for args, message in ((["--compare", "o3,o4"], "--compare o3,o4: no test 'o4' in the data (tests: 'o3', 'o2')"),
                          (["--compare", "o3,o2,max_rss"], "test 'o3' has no values of metric 'max_rss' (it has: wall_time)"),
                          (["--compare", "o3"], "expected A,B or A,B,METRIC")):
        bad = bench(*args)
        assert bad.returncode == 2 and message in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert "Traceback" not in bad.stderr


def test_a_claim_that_flips_on_one_worker_of_a_fleet_says_so() -> None:
    # o3 beats o2 by 7% on two machines; the third runs another build of o3, 10% slower than o2.
    table = fleet_table({"w1": {"o3": 0.093, "o2": 0.100}, "w2": {"o3": 0.093, "o2": 0.100}, "w3": {"o3": 0.110, "o2": 0.100}})
    (row,) = analyze_treatments(table, options=claims(("o3", "o2"))).comparisons
    assert row.better == "a"  # pooled over the fleet, o3 still wins
    assert (row.workers.n, row.workers.a_better, row.workers.b_better, row.workers.flips) == (3, 2, 1, True)
    by = {s.name: s for s in row.per_worker}
    assert [by[w].better for w in ("w1", "w2", "w3")] == ["a", "a", "b"]
    frame = table.to_pandas()
    on3 = frame[frame.worker == "w3"]
    a, b = (on3[on3.test == t].value.to_numpy() for t in ("o3", "o2"))
    assert by["w3"].comparison.ratio == pytest.approx(np.median(a) / np.median(b), rel=1e-12)
    assert by["w3"].comparison.ci == ratio_ci_bonett_price(a, b, 1 - row.alpha_each)[0]  # each worker at the claim's share of alpha
    assert by["w3"].p_adjusted == pytest.approx(min(1.0, by["w3"].comparison.p * 3), rel=1e-12)  # Bonferroni over 3 workers
    doc = comparison_json(row)
    assert doc["workers"] == {"n": 3, "a_better": 2, "b_better": 1, "undecided": 0, "flips": True}
    assert [w["worker"] for w in doc["per_worker"]] == ["w1", "w2", "w3"] and doc["per_worker"][2]["better"] == "b"


def test_a_claim_that_holds_on_every_worker_and_one_worker_has_no_worker_keys() -> None:
    same = {"o3": 0.093, "o2": 0.100}
    (row,) = analyze_treatments(fleet_table({"w1": same, "w2": same}), options=claims(("o3", "o2"))).comparisons
    assert (row.workers.n, row.workers.a_better) == (2, 2)
    (alone,) = analyze_treatments(fleet_table({"w1": same}), options=claims(("o3", "o2"))).comparisons
    assert alone.workers is None and "workers" not in comparison_json(alone) and "per_worker" not in comparison_json(alone)


def test_a_claim_is_answered_in_each_combination_of_factor_levels() -> None:
    # o3 beats o2 by 7% with factor A low and loses by 10% with it high; B does not matter.
    o3 = lambda c, o, f: 0.093 if f["A"] == "lo" else 0.110  # noqa: E731
    table = build({"o3": o3, "o2": const(0.100)}, contexts=0, factors=2, runs=32, seed=9)
    (row,) = analyze_treatments(table, options=claims(("o3", "o2"))).comparisons
    s = row.factor_cells
    assert (s.n, s.a_better, s.b_better, s.flips) == (4, 2, 2, True)
    by = {c.name: c for c in row.per_factor_cell}
    assert set(by) == {"A=hi, B=hi", "A=hi, B=lo", "A=lo, B=hi", "A=lo, B=lo"}
    assert by["A=lo, B=hi"].better == "a" and by["A=hi, B=lo"].better == "b"
    frame = table.to_pandas()
    cell = frame[(frame["factor:A"] == "lo") & (frame["factor:B"] == "hi")]
    a, b = (cell[cell.test == t].value.to_numpy() for t in ("o3", "o2"))
    assert by["A=lo, B=hi"].comparison.ratio == pytest.approx(np.median(a) / np.median(b), rel=1e-12)
    assert comparison_json(row)["factor_cells"]["flips"] is True
    # Without factors the row has no factor keys.
    (plain,) = analyze_treatments(build({"o3": const(0.093), "o2": const(0.100)}, contexts=0), options=claims(("o3", "o2"))).comparisons
    assert plain.factor_cells is None and "factor_cells" not in comparison_json(plain)


def test_a_winner_that_flips_with_the_environment_size_is_found_with_16_runs_per_arm() -> None:
    # o3 2x faster than o2 with a small environment, 1.5x slower with a large one; 8 contexts
    # of 4 values per test each: no context decides on its own, the environment's halves do.
    table = build({"o3": lambda c, o, f: 0.010 if ENV[c] < 5000 else 0.030, "o2": const(0.020)}, runs=16, cv=0.1)
    (row,) = analyze_treatments(table, options=claims(("o3", "o2"))).comparisons
    s = row.contexts
    assert (s.n, s.undecided) == (8, 8) and all(c.comparison.n_a == 4 for c in row.per_context)
    assert s.flips and s.flip_dimension == "env_bytes"
    doc = comparison_json(row)["contexts"]
    env = doc["by"]["env_bytes"]
    assert [(lv["level"], lv["better"], lv["n_a"], lv["n_b"]) for lv in env["levels"]] == [("0-4200", "a", 16, 16), ("5600-9800", "b", 16, 16)]
    assert doc["by"]["cpus"]["flips"] is False and doc["flip_dimension"] == "env_bytes"
    sentence = comparison_sentence(row)
    assert "flips with env_bytes: o3 better at 0-4200, o2 at 5600-9800" in sentence


def test_a_uniform_winner_does_not_flip_along_any_dimension() -> None:
    table = build({"o3": const(0.010), "o2": const(0.020)}, runs=16, cv=0.1)
    (row,) = analyze_treatments(table, options=claims(("o3", "o2"))).comparisons
    assert not row.contexts.flips and row.contexts.flip_dimension is None
    assert {d.dimension for d in row.contexts.by} == {"env_bytes", "cpus"}
    assert all(lv.better == "a" for d in row.contexts.by for lv in d.levels)
    assert comparison_json(row)["contexts"]["flip_dimension"] is None


def test_factor_levels_are_answered_beside_the_factor_cells() -> None:
    # o3 better with A = lo, worse with A = hi, whatever B: each factor cell holds 8 values
    o3 = lambda c, o, f: 0.050 if f["A"] == "lo" else 0.150  # noqa: E731
    table = build({"o3": o3, "o2": const(0.100)}, contexts=0, factors=2, runs=16, seed=9, cv=0.1)
    (row,) = analyze_treatments(table, options=claims(("o3", "o2"))).comparisons
    assert row.factor_cells is not None and row.factor_cells.flip_dimension == "A"
    by = {d.dimension: d for d in row.factor_cells.by}
    assert by["A"].flips and not by["B"].flips


def test_the_environment_flip_on_the_command_line_from_a_tidy_file(tmp_path: Path) -> None:
    table = build({"o3": lambda c, o, f: 0.010 if ENV[c] < 5000 else 0.030, "o2": const(0.020)}, runs=16, cv=0.1)
    table.to_pandas().rename(columns={"arm": "order"}).to_csv(tmp_path / "t.csv", index=False)
    done = subprocess.run([sys.executable, "-m", "benchsage", "analyze", "t.csv", "--compare", "o3,o2", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["comparisons"]
    assert row["contexts"]["flips"] is True and row["contexts"]["undecided"] == 8 and row["contexts"]["flip_dimension"] == "env_bytes"
    assert [lv["better"] for lv in row["contexts"]["by"]["env_bytes"]["levels"]] == ["a", "b"]
