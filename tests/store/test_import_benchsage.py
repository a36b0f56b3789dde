"""The journal importer's warnings about how trials were measured: processes a test's trials
left running, in journals that count them, that have the column empty (written before), or
that lack the column (an older journal, which the analysis reads without changing)."""

from __future__ import annotations

import hashlib
import sqlite3
import sys
from pathlib import Path

import pytest

from benchsage.store.importers.benchsage import leftover_warnings, read_experiment
from benchsage.store.journal import Journal, journal_path

sys.path.insert(0, str(Path(__file__).parents[1] / "analyze"))
from measured_data import write_measured  # noqa: E402

SERVER = (
    "server: 6 of 12 trials left processes running (12 in all), killed before the next trial: a leftover would perturb "
    "whatever runs next (an order effect made by the test); stop them in the test itself (a [reset] runs between runs, "
    "not between trials)"
)


def test_a_test_whose_trials_left_processes_is_named_with_the_counts(tmp_path: Path) -> None:
    table = read_experiment(write_measured(tmp_path))
    assert [w for w in table.warnings if "left processes running" in w] == [SERVER]


def test_no_warning_when_nothing_was_left(tmp_path: Path) -> None:
    table = read_experiment(write_measured(tmp_path, leftovers={"server": 0, "tiny": 0, "big": 0}))
    assert not [w for w in table.warnings if "left processes" in w]


def test_interrupted_attempts_do_not_count(tmp_path: Path) -> None:
    """Only trials of analysed attempts count: a half-done run that was redone is not analysed."""
    write_measured(tmp_path)
    with sqlite3.connect(journal_path(tmp_path)) as conn:
        conn.execute("UPDATE attempts SET status = 'interrupted' WHERE run_id = 0")
    conn.close()
    (warning,) = [w for w in read_experiment(tmp_path).warnings if "left processes" in w]
    assert warning.startswith("server: 5 of 11 trials left processes running (10 in all)")


def test_an_older_journal_is_read_without_being_changed_and_resume_adds_the_column(tmp_path: Path) -> None:
    """Written before trials recorded leftovers: the analysis reads it as it is (it opens the
    journal read-only: not one byte changes) and warns of nothing; the writer that resumes it
    adds the column, all NULL (not known)."""
    write_measured(tmp_path)
    with sqlite3.connect(journal_path(tmp_path)) as conn:
        conn.execute("ALTER TABLE trials DROP COLUMN leftovers")
    conn.close()
    before = hashlib.sha256(Path(journal_path(tmp_path)).read_bytes()).hexdigest()
    table = read_experiment(tmp_path)
    assert not [w for w in table.warnings if "left processes" in w] and len(table) > 0
    assert hashlib.sha256(Path(journal_path(tmp_path)).read_bytes()).hexdigest() == before
    with sqlite3.connect(journal_path(tmp_path)) as conn:
        assert "leftovers" not in {row[1] for row in conn.execute("PRAGMA table_info(trials)")}
        assert leftover_warnings(conn, ("server", "tiny", "big")) == []
    conn.close()
    Journal.open(tmp_path).close()
    with sqlite3.connect(journal_path(tmp_path)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM trials WHERE leftovers IS NULL").fetchone() == (36,)
    conn.close()


def test_a_reader_cannot_write_to_the_journal(tmp_path: Path) -> None:
    write_measured(tmp_path)
    journal = Journal.open(tmp_path, read_only=True)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly|read-only"):
            journal.set_meta("name", "changed")
    finally:
        journal.close()
    assert Journal.open(tmp_path, read_only=True).meta()["name"] != "changed"
