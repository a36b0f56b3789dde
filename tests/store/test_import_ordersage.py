"""The OrderSage importer, on the paper artifact's files and on small files with what OrderSage can write."""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchsage.errors import DataError
from benchsage.store.importers import read_ordersage
from benchsage.store.table import FIRST, FIXED_CODE, RANDOM_CODE

ARTIFACT = Path(os.environ.get("BENCHSAGE_TEST_ARTIFACT") or "/nonexistent")  # the OrderSage artifact data; .ci/run sets it
MEMCACHED = ARTIFACT / "memcached-table3" / "all_exp_results.csv"
NPBENCH = ARTIFACT / "npbench-table4" / "all_test_results.csv"
needs_artifact = pytest.mark.skipif(not MEMCACHED.is_file(), reason="the OrderSage artifact data is not here")

COLUMNS = [
    "run_uuid", "hostname", "run_num", "total_runs", "exp_command", "exp_number",
    "order_number", "order_type", "time_start", "time_stop", "completion_status", "result",
]  # fmt: skip


def write(path: Path, rows: list[list[object]], header: list[str] = COLUMNS) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def trial(run: str, order: str, pos: int, cmd: str, result: object, status: str = "Success", host: str = "h1", t: float = 0.0) -> list[object]:
    return [run, host, 0, 2, cmd, 0, pos, order, t + pos, t + pos + 0.5, status, result]


@needs_artifact
def test_memcached_artifact() -> None:
    t = read_ordersage(MEMCACHED)
    assert len(t) == 300
    assert t.test_names == ("./cmd_set_test.sh", "./cmd_get_test.sh", "./get_hits_test.sh")
    assert t.metric_names == ("result",)
    assert t.worker_names == ("hp133.utah.cloudlab.us",)
    assert np.bincount(t.arm).tolist() == [150, 150]
    assert len(np.unique(t.run)) == 100
    assert t.has_runs and t.has_positions and t.has_times
    assert t.excluded == 0 and t.warnings == ()
    # First row of the file: cmd_set, first in run 0, value 50733.3508970237, time 3.820298111.
    assert t.value[0] == 50733.3508970237 and t.time[0] == 3.820298111 and t.predecessor[0] == FIRST
    # The fixed order is cmd_set, cmd_get, get_hits: every fixed get_hits ran after cmd_get.
    fixed_hits = (t.arm == FIXED_CODE) & (t.test == 2)
    assert (t.predecessor[fixed_hits] == 1).all() and (t.position[fixed_hits] == 2).all()
    # Run starts come from all_run_results.csv (the controller's clock), one per run.
    starts = t.provenance["run_starts"]
    assert len(starts) == 100
    assert starts[int(t.run[0])] == 32118.363582588
    env = t.provenance["environment"]
    assert env[0]["cpu_model"] == "Intel(R) Xeon(R) CPU E5-2640 v4 @ 2.40GHz"


@needs_artifact
def test_npbench_artifact_uses_test_command() -> None:
    t = read_ordersage(NPBENCH)
    assert len(t) == 600
    assert set(t.test_names) == {"./is.D.sh", "./npBench-softmax.sh", "./npBench-spmv.sh"}
    assert np.bincount(t.arm).tolist() == [300, 300]
    assert len(t.provenance["run_starts"]) == 200


def test_several_numbers_are_several_metrics(tmp_path: Path) -> None:
    f = write(
        tmp_path / "x_exp_results.csv",
        [
            trial("r1", "fixed", 0, "./a.sh", "1.5,2.5"),
            trial("r1", "fixed", 1, "./b.sh", "3.5, 4.5"),
            trial("r2", "random", 0, "./b.sh", "5,6"),
            trial("r2", "random", 1, "./a.sh", "7,8"),
        ],
    )
    t = read_ordersage(f)
    assert t.metric_names == ("result[0]", "result[1]")
    assert len(t) == 8
    got = {(t.test_names[a], t.metric_names[m]): v for a, m, v, arm in zip(t.test, t.metric, t.value, t.arm) if arm == FIXED_CODE}
    assert got[("./a.sh", "result[0]")] == 1.5 and got[("./a.sh", "result[1]")] == 2.5
    assert got[("./b.sh", "result[1]")] == 4.5
    # Both metrics of one trial share its run, position and predecessor.
    b_fixed = (t.test == 1) & (t.arm == FIXED_CODE)
    assert (t.predecessor[b_fixed] == 0).all() and (t.position[b_fixed] == 1).all()


def test_one_number_is_the_metric_result(tmp_path: Path) -> None:
    f = write(tmp_path / "x_exp_results.csv", [trial("r1", "fixed", 0, "./a.sh", 1.5), trial("r2", "random", 0, "./a.sh", "2")])
    t = read_ordersage(f)
    assert t.metric_names == ("result",)
    assert list(t.value) == [1.5, 2.0]


