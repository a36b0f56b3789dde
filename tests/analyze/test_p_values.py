"""Every p-value of every analysis is a probability a test can give: in (0, 1], never 0 (the
t approximation of Spearman's rho gave p = 0 to a perfect trend over 6 runs; a chi-squared tail
underflows to 0 with thousands of values). The analysis JSON is walked for every p-value key
over experiments built to reach the extremes: perfect trends, complete separations at large N,
contexts, observer levels, factors, a fleet, a sweep's curves and declared claims."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.analyze.pipeline import Options, analyze_loaded
from benchsage.analyze.treatments import TreatmentOptions
from benchsage.report.json import analysis_json
from benchsage.store.table import TrialTable

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "treatments"))
from curves_data import swept_columns, swept_table  # noqa: E402
from fleet_data import tidy_fleet  # noqa: E402
from treatment_data import build, claims, const, env_time  # noqa: E402

P_KEYS = {"p", "p_adjusted", "p_value", "pvalue", "kw_p"}


def p_values(doc: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, value) of every p-value in an analysis JSON: the keys in P_KEYS or ending in "_p",
    and the per-dimension p-values of a context effect ("by": {dimension: p})."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            here = f"{path}/{k}"
            if k in P_KEYS or k.endswith("_p"):
                yield here, v
            if k == "by" and "/context_effects" in path and isinstance(v, dict):
                yield from ((f"{here}/{d}", p) for d, p in v.items())
            yield from p_values(v, here)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from p_values(v, f"{path}[{i}]")


def _trend(runs: int, tests: int = 2, step: float = 1.0) -> TrialTable:
    """Every test rising run after run in both arms: Spearman's rho = 1 against time."""
    rows: dict[str, list] = {k: [] for k in ("test", "arm", "value", "metric", "run", "position", "time")}
    for r in range(2 * runs):
        for p, t in enumerate(range(tests)):
            rows["test"].append(f"t{t}")
            rows["arm"].append(("fixed", "random")[r % 2])
            rows["value"].append(100.0 * (t + 1) + step * r + 0.001 * p)
            rows["metric"].append("tps")
            rows["run"].append(r)
            rows["position"].append(p)
            rows["time"].append(1000.0 * r + p)
    return TrialTable.from_columns(**rows)


def _separated(runs: int) -> TrialTable:
    """Every fixed-arm value above every random-arm one, the first position slower: complete
    separations at thousands of values, where chi-squared and normal tails underflow."""
    rng = np.random.default_rng(0)
    n = 2 * runs * 2
    run = np.repeat(np.arange(2 * runs), 2)
    arm = np.where(run % 2 == 0, "fixed", "random")
    position = np.tile([0, 1], 2 * runs)
    test = np.where(position == 0, "a", "b")
    test[(run % 2 == 1) & (run % 4 == 1)] = np.where(position == 0, "b", "a")[(run % 2 == 1) & (run % 4 == 1)]
    value = np.where(arm == "fixed", 10.0, 1.0) * (1.0 + 0.01 * rng.random(n)) * np.where(position == 0, 2.0, 1.0)
    return TrialTable.from_columns(test=test.tolist(), arm=arm.tolist(), value=value, run=run, position=position,
                                   metric=["wall_time"] * n, time=1000.0 * run + position)


CASES = {
    "a perfect trend over 6 runs per arm": (lambda: _trend(6), None),
    "a perfect trend over 40 runs per arm": (lambda: _trend(40, tests=3), None),
    "complete separation at 4,000 values": (lambda: _separated(1000), None),
    "contexts with a claim": (lambda: build({"o3": env_time, "o2": const(0.012)}, runs=16), claims(("o3", "o2"))),
    "contexts, observer levels and factors": (
        lambda: build({"o3": lambda c, o, f: 0.01 * (2.0 if o == "strace" else 1.0) * (1.5 if f["A"] == "hi" else 1.0), "o2": const(0.012)},
                      contexts=2, runs=16, observer=("none", "strace"), factors=2), claims(("o3", "o2"))),
    "a fleet with an odd worker": (lambda: tidy_fleet({"n1": 1.0, "n2": 1.0, "n3": 1.5}, runs_per_arm=10, effect=0.5), None),
    "a sweep with a factor, its series compared level by level": (lambda: swept_table(swept_columns(slowdown=3.0, noise=0.001)), None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_p_value_is_a_probability_a_test_can_give(case: str) -> None:
    make, treatments = CASES[case]
    doc = analysis_json(analyze_loaded(make(), Options(), treatments or TreatmentOptions()))
    found = [(path, p) for path, p in p_values(doc) if p is not None]
    assert found, "the case should give p-values"
    bad = [(path, p) for path, p in found if not (isinstance(p, (int, float)) and 0.0 < p <= 1.0)]
    assert not bad, bad[:5]


def test_the_perfect_trend_over_six_runs_has_the_exact_p() -> None:
    doc = analysis_json(analyze_loaded(_trend(6), Options()))
    trends = doc["diagnostics"]["trends"]
    assert trends and all(t["spearman_rho"] == 1.0 for t in trends)
    assert all(t["p"] == pytest.approx(2 / 720, rel=1e-12) for t in trends)
    assert all(0.0 < t["p_adjusted"] <= 1.0 for t in trends)


@settings(max_examples=8, deadline=None)
@given(runs=st.integers(3, 12), tests=st.integers(2, 4), step=st.sampled_from([1.0, -1.0, 0.0]))
def test_trends_of_any_length_and_sign(runs: int, tests: int, step: float) -> None:
    doc = analysis_json(analyze_loaded(_trend(runs, tests, step), Options()))
    for path, p in p_values(doc):
        assert p is None or 0.0 < p <= 1.0, (path, p)
