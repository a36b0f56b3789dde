"""The notebook API on a fleet: per-worker verdicts, the fleet and identity diagnostics."""

from __future__ import annotations

import sys
from pathlib import Path

import benchsage

sys.path.insert(0, str(Path(__file__).parent))
from fleet_data import write_fleet  # noqa: E402


def test_api_exposes_a_fleet(tmp_path: Path) -> None:
    write_fleet(tmp_path, {"node1": 1.0, "node2": 1.0, "node3": 1.6}, effect=0.15, seed=1, snapshots={"node3": {"kernel": "6.5"}})
    result = benchsage.analyze(tmp_path)
    assert result.combined is not None and result.combined["workers"] == 3
    workers = result.workers
    assert list(workers.columns[:3]) == ["worker", "worker_order_matters", "test"]
    assert len(workers) == 3 * 12  # 3 tests x 4 metrics on each worker
    own = workers[(workers.worker == "node1") & workers.primary]
    first = result.analysis.workers[0]
    assert own.p_adjusted.tolist() == [v.p_adjusted for v in first.tests if v.primary]
    fleet = result.diagnostics.fleet
    assert fleet.test.tolist() == ["a", "b", "c"] and fleet.outliers.tolist() == [["node3"]] * 3
    assert set(fleet.medians[0]) == {"node1", "node2", "node3"}
    identity = result.diagnostics.identity
    assert identity is not None and identity["identical"] is False
    assert identity["differences"] == [{"what": "kernel", "values": {"node1": "6.1.0-18-amd64", "node2": "6.1.0-18-amd64", "node3": "6.5"}}]
    assert result.to_json()["diagnostics"]["identity"] == identity


def test_api_of_one_worker_has_no_fleet(tmp_path: Path) -> None:
    write_fleet(tmp_path, {"local": 1.0}, seed=2)
    result = benchsage.analyze(tmp_path)
    assert result.combined is None and len(result.workers) == 0 and "worker" in result.workers.columns
    assert len(result.diagnostics.fleet) == 0 and result.diagnostics.identity is None
    assert "combined" not in result.to_json()
