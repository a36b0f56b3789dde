"""The fleet validation (validation/fleet.py) at reduced size: the stratified verdict keeps its
false-positive rate on heterogeneous workers, and finds order effects that pooling hides."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "validation" / "fleet.py"


def _load():
    spec = importlib.util.spec_from_file_location("benchsage_validation_fleet", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fleet = _load()


def test_simulated_fleet_shape() -> None:
    f = fleet.Fleet(workers=4, spread=3.0, tests=3, runs=6, lost=0.5)
    table = fleet.simulate(f, 2, np.random.default_rng(0))
    assert np.allclose(f.levels, [1.0, 3 ** (1 / 3), 3 ** (2 / 3), 3.0])
    # 2 experiments x 3 tests x 4 workers x 2 arms x 6 runs, minus the slowest worker's 3 lost random runs.
    assert len(table) == 2 * 3 * (4 * 12 - 3)
    counts = np.bincount(table.worker * 2 + table.arm, minlength=8)
    assert counts.tolist() == [36, 36, 36, 36, 36, 36, 36, 18]
    assert fleet.pooled(table).worker_names == ("all",)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("fleet") / "study.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--runs", "50", "--effects", "2", "--lost", "0.8", "--reps-null", "300",
         "--reps-power", "100", "--seed", "5", "--json", str(out)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    assert "| 50 | balanced |" in done.stdout
    return json.loads(out.read_text())


def test_stratified_false_positives_stay_near_alpha(study: dict) -> None:
    for row in study["null"]:
        family = row["family"]["stratified"]
        assert family["ci"][0] <= 0.05 and family["rate"] < 0.09
        single = row["single"]["stratified"]
        assert abs(single["rate"] - 0.05) < 0.012


def test_pooling_breaks_on_a_lost_worker_and_hides_real_effects(study: dict) -> None:
    balanced, lost = study["null"]
    assert balanced["lost"] == 0.0 and lost["lost"] == 0.8
    assert balanced["family"]["pooled"]["rate"] < 0.02  # conservative: machine spread swamps the ranks
    assert lost["family"]["pooled"]["rate"] > 0.9  # arms with unequal shares of workers: false alarms
    (power,) = study["power"]
    assert power["power"]["stratified"]["rate"] > 0.9 and power["power"]["pooled"]["rate"] < 0.05


def test_bad_arguments_exit_2() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--workers", "1"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
