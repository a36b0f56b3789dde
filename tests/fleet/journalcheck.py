"""Reading an experiment's journal from a fleet test, while the experiment runs or after."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path


def rows(directory: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{directory / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def count(directory: Path, sql: str) -> int:
    """A COUNT(*) from the journal; 0 while the journal is still being created."""
    try:
        return rows(directory, sql)[0][0]
    except sqlite3.Error:
        return 0


def trials_so_far(directory: Path) -> int:
    return count(directory, "SELECT COUNT(*) FROM trials")


def complete_and_unduplicated(out: Path, workers: int, runs: int, tests: int) -> None:
    """Every run done, each by exactly one attempt, and every (worker, run, position) measured once."""
    assert rows(out, "SELECT COUNT(*) FROM runs WHERE status != 'done'") == [(0,)]
    done = rows(out, "SELECT t.worker, t.run_id, t.position FROM trials t JOIN attempts a ON a.id = t.attempt_id "
                     "WHERE a.status = 'done'")
    assert len(done) == len(set(done)) == workers * runs * 2 * tests
    per_run = Counter(r[0] for r in rows(out, "SELECT run_id FROM attempts WHERE status = 'done'"))
    assert set(per_run.values()) == {1}
