"""Context effects on tables with known effects: an environment-dependent test is flagged and a sleep
is not; Kruskal-Wallis and Spearman against scipy; exact permutation p-values; factor levels
aligned away."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.analyze.treatments import analyze_treatments
from benchsage.analyze.treatments.notes import ContextMethod, DimensionMethod
from benchsage.store.table import TrialTable

sys.path.insert(0, str(Path(__file__).parent))
from treatment_data import build, columns_of, const, env_time  # noqa: E402


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
        assert e.by_detail["env_bytes"]["method"] == DimensionMethod(numeric=True, exact=False, approximate=True)
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
    assert e.by_detail["env_bytes"]["method"] == DimensionMethod(numeric=True, exact=True, approximate=False)
    assert e.by_detail["cpus"]["method"] == DimensionMethod(numeric=False, exact=True, approximate=False)
    assert e.by_detail["cpus"]["contexts"] == 6


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), steps=st.integers(-128, 128))
def test_a_factor_level_shift_does_not_change_the_context_analysis(seed: int, steps: int) -> None:
    # Values on a grid of 2^-32 and shifts of 2^-8 steps: every sum and difference the
    # alignment takes is exact, so the shift is taken out exactly, ties included (with
    # arbitrary floats, rounding can break a tie between two context medians and move a rank).
    drawn = build({"e": env_time}, contexts=8, runs=16, factors=1, cv=0.05, seed=seed)
    base = TrialTable.from_columns(**{**columns_of(drawn), "value": np.round(drawn.value * 2.0**32) / 2.0**32})
    moved = base.value + np.where(base.levels("factor:A")[1] == 1, steps / 256.0, 0.0)
    shifted = TrialTable.from_columns(**{**columns_of(base), "value": moved})
    (a,), (b,) = analyze_treatments(base).context_effects, analyze_treatments(shifted).context_effects
    assert a.kw_h == pytest.approx(b.kw_h, rel=1e-9) and a.by == pytest.approx(b.by, rel=1e-9)
    assert a.method == ContextMethod(aligned=True)
