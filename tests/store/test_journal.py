"""The journal on real SQLite: the plan before any trial, each trial committed at once,
interrupted attempts kept but not analysed, and the table the analysis reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from benchsage.errors import DataError
from benchsage.store.importers.benchsage import read_experiment
from benchsage.store.journal import Journal, TrialRecord, check_directory_for, journal_path
from benchsage.store.table import FIRST

TESTS = [
    {"name": "a", "command": "run a", "metrics": [{"name": "ops", "unit": "ops/s", "better": "higher", "primary": True},
                                                  {"name": "wall_time", "unit": "s", "better": "lower", "primary": False},
                                                  {"name": "user_time", "unit": "s", "better": "lower", "primary": False},
                                                  {"name": "sys_time", "unit": "s", "better": "lower", "primary": False},
                                                  {"name": "max_rss", "unit": "KiB", "better": "lower", "primary": False}]},
    {"name": "b", "command": "run b", "metrics": [{"name": "wall_time", "unit": "s", "better": "lower", "primary": True},
                                                  {"name": "user_time", "unit": "s", "better": "lower", "primary": False},
                                                  {"name": "sys_time", "unit": "s", "better": "lower", "primary": False},
                                                  {"name": "max_rss", "unit": "KiB", "better": "lower", "primary": False}]},
]
RUNS = [{"id": 0, "arm": "fixed", "arm_index": 0, "order": [0, 1]}, {"id": 1, "arm": "random", "arm_index": 0, "order": [1, 0]}]


def trial(run: int, attempt: int, test: int, pos: int, pred: int | None, status: str = "ok", ops: float = 10.0) -> TrialRecord:
    return TrialRecord(
        run_id=run, attempt_id=attempt, worker="local", test_id=test, position=pos, predecessor_id=pred, started=100.0 + run + pos,
        ended=100.5 + run + pos, duration=0.5, exit_status=0 if status == "ok" else 1, status=status,
        reason=None if status == "ok" else "exit status 1", wall_time=0.5, user_time=0.1, sys_time=0.05, max_rss=2048.0,
        stdout_tail=b"x" * 20000, stderr_tail=b"", stdout_dropped=0, stderr_dropped=0,
        values={"ops": ops} if status == "ok" and test == 0 else {},
    )


def other_connection(directory: Path) -> sqlite3.Connection:
    return sqlite3.connect(journal_path(directory))


def test_plan_is_committed_before_any_trial(tmp_path: Path) -> None:
    journal = Journal.create(str(tmp_path), {"name": "x", "seed": 5}, TESTS, RUNS)
    with other_connection(tmp_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT id, arm, test_order, status FROM runs ORDER BY id").fetchall() == [
            (0, "fixed", "[0, 1]", "planned"), (1, "random", "[1, 0]", "planned")
        ]
    assert journal.meta()["seed"] == 5
    journal.close()


def test_each_trial_is_visible_to_another_process_once_added(tmp_path: Path) -> None:
    journal = Journal.create(str(tmp_path), {"name": "x"}, TESTS, RUNS)
    attempt, number = journal.begin_attempt(0, "local")
    assert number == 1
    journal.add_trial(trial(0, attempt, 0, 0, None))
    with other_connection(tmp_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM trials").fetchone() == (1,)
        assert conn.execute("SELECT length(stdout_tail) FROM trials").fetchone() == (8192,)  # tails are bounded
        assert conn.execute("SELECT metric, value FROM trial_values").fetchall() == [("ops", 10.0)]
    journal.close()


def test_interrupted_attempts_are_kept_but_not_analysed(tmp_path: Path) -> None:
    journal = Journal.create(str(tmp_path), {"name": "x", "alpha": 0.01}, TESTS, RUNS)
    a0, _ = journal.begin_attempt(0, "local")
    journal.add_trial(trial(0, a0, 0, 0, None, ops=11))
    journal.add_trial(trial(0, a0, 1, 1, 0))
    journal.finish_attempt(a0, 0, "done")
    a1, _ = journal.begin_attempt(1, "local")
    journal.add_trial(trial(1, a1, 1, 0, None))  # then the controller dies
    journal.close()

    journal = Journal.open(tmp_path)
    assert journal.interrupt_unfinished() == 1
    assert [r["status"] for r in journal.runs()] == ["done", "planned"]
    a2, number = journal.begin_attempt(1, "local")
    assert number == 2
    journal.add_trial(trial(1, a2, 1, 0, None))
    journal.add_trial(trial(1, a2, 0, 1, 1, status="failed"))
    journal.finish_attempt(a2, 1, "done")
    journal.close()

    table = read_experiment(tmp_path)
    assert table.excluded == 1  # the failed trial
    # Analysed: attempt 1 of run 0 (2 trials) and attempt 2 of run 1 (1 ok trial); not the interrupted one.
    a_ops = table.value[(table.test == 0) & (np.array(table.metric_names)[table.metric] == "ops")]
    assert list(a_ops) == [11.0]
    rows_b = (table.test == 1) & (np.array(table.metric_names)[table.metric] == "wall_time")
    assert list(table.run[rows_b]) == [0, 1]
    assert list(table.position[rows_b]) == [1, 0]
    assert list(table.predecessor[rows_b]) == [0, FIRST]
    assert list(table.arm[rows_b]) == [0, 1]
    # Primary family: a's declared metric, b's wall time; harness metrics of a are not primary.
    names = np.array(table.metric_names)[table.metric]
    assert set(zip(np.array(table.test_names)[table.test[table.primary]], names[table.primary])) == {("a", "ops"), ("b", "wall_time")}
    assert table.metric_info("ops").better == "higher"
    assert any("interrupted run attempt" in w for w in table.warnings)
    # The failed trial is an outcome of its test (the analysis's failed_tests), not a warning.
    outcomes = {o.test: o for o in table.outcomes}
    assert dict(outcomes["a"].statuses) == {"ok": 1, "failed": 1} and outcomes["a"].failed == 1 and outcomes["b"].failed == 0
    assert outcomes["a"].primary == ("ops",) and outcomes["b"].primary == ("wall_time",)
    assert table.provenance["alpha"] == 0.01 and set(table.provenance["run_starts"]) == {0, 1}


def test_opening_something_else_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such experiment directory"):
        Journal.open(tmp_path / "nope")
    with pytest.raises(DataError, match="not a benchsage experiment directory"):
        Journal.open(tmp_path)
    (tmp_path / "journal.sqlite").write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(DataError, match="not a readable benchsage journal"):
        Journal.open(tmp_path)


def test_a_failing_rollback_never_hides_the_error_that_ended_the_transaction(tmp_path: Path) -> None:
    from benchsage.store.journal import _transaction

    conn = sqlite3.connect(tmp_path / "j.sqlite", isolation_level=None)
    try:
        with pytest.raises(ZeroDivisionError) as info:
            with _transaction(conn):
                conn.execute("COMMIT")  # the transaction ends early: its ROLLBACK will fail
                1 / 0
        assert any("rolling the journal's transaction back failed too" in note and "no transaction is active" in note
                   for note in getattr(info.value, "__notes__", ()))
        with _transaction(conn):  # the connection is usable again
            conn.execute("CREATE TABLE t (x)")
    finally:
        conn.close()


MAKE_AND_HANG = """
import os, sys, time
from benchsage.store.journal import Journal
folder, ready = sys.argv[1], sys.argv[2]
def runs():
    for i in range(100000):
        if i == 5000:  # half the plan written: say so, and wait to be killed
            open(ready, "w").close()
            while True:
                time.sleep(60)
        yield {"id": i, "arm": "fixed", "arm_index": i, "order": [0, 1]}
Journal.create(folder, {"name": "x"}, TESTS, runs())
"""


def test_a_journal_killed_while_being_made_is_not_there_and_the_folder_takes_a_new_one(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    folder, ready = tmp_path / "out", tmp_path / "ready"
    script = f"TESTS = {TESTS!r}\n" + MAKE_AND_HANG
    proc = subprocess.Popen([sys.executable, "-c", script, str(folder), str(ready)])
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert not Journal.exists(folder)  # no journal without its plan ...
    assert any(name.startswith("journal.sqlite.creating") for name in os.listdir(folder))  # ... only the one being made
    check_directory_for(str(folder), "any digest")  # `benchsage run -o` takes the folder again ...
    journal = Journal.create(str(folder), {"name": "y"}, TESTS, RUNS)
    journal.close()
    assert not any("creating" in name for name in os.listdir(folder))  # ... and clears what was left
    reader = Journal.open(str(folder), read_only=True)
    try:
        assert reader.meta()["name"] == "y" and len(reader.runs()) == len(RUNS)
    finally:
        reader.close()
