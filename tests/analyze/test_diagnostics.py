"""Diagnostics: planted position, carry-over and drift effects are found; clean data stays quiet."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.analyze.diagnostics import ALL_TESTS, RESET, _one_vs_rest, _runs_test_lower, diagnose, run_starts
from benchsage.stats.ranksum import kruskal_2
from benchsage.store.table import TrialTable

Value = Callable[[str, int, "str | None", str, int, np.random.Generator], float]


def experiment(
    tests: list[str],
    runs: int,
    value: Value,
    *,
    seed: int = 1,
    interleave: bool = True,
    workers: int = 1,
    primary: bool = True,
) -> TrialTable:
    """runs per arm; every run from a reset; fixed order = tests as given, random = shuffled."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "worker", "time")}
    arms = ["fixed", "random"] * runs if interleave else ["fixed"] * runs + ["random"] * runs
    for run, arm in enumerate(arms):
        order = list(tests) if arm == "fixed" else list(rng.permutation(tests))
        for pos, test in enumerate(order):
            before = order[pos - 1] if pos else None
            cols["test"].append(test)
            cols["arm"].append(arm)
            cols["value"].append(value(test, pos, before, arm, run, rng))
            cols["run"].append(run)
            cols["position"].append(pos)
            cols["worker"].append(f"w{run % workers}")
            cols["time"].append(1000.0 * run + pos)
    n = len(cols["value"])
    return TrialTable.from_columns(**cols, primary=np.full(n, primary))


def noise(test: str, pos: int, before: str | None, arm: str, run: int, rng: np.random.Generator) -> float:
    return float(rng.normal(100.0, 1.0))


def test_nothing_to_diagnose_without_runs_positions_or_times() -> None:
    t = TrialTable.from_columns(test=["a"] * 10, arm=["fixed", "random"] * 5, value=np.arange(10.0))
    assert diagnose(t) is None


def test_clean_data_has_no_significant_diagnostics() -> None:
    d = diagnose(experiment(["a", "b", "c"], 40, noise))
    assert d is not None
    assert d.interleaving is not None and d.interleaving.interleaved is True
    assert {p.position for p in d.position_effects} == {0, 1, 2}
    assert all(p.position_last is None for p in d.position_effects)
    assert not any(p.significant for p in d.position_effects)
    assert not any(c.significant for c in d.carryover)
    assert not any(t.significant for t in d.trends)
    assert {c.after for c in d.carryover if c.test == "a"} == {"b", "c", RESET}


def test_first_in_run_effect_is_found_with_its_size() -> None:
    def cold_start(test: str, pos: int, before: str | None, arm: str, run: int, rng: np.random.Generator) -> float:
        return float(rng.normal(100.0, 1.0)) * (0.9 if (test == "b" and pos == 0) else 1.0)

    d = diagnose(experiment(["a", "b", "c"], 60, cold_start))
    assert d is not None
    hit = [p for p in d.position_effects if p.test == "b" and p.position == 0][0]
    assert hit.significant is True
    assert hit.effect_pct == pytest.approx(-10.0, abs=1.5)
    assert hit.p_adjusted == pytest.approx(min(1.0, hit.p * len(d.position_effects)))
    assert hit.n_at + hit.n_other == 60
    others = [p for p in d.position_effects if p.test != "b"]
    assert not any(p.significant for p in others)
    # The same trials are "after the reset" in the carry-over view.
    reset = [c for c in d.carryover if c.test == "b" and c.after == RESET][0]
    assert reset.significant is True and reset.effect_pct == pytest.approx(hit.effect_pct)


def test_carry_over_of_one_predecessor_is_found() -> None:
    def warm_cache(test: str, pos: int, before: str | None, arm: str, run: int, rng: np.random.Generator) -> float:
        return float(rng.normal(100.0, 1.0)) * (1.2 if (test == "c" and before == "a") else 1.0)

    d = diagnose(experiment(["a", "b", "c", "d"], 80, warm_cache))
    assert d is not None
    significant = [(c.test, c.after) for c in d.carryover if c.significant]
    assert ("c", "a") in significant
    hit = [c for c in d.carryover if (c.test, c.after) == ("c", "a")][0]
    assert hit.effect_pct == pytest.approx(20.0, abs=2.0)
    assert hit.median_after == pytest.approx(120.0, abs=1.5)
    assert all(t == "c" for t, _ in significant)