def test_failures_are_excluded_counted_and_still_precede(tmp_path: Path) -> None:
    f = write(
        tmp_path / "x_exp_results.csv",
        [
            trial("r1", "fixed", 0, "./a.sh", "", status="Failure"),
            trial("r1", "fixed", 1, "./b.sh", 2),
            trial("r2", "random", 0, "./b.sh", "Failure", status="Failure"),
            trial("r2", "random", 1, "./a.sh", 4),
        ],
    )
    t = read_ordersage(f)
    assert len(t) == 2 and t.excluded == 2
    assert "2 trials excluded because their status is not Success (Failure: 2)" in t.warnings[0]
    assert [t.test_names[p] for p in t.predecessor] == ["./a.sh", "./b.sh"]


def test_run_uuid_is_per_host(tmp_path: Path) -> None:
    f = write(
        tmp_path / "x_exp_results.csv",
        [
            trial("r1", "fixed", 0, "./a.sh", 1, host="h1"),
            trial("r1", "fixed", 0, "./a.sh", 2, host="h2"),
            trial("r2", "random", 0, "./a.sh", 3, host="h1"),
        ],
    )
    t = read_ordersage(f)
    assert len(np.unique(t.run)) == 3
    assert t.worker_names == ("h1", "h2")


def test_run_starts_from_the_matching_run_file(tmp_path: Path) -> None:
    f = write(tmp_path / "hp1_exp_results.csv", [trial("r1", "fixed", 0, "./a.sh", 1), trial("r2", "random", 0, "./a.sh", 2)])
    write(
        tmp_path / "hp1_run_results.csv",
        [["r2", "h1", 1, 2, "random", 7, 500.0, 510.0], ["r1", "h1", 0, 2, "fixed", 7, 100.0, 110.0]],
        ["run_uuid", "hostname", "run_num", "total_runs", "order_type", "random_seed", "time_start", "time_stop"],
    )
    write(tmp_path / "all_run_results.csv", [["r1", 1.0]], ["run_uuid", "time_start"])  # the prefix's file wins
    t = read_ordersage(f)
    assert t.provenance["run_starts"] == {int(t.run[0]): 100.0, int(t.run[1]): 500.0}
    assert "environment" not in t.provenance


def test_broken_run_file_is_a_warning(tmp_path: Path) -> None:
    f = write(tmp_path / "all_exp_results.csv", [trial("r1", "fixed", 0, "./a.sh", 1), trial("r2", "random", 0, "./a.sh", 2)])
    (tmp_path / "all_run_results.csv").write_text("run_uuid,when\nr1,yesterday\n")
    t = read_ordersage(f)
    assert "run_starts" not in t.provenance
    assert any("run start times not used" in w and "'time_start'" in w for w in t.warnings)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([trial("r1", "fixed", 0, "./a.sh", "fast"), trial("r2", "random", 0, "./a.sh", 1)], r"line 2, column 'result': 'fast' is not a number"),
        ([trial("r1", "fixed", 0, "./a.sh", "1,x"), trial("r2", "random", 0, "./a.sh", 1)], r"line 2, column 'result': '1,x' is not a number or a comma-separated list"),
        ([trial("r1", "fixed", 0, "./a.sh", ""), trial("r2", "random", 0, "./a.sh", 1)], r"line 2, column 'result' is empty"),
        ([trial("r1", "fixed", 0, "./a.sh", 1), trial("r2", "shuffled", 0, "./a.sh", 1)], r"line 3, column 'order_type': 'shuffled' is neither"),
        ([trial("r1", "fixed", 0, "./a.sh", 1), trial("r2", "fixed", 0, "./a.sh", 1)], r"no analysable rows in the random arm"),
        ([trial("r1", "fixed", 0, "./a.sh", 1), trial("r2", "random", 0, "./a.sh", 1, status="Failure")], r"no analysable rows in the random arm \(1 fixed, 0 random\)"),
    ],
)
def test_garbage(tmp_path: Path, rows: list[list[object]], message: str) -> None:
    f = write(tmp_path / "x_exp_results.csv", rows)
    with pytest.raises(DataError, match=message):
        read_ordersage(f)


def test_missing_columns_are_named(tmp_path: Path) -> None:
    f = write(tmp_path / "x.csv", [["r1", "fixed", 1]], ["run_uuid", "order_type", "result"])
    with pytest.raises(DataError, match=r"missing required column\(s\) 'exp_command' or 'test_command', 'order_number', 'completion_status'; found: run_uuid, order_type, result"):
        read_ordersage(f)


@needs_artifact
def test_a_copy_without_its_run_file_falls_back(tmp_path: Path) -> None:
    shutil.copy(MEMCACHED, tmp_path / "all_exp_results.csv")
    t = read_ordersage(tmp_path / "all_exp_results.csv")
    assert "run_starts" not in t.provenance and "environment" not in t.provenance
    assert (t.arm == RANDOM_CODE).sum() == 150
