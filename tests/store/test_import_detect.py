"""Choosing the importer (--format auto), combining several sources, and what cannot be read."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest

from benchsage.errors import DataError, UsageError
from benchsage.store.importers import FORMATS, load_source, load_sources
from benchsage.store.importers.detect import detect_format

ARTIFACT = Path(os.environ.get("BENCHSAGE_TEST_ARTIFACT") or "/nonexistent")  # the OrderSage artifact data; .ci/run sets it
MEMCACHED = ARTIFACT / "memcached-table3" / "all_exp_results.csv"
NPBENCH = ARTIFACT / "npbench-table4" / "all_test_results.csv"
needs_artifact = pytest.mark.skipif(not MEMCACHED.is_file(), reason="the OrderSage artifact data is not here")


def write(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def tidy_file(path: Path, worker: str, arms: tuple[str, ...] = ("fixed", "random")) -> Path:
    rows: list[list[object]] = []
    for run, arm in enumerate(arms):
        for pos, test in enumerate(("a", "b")):
            rows.append([test, arm, 1.0 + run + pos, str(run), pos, worker, 1000.0 * run + pos])
    return write(path, ["test", "order", "value", "run", "position", "worker", "time"], rows)


def test_formats() -> None:
    assert FORMATS == ("auto", "benchsage", "ordersage", "tidy")


@needs_artifact
def test_auto_detects_ordersage_and_tidy(tmp_path: Path) -> None:
    assert detect_format(MEMCACHED).name == "ordersage"
    assert detect_format(NPBENCH).name == "ordersage"
    assert detect_format(tidy_file(tmp_path / "t.csv", "w")).name == "tidy"
    assert len(load_source(MEMCACHED)) == len(load_source(MEMCACHED, format="ordersage")) == 300


def test_explicit_format_that_does_not_fit(tmp_path: Path) -> None:
    f = tidy_file(tmp_path / "t.csv", "w")
    with pytest.raises(DataError, match=r"t\.csv: missing required column\(s\) 'run_uuid', 'exp_command' or 'test_command'"):
        load_source(f, format="ordersage")


def test_unknown_columns(tmp_path: Path) -> None:
    f = write(tmp_path / "u.csv", ["foo", "bar"], [[1, 2]])
    with pytest.raises(DataError, match=r"u\.csv: cannot tell the format from its columns \(foo, bar\); expected .*tidy: test, order, value"):
        load_source(f)


def test_columns_of_a_known_format_with_one_missing(tmp_path: Path) -> None:
    f = write(tmp_path / "t.csv", ["test", "order", "val"], [["a", "fixed", 1]])
    with pytest.raises(DataError, match=r"t\.csv: missing required column\(s\) 'value'; found: test, order, val"):
        load_source(f)


def test_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"unknown format 'xml'; choose one of auto, benchsage, ordersage, tidy"):
        load_source(tidy_file(tmp_path / "t.csv", "w"), format="xml")


def test_missing_source(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nope\.csv: no such file or directory"):
        load_source(tmp_path / "nope.csv")
    with pytest.raises(UsageError):
        load_sources([])


def test_directory_given_to_a_file_format(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"is a directory; --format tidy reads a file"):
        load_source(tmp_path, format="tidy")


def test_file_given_as_an_experiment(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"t\.csv: not an experiment directory"):
        load_source(tidy_file(tmp_path / "t.csv", "w"), format="benchsage")


def test_binary_file_is_refused_by_auto(tmp_path: Path) -> None:
    f = tmp_path / "blob.csv"
    f.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(200))
    with pytest.raises(DataError, match=r"blob\.csv: binary content, not a CSV file"):
        load_source(f)


def test_one_file_per_worker_is_combined(tmp_path: Path) -> None:
    t = load_sources([tidy_file(tmp_path / "w1.csv", "w1"), tidy_file(tmp_path / "w2.csv", "w2")])
    assert len(t) == 8
    assert t.worker_names == ("w1", "w2")
    # Each file's runs "0" and "1" are four distinct runs in the combination.
    assert len(np.unique(t.run)) == 4
    assert t.sources == (str(tmp_path / "w1.csv"), str(tmp_path / "w2.csv"))


def test_arms_are_checked_on_the_combination(tmp_path: Path) -> None:
    fixed = tidy_file(tmp_path / "fixed.csv", "w", ("fixed",))
    random = tidy_file(tmp_path / "random.csv", "w", ("random",))
    both = load_sources([fixed, random])
    assert np.bincount(both.arm).tolist() == [2, 2]
    with pytest.raises(DataError, match=r"fixed\.csv: no analysable rows in the random arm"):
        load_source(fixed)
    with pytest.raises(DataError, match=r"2 sources .*no analysable rows in the random arm"):
        load_sources([fixed, fixed])


@needs_artifact
def test_run_starts_follow_the_renumbered_runs() -> None:
    t = load_sources([MEMCACHED, NPBENCH])
    starts = t.provenance["run_starts"]
    assert len(starts) == 300 and set(starts) == set(np.unique(t.run).tolist())
    # The first npbench run (all_run_results.csv: 41912332.56159225) follows memcached's 100 runs.
    first_npbench_run = int(t.run[300])
    assert first_npbench_run == 100 and starts[first_npbench_run] == 41912332.56159225
    assert len(t.provenance["environment"]) == 2


def test_experiment_directory_goes_to_the_journal_reader(tmp_path: Path) -> None:
    journal_mod = pytest.importorskip("benchsage.store.journal")
    pytest.importorskip("benchsage.store.importers.benchsage")
    harness = [{"name": n, "unit": u, "better": "lower", "primary": n == "wall_time"} for n, u in
               (("wall_time", "s"), ("user_time", "s"), ("sys_time", "s"), ("max_rss", "KiB"))]  # fmt: skip
    tests = [{"name": "a", "command": "run a", "metrics": harness}]
    runs = [{"id": 0, "arm": "fixed", "arm_index": 0, "order": [0]}, {"id": 1, "arm": "random", "arm_index": 0, "order": [0]}]
    journal = journal_mod.Journal.create(str(tmp_path), {"name": "x"}, tests, runs)
    for run in (0, 1):
        attempt, _ = journal.begin_attempt(run, "local")
        journal.add_trial(
            journal_mod.TrialRecord(
                run_id=run, attempt_id=attempt, worker="local", test_id=0, position=0, predecessor_id=None, started=10.0 * run,
                ended=10.0 * run + 1, duration=1.0, exit_status=0, status="ok", reason=None, wall_time=1.0 + run, user_time=0.1,
                sys_time=0.0, max_rss=100.0, stdout_tail=b"", stderr_tail=b"", stdout_dropped=0, stderr_dropped=0, values={},
            )
        )
        journal.finish_attempt(attempt, run, "done")
    journal.close()
    for fmt in ("auto", "benchsage"):
        t = load_source(tmp_path, format=fmt)
        assert t.test_names[0] == "a" and np.bincount(t.arm[t.primary]).tolist() == [1, 1]