def test_arms_one_after_the_other_are_flagged() -> None:
    d = diagnose(experiment(["a", "b"], 50, noise, interleave=False))
    assert d is not None and d.interleaving is not None
    assert d.interleaving.interleaved is False
    assert d.interleaving.detail == "all 50 fixed runs precede all 50 random runs"
    assert (d.interleaving.n_fixed_runs, d.interleaving.n_random_runs) == (50, 50)


def test_clustered_arms_are_flagged_by_the_runs_test() -> None:
    # Blocks of 10 runs of one arm, alternating: neither arm entirely first, but clustered.
    t = experiment(["a"], 40, noise)
    block_arm = ((t.run // 10) % 2).astype(np.int8)
    t = TrialTable.from_columns(test=["a"] * len(t), arm=block_arm, value=t.value, run=t.run, position=t.position, time=t.time)
    d = diagnose(t)
    assert d is not None and d.interleaving is not None
    assert d.interleaving.interleaved is False
    assert "clustered in time" in d.interleaving.detail and "Wald-Wolfowitz" in d.interleaving.detail


def test_recorded_run_starts_win_over_trial_times() -> None:
    t = experiment(["a", "b"], 10, noise)  # interleaved by trial times
    ids = np.unique(t.run)
    arm_of = {int(r): int(t.arm[t.run == r][0]) for r in ids}
    # The source says: every fixed run started before every random run.
    starts = {r: (r if arm_of[r] == 0 else 1000 + r) for r in arm_of}
    t2 = TrialTable.from_columns(
        test=np.array(t.test_names)[t.test], arm=t.arm, value=t.value, run=t.run, position=t.position, time=t.time,
        provenance={"run_starts": starts},
    )  # fmt: skip
    assert run_starts(t2)[3] == starts[3]
    d = diagnose(t2)
    assert d is not None and d.interleaving is not None
    assert d.interleaving.interleaved is False and "precede" in d.interleaving.detail


def test_an_arm_per_worker_is_not_interleaving() -> None:
    d = diagnose(experiment(["a", "b"], 10, noise, workers=2))  # w0 runs fixed, w1 random
    assert d is not None and d.interleaving is not None
    assert d.interleaving.interleaved is False
    assert "worker w0: only fixed runs" in d.interleaving.detail


def test_drift_is_a_trend_not_a_position_effect() -> None:
    def drift(test: str, pos: int, before: str | None, arm: str, run: int, rng: np.random.Generator) -> float:
        return float(rng.normal(100.0, 1.0)) + 0.2 * run

    d = diagnose(experiment(["a", "b", "c"], 40, drift))
    assert d is not None
    trends = {(t.test, t.arm): t for t in d.trends}
    assert len(trends) == 6
    assert all(t.significant and t.spearman_rho is not None and t.spearman_rho > 0.8 for t in trends.values())
    assert not any(p.significant for p in d.position_effects)


def test_large_experiments_bin_later_positions_and_pool_the_first() -> None:
    tests = [f"t{i:02d}" for i in range(60)]

    def cold(test: str, pos: int, before: str | None, arm: str, run: int, rng: np.random.Generator) -> float:
        base = 10.0 * (1 + int(test[1:]))  # tests on different scales
        return float(rng.normal(base, base * 0.01)) * (1.1 if pos == 0 else 1.0)

    d = diagnose(experiment(tests, 30, cold))
    assert d is not None
    bins = sorted({(p.position, p.position_last) for p in d.position_effects})
    assert bins[0] == (0, 0)
    assert bins[1][0] == 1 and bins[-1][1] == 59
    later = [b for b in bins if b[0] > 0]
    assert len(later) == 3  # 30 random values per test: 30 // (2 * 5) bins of positions 1..59
    assert all(later[i][1] + 1 == later[i + 1][0] for i in range(len(later) - 1))
    # Position 0 holds about half a value per test: only the pooled row can test it.
    pooled = [p for p in d.position_effects if p.test == ALL_TESTS]
    first = [p for p in pooled if p.position == 0][0]
    assert first.n_at == 30 and first.significant is True
    assert first.effect_pct == pytest.approx(10.0, abs=1.5)
    assert not any(p.significant for p in pooled if p.position > 0)
    assert not any(p.test != ALL_TESTS and p.position == 0 for p in d.position_effects)


def test_only_primary_finite_values_are_examined() -> None:
    t = experiment(["a", "b"], 20, noise, primary=False)
    d = diagnose(t)
    assert d is not None and d.position_effects == () and d.carryover == () and d.trends == ()
    assert d.interleaving is not None  # the design is still judged
    v = experiment(["a", "b"], 20, noise)
    bad = v.value.copy()
    bad[::7] = np.nan
    t = TrialTable.from_columns(test=np.array(v.test_names)[v.test], arm=v.arm, value=bad, run=v.run, position=v.position, time=v.time)
    d = diagnose(t)
    assert d is not None and sum(p.n_at for p in d.position_effects if p.test == "a") == np.isfinite(bad[(v.arm == 1) & (v.test == 0)]).sum()


def test_all_equal_values_are_not_testable() -> None:
    d = diagnose(experiment(["a", "b"], 20, lambda *args: 5.0))
    assert d is not None
    assert d.position_effects and all(p.p is None and p.significant is None for p in d.position_effects)
    assert all(p.effect_pct == 0.0 for p in d.position_effects)


def test_runs_test_by_hand() -> None:
    # F F R R: n1 = n2 = 2, R = 2, E[R] = 3, Var[R] = 2*2*2*(8-4) / (16*3) = 2/3.
    stretches, expected, p = _runs_test_lower(np.array([0, 0, 1, 1]))
    assert (stretches, expected) == (2, 3.0)
    assert p == pytest.approx(0.5 * math.erfc((1 / math.sqrt(2 / 3)) / math.sqrt(2)))
    assert _runs_test_lower(np.array([0, 1] * 20))[2] > 0.99


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 120),
    n_comp=st.integers(1, 4),
    n_cat=st.integers(1, 6),
    decimals=st.integers(0, 2),
    min_values=st.integers(1, 6),
    same=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_one_vs_rest_equals_kruskal_2_and_numpy_medians(n: int, n_comp: int, n_cat: int, decimals: int, min_values: int, same: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=n), decimals)  # ties when rounded
    effect = values if same else rng.normal(size=n)
    comp = rng.integers(0, n_comp, n)
    cat = rng.integers(0, n_cat, n)
    res = _one_vs_rest(values, effect, comp, cat, n_comp, n_cat, min_values)
    examined = 0
    for c in range(n_comp):
        for k in range(n_cat):
            sel = comp == c
            inside = cat[sel] == k
            if inside.sum() < min_values or (~inside).sum() < min_values:
                continue
            j = examined
            examined += 1
            assert (res.comp[j], res.cat[j]) == (c, k)
            ref = kruskal_2(values[sel], np.zeros(int(sel.sum()), dtype=np.int64), inside, 1)
            np.testing.assert_allclose(res.h[j], ref.statistic[0], rtol=1e-9, equal_nan=True)
            np.testing.assert_allclose(res.p[j], ref.pvalue[0], rtol=1e-9, equal_nan=True)
            assert res.median_at[j] == np.median(effect[sel][inside])
            assert res.median_other[j] == np.median(effect[sel][~inside])
    assert examined == len(res.comp)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 200), n_comp=st.integers(1, 5), n_cat=st.integers(1, 8), min_values=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_one_vs_rest_sparse_counting_equals_dense(n: int, n_comp: int, n_cat: int, min_values: int, seed: int) -> None:
    # With 40,000 tests the (test, predecessor) pairs would need 1.6e9 dense counters; past a
    # size the pairs are counted with np.unique. Declaring 2**20 + 1 categories forces that path.
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=n), 1)
    comp = rng.integers(0, n_comp, n)
    cat = rng.integers(0, n_cat, n)
    dense = _one_vs_rest(values, values, comp, cat, n_comp, n_cat, min_values)
    sparse = _one_vs_rest(values, values, comp, cat, n_comp, (1 << 20) + 1, min_values)
    for field in ("comp", "cat", "n_at", "n_other", "median_at", "median_other", "h", "p"):
        assert np.array_equal(getattr(dense, field), getattr(sparse, field), equal_nan=True), field


def test_diagnostics_of_many_tests_stay_small() -> None:
    # 40,000 tests with their predecessors: the carry-over counters must not be dense
    # (40,001 x 40,001 of them would take 12 GiB).
    import tracemalloc

    rng = np.random.default_rng(5)
    n_tests, runs = 40_000, 2
    test = np.concatenate([rng.permutation(n_tests) for _ in range(2 * runs)])
    arm = np.repeat([0, 1] * runs, n_tests)
    run = np.repeat(np.arange(2 * runs), n_tests)
    position = np.tile(np.arange(n_tests), 2 * runs)
    table = TrialTable.from_columns(
        test=[f"t{i}" for i in test], arm=np.where(arm == 0, "fixed", "random"), value=rng.lognormal(size=len(test)),
        run=run, position=position, time=run * 1000.0 + position,
    )
    tracemalloc.start()
    diag = diagnose(table)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert diag is not None
    assert peak < 500 * 2**20
