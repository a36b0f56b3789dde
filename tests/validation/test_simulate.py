"""The Monte-Carlo validation (validation/simulate.py) at reduced size: benchsage's analysis keeps
the family-wise error rate, its median CIs cover, and its power grows with the effect."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.order import analyze_table

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "validation" / "simulate.py"


def _load():
    spec = importlib.util.spec_from_file_location("benchsage_validation_simulate", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


sim = _load()


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("validation") / "study.json"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--runs", "10,50", "--reps-null", "500", "--reps-power", "150",
         "--seed", "7", "--json", str(out)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    return json.loads(out.read_text())


def test_batched_analysis_equals_one_experiment_at_a_time() -> None:
    design = sim.Design(tests=6, runs=12, effect=0.06)
    batch = sim.simulate(design, 8, np.random.default_rng(3))
    out = sim.analyse(batch, ci_methods=("exact-binomial",))
    decided = 0
    for r in range(batch.reps):
        one = batch.table.select(batch.table.test // design.tests == r)
        for correction in sim.CORRECTIONS:
            analysis = analyze_table(one, correction=correction)
            p = np.array([v.kw_p for v in analysis.tests])
            sig = np.array([bool(v.significant) for v in analysis.tests])
            np.testing.assert_allclose(p, out.p[r], rtol=1e-12)
            np.testing.assert_array_equal(sig, out.significant[correction][r])
            decided += int(sig.sum())
    assert decided > 0  # the comparison saw some rejections, not only "nothing significant"


def test_carryover_is_injected_only_after_its_predecessor() -> None:
    design = sim.Design(tests=5, runs=30, effect=0.5, cv_low=0.001, cv_high=0.001)
    batch = sim.simulate(design, 2, np.random.default_rng(5))
    t = batch.table
    local = t.test % design.tests
    pred_local = np.where(t.predecessor >= 0, t.predecessor % design.tests, -1)
    ratio = t.value / batch.true_median.ravel()[t.test]
    hit = (local == design.b) & (pred_local == design.a)
    fixed_b = (local == design.b) & (t.arm == 0)
    assert fixed_b.any() and hit[fixed_b].all()  # in the fixed order B always runs right after A
    assert 0 < hit[(local == design.b) & (t.arm == 1)].mean() < 0.5  # in random orders only sometimes
    assert np.all(np.abs(ratio[hit] - 1.5) < 0.02)
    assert np.all(np.abs(ratio[~hit] - 1.0) < 0.02)


def test_family_wise_error_stays_at_alpha(study: dict) -> None:
    for row in study["null"]:
        for correction in ("bonferroni", "holm"):
            r = row["fwer"][correction]
            se = math.sqrt(0.05 * 0.95 / r["n"])
            assert r["rate"] <= 0.05 + 3 * se, (row["runs"], correction, r)


def test_median_cis_cover_at_least_nominal(study: dict) -> None:
    for row in study["null"]:
        for method in ("exact-binomial", "le-boudec"):
            r = row["coverage"][method]
            se = math.sqrt(0.95 * 0.05 / r["n"])
            assert r["n"] > 0
            assert r["rate"] >= 0.95 - 3 * se, (row["runs"], method, r)
            # and close to what the order statistics promise for continuous data
            assert abs(r["rate"] - row["coverage_theory"][method]) <= 4 * math.sqrt(0.05 * 0.95 / r["n"]) + 1e-9


def test_power_grows_with_the_effect_and_reaches_one(study: dict) -> None:
    by = {(p["runs"], p["effect_pct"]): p["power"]["bonferroni"] for p in study["power"]}
    effects = sorted({e for _, e in by})
    for n in sorted({n for n, _ in by}):
        rates = [by[(n, e)] for e in effects]
        for lo, hi in zip(rates, rates[1:]):
            tol = 3 * math.sqrt(0.25 / lo["n"] + 0.25 / hi["n"])
            assert hi["rate"] >= lo["rate"] - tol, (n, lo, hi)
    assert by[(50, max(effects))]["rate"] >= 0.95
    assert by[(50, max(effects))]["rate"] > by[(10, min(effects))]["rate"]
