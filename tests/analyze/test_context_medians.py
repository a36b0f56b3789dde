"""Each test's median per context with its interval (the report's per-context figure): the
test's own values, checked against the binomial interval computed with scipy."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from scipy import stats

from benchsage.analyze.context_medians import with_context_medians
from benchsage.analyze.pipeline import Options, analyze_loaded
from benchsage.store.table import TrialTable
from benchsage.report.json import analysis_json, analysis_json_text


def _table(seed: int = 0, runs: int = 48) -> TrialTable:
    """Tests "a" and "b" in three contexts, crossed with a factor that doubles every value; c2
    has 3 runs only (too few for an interval), "b" one missing value in c0, and the observer
    level "strace" (not the lightest) doubles a's values."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "context", "factor", "observer")}
    for run in range(runs):
        context = "c2" if run < 3 else ("c0", "c1")[run % 2]
        factor = ("lo", "hi")[(run // 2) % 2]
        observer = "strace" if run % 5 == 4 else "none"
        for position, test in enumerate(("a", "b")):
            value = (1.0 if test == "a" else 3.0) * (1.1 if context == "c1" else 1.0) * (2.0 if factor == "hi" else 1.0)
            value *= 2.0 if observer == "strace" and test == "a" else 1.0
            value *= 1 + 0.05 * rng.standard_normal()
            if test == "b" and context == "c0" and run == 4:
                value = float("nan")
            for k, x in zip(cols, (test, ("fixed", "random")[run % 2], value, run, position, context, factor, observer)):
                cols[k].append(x)
    return TrialTable.from_columns(
        test=cols["test"], arm=cols["arm"], value=cols["value"], run=cols["run"], position=cols["position"],
        metric=["wall_time"] * len(cols["test"]),
        treatments={"context": cols["context"], "factor:f": cols["factor"], "observer": cols["observer"]},
        provenance={"observer_baseline": "none"},
    )


def _exact(x: np.ndarray, level: float) -> tuple[float, float] | None:
    """The exact binomial interval [x(l), x(n-l+1)] with the largest l that still covers the median with >= level."""
    x, n = np.sort(x), len(x)
    ls = [k for k in range(1, n // 2 + 1) if stats.binom.cdf(n - k, n, 0.5) - stats.binom.cdf(k - 1, n, 0.5) >= level]
    return (x[max(ls) - 1], x[n - max(ls)]) if ls else None


def test_each_context_gets_the_median_and_exact_interval_of_the_tests_own_values() -> None:
    table = _table()
    analysis = analyze_loaded(table, Options(ci_level=0.9))
    names, codes = table.levels("context")
    light = table.levels("observer")[1] == table.levels("observer")[0].index("none")
    for effect in analysis.context_effects:
        assert list(effect.median_ci) == list(names)  # every context, in the order of its code
        for context, (median, low, high) in effect.median_ci.items():
            rows = (table.test == table.test_names.index(effect.test)) & (codes == names.index(context)) & light
            x = table.value[rows & np.isfinite(table.value)]
            assert median == pytest.approx(np.median(x), rel=1e-12)  # not aligned on the factor
            expected = _exact(x, 0.9)
            assert (low, high) == (expected if expected is not None else (None, None)), (effect.test, context)
    assert analysis.context_effects[0].median_ci["c2"][1:] == (None, None)  # 3 values: no 90% interval


def test_the_method_of_the_analysis_is_the_one_used() -> None:
    table = _table(seed=1, runs=80)
    exact = analyze_loaded(table, Options()).context_effects
    boudec = analyze_loaded(table, Options(ci_method="le-boudec")).context_effects
    assert [e.median_ci != b.median_ci for e, b in zip(exact, boudec)] == [True, True]
    assert [{c: m for c, (m, _, _) in e.median_ci.items()} for e in exact] == [{c: m for c, (m, _, _) in b.median_ci.items()} for b in boudec]


def test_the_medians_stay_out_of_the_json() -> None:
    analysis = analyze_loaded(_table(), Options())
    without = dataclasses.replace(analysis, context_effects=tuple(dataclasses.replace(e, median_ci={}) for e in analysis.context_effects))
    assert all(e.median_ci for e in analysis.context_effects)
    assert json.dumps(analysis_json(analysis)) == json.dumps(analysis_json(without))
    assert "median_ci" not in analysis_json_text(analysis)


def test_nothing_to_add_without_effects_or_contexts() -> None:
    table = _table()
    assert with_context_medians((), table, 0.95, "exact-binomial") == ()
    (effect,) = analyze_loaded(table, Options()).context_effects[:1]
    plain = TrialTable.from_columns(test=["a"] * 4, arm=["fixed", "random"] * 2, value=[1.0, 2.0, 3.0, 4.0])
    assert with_context_medians((effect,), plain, 0.95, "exact-binomial") == (effect,)
