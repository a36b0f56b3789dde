"""The treatment analyses (analyze/treatments.py) on tables with known effects: reference values
from scipy, the issue's target numbers on synthetic data (the real-process versions are in
tests/cli/test_treatment_targets.py), properties, and bad input."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.analyze.pipeline import Options, analyze_loaded
from benchsage.analyze.treatments import (
    CompareRequest,
    TreatmentOptions,
    analyze_treatments,
    observer_baseline,
    order_rows,
)
from benchsage.errors import UsageError
from benchsage.stats.compare import ratio_ci_bonett_price
from benchsage.stats.factorial import factorial_2k
from benchsage.store.importers.tidy import read_tidy
from benchsage.store.table import TrialTable

ENV = [0, 1400, 2800, 4200, 5600, 7000, 8400, 9800]  # env_bytes of contexts c1..c8
CPUS = ["0", "1", "0", "1", "1", "0", "1", "0"]


def build(values: dict[str, object], *, contexts: int = 8, runs: int = 24, observer: tuple[str, ...] = (), factors: int = 0,
          seed: int = 1, cv: float = 0.01, **meta: object) -> TrialTable:
    """Runs alternating between the arms, each in one cell (context x observer level x factor
    levels), every test once per run; values[test](context, level, factors, rng) is the median.
    Factors are "A", "B", ... with levels "lo", "hi"."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "metric")}
    names = [chr(ord("A") + j) for j in range(factors)]
    dims: dict[str, list] = {}
    cells = list(itertools.product(range(contexts) if contexts else [None], observer or [None], itertools.product(("lo", "hi"), repeat=factors)))
    for run in range(runs * 2):
        context, level, levels = cells[(run // 2) % len(cells)]
        arm = ("fixed", "random")[run % 2]
        order = list(values) if arm == "fixed" else list(rng.permutation(list(values)))
        for position, test in enumerate(order):
            median = values[test](context, level, dict(zip(names, levels)))  # type: ignore[operator]
            cols["test"].append(test)
            cols["arm"].append(arm)
            cols["value"].append(median * (1 + cv * rng.standard_normal()))
            cols["run"].append(run)
            cols["position"].append(position)
            cols["metric"].append("wall_time")
            row: dict[str, str] = {}
            if context is not None:
                row.update({"context": f"c{context + 1}", "context:env_bytes": str(ENV[context % 8] + context // 8),
                            "context:cpus": CPUS[context % 8]})
            if level is not None:
                row["observer"] = level
            row.update({f"factor:{n}": lv for n, lv in zip(names, levels)})
            for k, v in row.items():
                dims.setdefault(k, []).append(v)
    return TrialTable.from_columns(**cols, treatments=dims or None, **meta)


def const(x: float):
    return lambda c, o, f: x


def env_time(c, o, f):  # 10 ms plus 1 ms per 1000 bytes of environment
    return 0.010 + ENV[c % 8] / 1e6


def claims(*pairs: tuple[str, ...]) -> TreatmentOptions:
    return TreatmentOptions(compare=tuple(CompareRequest(*p) for p in pairs))


# --- the numbers ----------------------------------------------------------------------


def test_eight_contexts_flag_an_environment_dependent_test_and_not_a_sleep() -> None:
    table = build({"envsize": env_time, "sleep": const(0.020)})
    effects = {e.test: e for e in analyze_treatments(table).context_effects}
    env, sleep = effects["envsize"], effects["sleep"]
    assert env.significant and env.by["env_bytes"] < 0.01 and env.by_detail["env_bytes"]["significant"]
    assert env.spread_pct == pytest.approx(98, abs=5)  # 10 ms to 19.8 ms
    assert not env.by_detail["cpus"]["significant"]
    assert sleep.significant is False and sleep.spread_pct < 3
    assert not sleep.by_detail["env_bytes"]["significant"]
    # rho = 1 over 8 contexts: the exact p is 2 / 8!, not the t approximation's 0
    assert env.by["env_bytes"] == pytest.approx(2 / 40320)


def test_a_comparison_whose_winner_depends_on_the_environment_flips_and_sleeps_get_their_ratio() -> None:
    table = build({"envsize": env_time, "s15": const(0.015), "s20": const(0.020), "s30": const(0.030)})
    rows = analyze_treatments(table, options=claims(("envsize", "s15"), ("s20", "s30"))).comparisons
    flip, sleeps = rows
    assert flip.contexts.n == 8 and flip.contexts.flips
    assert flip.contexts.a_better >= 3 and flip.contexts.b_better >= 3
    assert "flips in" in flip.sentence() or flip.better is None
    assert sleeps.ratio == pytest.approx(0.667, abs=0.01)
    assert sleeps.ci[0] <= 2 / 3 <= sleeps.ci[1] and sleeps.ci[1] - sleeps.ci[0] < 0.02
    assert sleeps.better == "a" and sleeps.overall.ci_method == "bonett-price"
    assert sleeps.holds_in == {"fixed": True, "random": True}
    assert not sleeps.contexts.flips and sleeps.contexts.a_better == 8
    faster = f"{(1 - sleeps.ratio) * 100:.1f}"
    assert sleeps.sentence().startswith(f"s20 is {faster}% faster than s30 on wall_time (ratio s20/s30 {sleeps.ratio:.3f}, 95% CI ")
    assert sleeps.sentence().endswith("holds in both arms; holds in all 8 contexts")


def test_strace_perturbs_a_syscall_heavy_test_more_than_a_cpu_loop() -> None:
    def syscalls(c, o, f):
        return 0.004 * (3.0 if o == "strace" else 1.0)

    def loop(c, o, f):
        return 0.050 * (1.01 if o == "strace" else 1.0)

    table = build({"syscalls": syscalls, "loop": loop}, contexts=0, runs=20, observer=("none", "strace"))
    result = analyze_treatments(table)
    effects = {e.test: e for e in result.observer}
    assert effects["syscalls"].significant and effects["syscalls"].effect_pct == pytest.approx(200, abs=5)
    assert effects["syscalls"].effect_pct > 5 * abs(effects["loop"].effect_pct)
    assert all(e.baseline == "none" and e.level == "strace" for e in result.observer)
    assert any("observer level 'strace' perturbs" in w and "syscalls" in w for w in result.warnings)


def test_a_2x2_design_gives_a_its_variation_q_and_a_small_interaction() -> None:
    def work(c, o, f):
        return 0.100 + 0.020 * (f["A"] == "hi") + 0.002 * (f["B"] == "hi")

    table = build({"work": work}, contexts=0, runs=16, factors=2, cv=0.02)
    (row,) = analyze_treatments(table).factorial
    terms = {t.term: t for t in row.result.terms}
    assert terms["A"].variation_pct >= 90
    assert terms["A"].ci[0] <= 0.010 <= terms["A"].ci[1]
    assert terms["A:B"].variation_pct < 2
    assert sum(t.variation_pct for t in terms.values()) + row.result.error_pct == pytest.approx(100, abs=1e-6)
    doc = row.to_json()
    assert [t["term"] for t in doc["terms"]] == ["A", "B", "A:B", "error"]
    assert doc["levels"] == {"A": ["lo", "hi"], "B": ["lo", "hi"]} and doc["r"] == 8


# --- reference values -------------------------------------------------------------------------


def test_context_kruskal_wallis_and_spearman_match_scipy() -> None:
    # 12 contexts: more than EXACT_CONTEXTS, so the dimension tests are asymptotic, as scipy's
    table = build({"envsize": env_time, "sleep": const(0.02)}, contexts=12, runs=36, cv=0.05, seed=3)
    effects = {e.test: e for e in analyze_treatments(table).context_effects}
    frame = table.to_pandas()
    for test, e in effects.items():
        rows = frame[frame.test == test]
        groups = [g.value.to_numpy() for _, g in rows.groupby("context", observed=True)]
        ref = stats.kruskal(*groups)
        assert e.kw_h == pytest.approx(ref.statistic, rel=1e-9) and e.kw_p == pytest.approx(ref.pvalue, rel=1e-9)
        assert e.df == 11 and e.p_adjusted == pytest.approx(min(1.0, 2 * ref.pvalue), rel=1e-9)
        medians = rows.groupby("context", observed=True).value.median()
        env = rows.groupby("context", observed=True)["context:env_bytes"].first().astype(int)
        rho = stats.spearmanr(env.to_numpy(), medians.to_numpy())
        assert e.by_detail["env_bytes"]["statistic"] == pytest.approx(rho.statistic, rel=1e-9)
        assert e.by["env_bytes"] == pytest.approx(rho.pvalue, rel=1e-9, abs=1e-300)
        assert "t approximation" in e.by_detail["env_bytes"]["method"]
        cpus = rows.groupby("context", observed=True)["context:cpus"].first()
        kw = stats.kruskal(*[medians[cpus == level].to_numpy() for level in ("0", "1")])
        assert e.by_detail["cpus"]["statistic"] == pytest.approx(kw.statistic, rel=1e-9)
        assert e.by["cpus"] == pytest.approx(kw.pvalue, rel=1e-9)
        spread = (medians.max() - medians.min()) / medians.min() * 100
        assert e.spread_pct == pytest.approx(spread, rel=1e-12)


def test_dimension_p_values_up_to_eight_contexts_are_exact_permutation_p_values() -> None:
    table = build({"noisy": const(0.02)}, contexts=6, runs=18, cv=0.05, seed=5)
    (e,) = analyze_treatments(table).context_effects
    frame = table.to_pandas()
    medians = frame.groupby("context", observed=True).value.median().to_numpy()
    env = frame.groupby("context", observed=True)["context:env_bytes"].first().astype(int).to_numpy()
    cpus = frame.groupby("context", observed=True)["context:cpus"].first().to_numpy()
    rho = abs(stats.spearmanr(env, medians).statistic)
    h = stats.kruskal(*[medians[cpus == c] for c in ("0", "1")]).statistic
    perms = [list(p) for p in itertools.permutations(range(6))]
    p_rho = np.mean([abs(stats.spearmanr(env, medians[p]).statistic) >= rho - 1e-12 for p in perms])
    p_h = np.mean([stats.kruskal(*[medians[p][cpus == c] for c in ("0", "1")]).statistic >= h - 1e-12 for p in perms])
    assert e.by["env_bytes"] == pytest.approx(p_rho, rel=1e-12)
    assert e.by["cpus"] == pytest.approx(p_h, rel=1e-12)
    assert "exact permutation p" in e.by_detail["env_bytes"]["method"] and e.by_detail["cpus"]["contexts"] == 6


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
        assert row.to_json()["arms"][arm]["p"] == pytest.approx(stats.mannwhitneyu(fa, fb, method="exact").pvalue, rel=1e-9)
    doc = row.to_json()
    assert {"a", "b", "metric", "ratio", "ci", "p", "better", "method", "holds_in", "contexts"} <= set(doc)
    assert doc["method"] == "mann-whitney" and doc["ci_method"] == "bonett-price" and doc["contexts"] is None
    bauer = analyze_treatments(table, options=TreatmentOptions((CompareRequest("o3", "o2"),), ratio_ci="bauer")).comparisons[0]
    assert bauer.overall.ci_method == "bauer-exact"
    touati = analyze_treatments(table, options=TreatmentOptions((CompareRequest("o3", "o2"),), compare_method="touati")).comparisons[0]
    assert touati.overall.method.startswith("touati:") and touati.to_json()["method"] == touati.overall.method


def test_comparisons_are_corrected_over_the_claims() -> None:
    table = build({"a": const(1.0), "b": const(1.004), "c": const(1.0)}, contexts=0, runs=10, cv=0.01, seed=11)
    rows = analyze_treatments(table, options=claims(("a", "b"), ("a", "c"), ("b", "c"))).comparisons
    p = np.array([r.p for r in rows])
    assert [r.p_adjusted for r in rows] == pytest.approx(np.minimum(1, 3 * p).tolist())
    assert all(r.alpha_each == pytest.approx(0.05 / 3) for r in rows)
    holm = analyze_treatments(table, correction="holm", options=claims(("a", "b"), ("a", "c"), ("b", "c"))).comparisons
    assert all(h.p_adjusted <= r.p_adjusted for h, r in zip(holm, rows))


def test_observer_effects_match_scipy_and_are_corrected_per_family() -> None:
    def t(c, o, f):
        return 0.01 * (1.1 if o == "perf" else 1.3 if o == "strace" else 1.0)

    table = build({"x": t, "y": const(0.02)}, contexts=0, runs=18, observer=("none", "perf", "strace"), cv=0.05)
    effects = analyze_treatments(table).observer
    assert [(e.test, e.level) for e in effects] == [("x", "perf"), ("x", "strace"), ("y", "perf"), ("y", "strace")]
    frame = table.to_pandas()
    for e in effects:
        level = frame[(frame.test == e.test) & (frame.observer == e.level)].value.to_numpy()
        base = frame[(frame.test == e.test) & (frame.observer == "none")].value.to_numpy()
        assert e.p == pytest.approx(stats.mannwhitneyu(level, base, method="exact").pvalue, rel=1e-9)
        assert e.p_adjusted == pytest.approx(min(1.0, 4 * e.p), rel=1e-12)
        assert e.effect_pct == pytest.approx((np.median(level) - np.median(base)) / np.median(base) * 100, rel=1e-12)
    assert effects[1].significant and effects[1].effect_pct == pytest.approx(30, abs=4)


def test_factorial_rows_are_factorial_2k_of_the_test_values() -> None:
    def t(c, o, f):
        return 5.0 + (f["A"] == "hi") - 0.5 * (f["B"] == "hi") + 0.25 * (f["C"] == "hi") * (f["A"] == "hi")

    table = build({"t": t}, contexts=0, runs=8, factors=3, cv=0.05, seed=2)
    (row,) = analyze_treatments(table).factorial
    frame = table.to_pandas()
    settings_ = {n: frame[f"factor:{n}"].astype(str).tolist() for n in "ABC"}
    ref = factorial_2k(frame.value.to_numpy(), settings_, {n: ("lo", "hi") for n in "ABC"})
    assert row.result == ref
    assert [t.term for t in row.result.terms] == ["A", "B", "C", "A:B", "A:C", "B:C", "A:B:C"]


def test_declared_factor_levels_set_the_sign_of_q() -> None:
    def t(c, o, f):
        return 1.0 + 0.2 * (f["A"] == "hi")

    table = build({"t": t}, contexts=0, runs=8, factors=1, cv=0.01)
    assert analyze_treatments(table).factorial[0].result.terms[0].effect == pytest.approx(0.1, rel=0.05)
    declared = TrialTable.from_columns(**_columns(table), provenance={"factors": [{"name": "A", "levels": ["hi", "lo"]}]})
    row = analyze_treatments(declared).factorial[0]
    assert row.result.terms[0].effect == pytest.approx(-0.1, rel=0.05) and row.to_json()["levels"] == {"A": ["hi", "lo"]}


# --- properties -------------------------------------------------------------------------------


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


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), shift=st.floats(-0.5, 0.5))
def test_a_factor_level_shift_does_not_change_the_context_analysis(seed: int, shift: float) -> None:
    base = build({"e": env_time}, contexts=8, runs=16, factors=1, cv=0.05, seed=seed)
    moved = base.value + np.where(base.levels("factor:A")[1] == 1, shift, 0.0)
    shifted = TrialTable.from_columns(**{**_columns(base), "value": moved})
    (a,), (b,) = analyze_treatments(base).context_effects, analyze_treatments(shifted).context_effects
    assert a.kw_h == pytest.approx(b.kw_h, rel=1e-9) and a.by == pytest.approx(b.by, rel=1e-9)
    assert "aligned on the factor levels" in a.method


def test_the_order_analysis_uses_the_lightest_observer_level_only() -> None:
    def t(c, o, f):
        return 0.01 * (2.0 if o == "strace" else 1.0)

    table = build({"x": t, "y": const(0.02)}, contexts=0, runs=10, observer=("strace", "none"))
    assert observer_baseline(table) == "none"
    alone = table.select(table.levels("observer")[1] == table.levels("observer")[0].index("none"))
    with_levels, without = analyze_loaded(table, Options()), analyze_loaded(alone, Options())
    assert json.dumps(with_levels.to_json()["tests"]) == json.dumps(without.to_json()["tests"])
    assert any("observer level 'none' only" in w for w in with_levels.warnings)
    declared = TrialTable.from_columns(**_columns(table), provenance={"observer_baseline": "strace"})
    assert observer_baseline(declared) == "strace" and len(order_rows(declared)) == len(table) - len(alone)


def test_without_treatments_the_json_is_unchanged() -> None:
    table = build({"x": const(1.0), "y": const(2.0)}, contexts=0, runs=6)
    doc = analyze_loaded(table, Options()).to_json()
    assert not {"comparisons", "context_effects", "observer", "factorial"} & set(doc)
    with_claim = analyze_loaded(table, Options(), claims(("x", "y"))).to_json()
    assert set(with_claim) - set(doc) == {"comparisons"}
    assert with_claim["tests"] == doc["tests"]
    json.dumps(with_claim, allow_nan=False)


# --- bad input and missing data ---------------------------------------------------------------


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
    declared = TrialTable.from_columns(**_columns(table), provenance={"compare": [{"a": "x", "b": "gone", "metric": None}]})
    (row,) = analyze_treatments(declared).comparisons
    assert row.p is None and row.better is None and "no test 'gone'" in row.overall.reason
    assert row.to_json()["ratio"] is None and "no test" in row.sentence()


def test_too_few_values_per_context_are_said_so_not_read_as_undecided() -> None:
    table = build({"a": const(1.0), "b": const(1.2)}, contexts=8, runs=16)  # 4 values of each test per context
    (row,) = analyze_treatments(table, options=claims(("a", "b"))).comparisons
    assert row.better == "a" and row.contexts.undecided == 8 and not row.contexts.flips
    assert row.sentence().endswith("holds in both arms; not testable within the 8 contexts (fewer than 5 values of a test in each)")


def test_an_unbalanced_or_incomplete_design_is_said_so() -> None:
    def t(c, o, f):
        return 1.0 + (f["A"] == "hi")

    table = build({"t": t}, contexts=0, runs=8, factors=1, cv=0.01)
    drop = np.zeros(len(table), bool)
    drop[np.flatnonzero(table.levels("factor:A")[1] == 1)[:2]] = True
    result = analyze_treatments(table.select(~drop))
    assert result.factorial[0].result.r == 6 and "the first 6 of each analysed" in result.factorial[0].reason
    assert any("unbalanced 2^k design" in w for w in result.warnings)
    only_low = analyze_treatments(table.select(table.levels("factor:A")[1] == 0)).factorial[0]
    assert only_low.result is None and "exactly two levels" in only_low.reason


def test_tidy_files_carry_treatment_columns(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "test,order,value,status,context,context:env_bytes,observer,factor:A\n"
        "a,fixed,1.0,ok,c2,64,none,lo\n"
        "a,random,1.1,ok,c10,8,strace,hi\n"
        "a,random,9.9,failed,c1,512,none,hi\n"
        "a,fixed,1.2,ok,c1,512,,hi\n"
    )
    table = read_tidy(path)
    assert table.dims == ("context", "context:env_bytes", "observer", "factor:A")
    assert table.dim_levels[0] == ("c1", "c2", "c10") and table.dim_levels[1] == ("8", "64", "512")
    labels = table.to_pandas()[list(table.dims)].astype(object).where(lambda f: f.notna(), None).values.tolist()
    assert labels == [["c2", "64", "none", "lo"], ["c10", "8", "strace", "hi"], ["c1", "512", None, "hi"]]


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
    headline = f"o3 is {(1 - row['ratio']) * 100:.1f}% faster than o2 on wall_time (ratio o3/o2 {row['ratio']:.3f}, 95% CI "
    assert text.splitlines()[0].startswith("Comparisons") and text.splitlines()[1].strip().startswith(headline)
    assert text.splitlines()[1].endswith("; holds in both arms") and "\x1b" not in text
    for args, message in ((["--compare", "o3,o4"], "--compare o3,o4: no test 'o4' in the data (tests: 'o3', 'o2')"),
                          (["--compare", "o3,o2,max_rss"], "test 'o3' has no values of metric 'max_rss' (it has: wall_time)"),
                          (["--compare", "o3"], "expected A,B or A,B,METRIC")):
        bad = bench(*args)
        assert bad.returncode == 2 and message in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert "Traceback" not in bad.stderr


def _columns(table: TrialTable) -> dict[str, object]:
    """from_columns arguments that rebuild `table` (test, arm, metric, value, run, position, treatments)."""
    frame = table.to_pandas()
    treatments = {d: [None if v != v else str(v) for v in frame[d].astype(object)] for d in table.dims}
    return {"test": frame.test.astype(str).tolist(), "arm": frame.arm.astype(str).tolist(), "metric": frame.metric.astype(str).tolist(),
            "value": table.value, "run": table.run, "position": table.position, "treatments": treatments}


def _fleet_table(medians: dict[str, dict[str, float]], runs: int = 20, seed: int = 3) -> TrialTable:
    """Each worker runs every test once per run, the arms alternating; medians[worker][test]."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "metric", "worker")}
    for w, (worker, tests) in enumerate(medians.items()):
        for run in range(2 * runs):
            arm = ("fixed", "random")[run % 2]
            order = list(tests) if arm == "fixed" else list(rng.permutation(list(tests)))
            for position, test in enumerate(order):
                cols["test"].append(test)
                cols["arm"].append(arm)
                cols["value"].append(tests[test] * (1 + 0.01 * rng.standard_normal()))
                cols["run"].append(w * 1000 + run)
                cols["position"].append(position)
                cols["metric"].append("wall_time")
                cols["worker"].append(worker)
    return TrialTable.from_columns(**cols)


def test_a_claim_that_flips_on_one_worker_of_a_fleet_says_so() -> None:
    # o3 beats o2 by 7% on two machines; the third runs another build of o3, 10% slower than o2.
    table = _fleet_table({"w1": {"o3": 0.093, "o2": 0.100}, "w2": {"o3": 0.093, "o2": 0.100}, "w3": {"o3": 0.110, "o2": 0.100}})
    (row,) = analyze_treatments(table, options=claims(("o3", "o2"))).comparisons
    assert row.better == "a"  # pooled over the fleet, o3 still wins
    assert (row.workers.n, row.workers.a_better, row.workers.b_better, row.workers.flips) == (3, 2, 1, True)
    assert "flips on 1 of 3 workers" in row.sentence()
    by = {s.name: s for s in row.per_worker}
    assert [by[w].better for w in ("w1", "w2", "w3")] == ["a", "a", "b"]
    frame = table.to_pandas()
    on3 = frame[frame.worker == "w3"]
    a, b = (on3[on3.test == t].value.to_numpy() for t in ("o3", "o2"))
    assert by["w3"].comparison.ratio == pytest.approx(np.median(a) / np.median(b), rel=1e-12)
    assert by["w3"].comparison.ci == ratio_ci_bonett_price(a, b, 1 - row.alpha_each)[0]  # each worker at the claim's share of alpha
    assert by["w3"].p_adjusted == pytest.approx(min(1.0, by["w3"].comparison.p * 3), rel=1e-12)  # Bonferroni over 3 workers
    doc = row.to_json()
    assert doc["workers"] == {"n": 3, "a_better": 2, "b_better": 1, "undecided": 0, "flips": True}
    assert [w["worker"] for w in doc["per_worker"]] == ["w1", "w2", "w3"] and doc["per_worker"][2]["better"] == "b"


def test_a_claim_that_holds_on_every_worker_and_one_worker_has_no_worker_keys() -> None:
    same = {"o3": 0.093, "o2": 0.100}
    (row,) = analyze_treatments(_fleet_table({"w1": same, "w2": same}), options=claims(("o3", "o2"))).comparisons
    assert row.workers.a_better == 2 and "holds on all 2 workers" in row.sentence()
    (alone,) = analyze_treatments(_fleet_table({"w1": same}), options=claims(("o3", "o2"))).comparisons
    assert alone.workers is None and "workers" not in alone.to_json() and "per_worker" not in alone.to_json()


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
    assert "factor cells" in row.sentence() and row.to_json()["factor_cells"]["flips"] is True
    # Without factors the row has no factor keys.
    (plain,) = analyze_treatments(build({"o3": const(0.093), "o2": const(0.100)}, contexts=0), options=claims(("o3", "o2"))).comparisons
    assert plain.factor_cells is None and "factor_cells" not in plain.to_json()
