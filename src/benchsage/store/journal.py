"""The journal: one SQLite database (WAL) per experiment directory.

The plan is written before the first trial; each trial's row is committed before the next
trial starts, so killing benchsage loses at most the trial in flight. Each finished run is
flushed to disk with an fsync of the write-ahead log (what synchronous=FULL would do for that
commit), taken in a thread while the next run's reset and snapshot go on; the runner waits for
it (flushed()) before that run's first trial: after a power loss only the run in flight can be
missing, and resume redoes that run from its reset anyway. Per-trial commits skip the fsync
because it would cost about 1 ms a trial, twice the harness budget.

A run can have several attempts: an attempt interrupted by a crash is marked "interrupted",
and its trials stay in the journal (nothing measured is deleted) but are not analysed; the
run is redone from its reset as a new attempt.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from benchsage.errors import DataError, UsageError
from benchsage.store import journal_reader
from benchsage.store.modes import make_file, make_folder
from benchsage.vocabulary import FINISHED, HARNESS_METRICS, NOT_NEEDED

JOURNAL_NAME = "journal.sqlite"
FORMAT_VERSION = "1"
TAIL_BYTES = 8192  # stdout/stderr bytes stored per trial

_SETUPS_TABLE = """
CREATE TABLE IF NOT EXISTS setups (          -- commands run before a run's trials (treatments)
    id INTEGER PRIMARY KEY,
    attempt_id INTEGER NOT NULL REFERENCES attempts(id),
    kind TEXT NOT NULL,              -- build (a context's link order) | setup (a factor's level)
    what TEXT NOT NULL,              -- "context c3", "factor smt=on"
    command TEXT NOT NULL,
    status TEXT NOT NULL,            -- ok | failed | timeout
    exit_status INTEGER,
    wall REAL,
    stdout BLOB,
    stderr BLOB
);
"""
_LOOKS_TABLE = """
CREATE TABLE IF NOT EXISTS looks (           -- the interim analyses of a sequential experiment
    id INTEGER PRIMARY KEY,          -- 0-based look
    runs INTEGER NOT NULL,           -- runs per arm on each worker that it analysed
    time REAL NOT NULL,              -- epoch seconds
    record TEXT NOT NULL             -- JSON: stats.sequential.Look.to_record()
);
"""
_DEPLOYS_TABLE = """
CREATE TABLE IF NOT EXISTS deploys (         -- the experiment shipped to each host's dir, and verified
    id INTEGER PRIMARY KEY,
    worker TEXT NOT NULL,            -- the worker, or "worker/role" for a role's host
    dir TEXT NOT NULL,
    tree TEXT NOT NULL,              -- the git tree id the host's dir verified as (meta "deploy" has the expected one)
    files INTEGER NOT NULL,          -- files the dir holds
    files_sent INTEGER NOT NULL,
    bytes_sent INTEGER NOT NULL,
    seconds REAL NOT NULL,
    time REAL NOT NULL               -- epoch seconds
);
"""
_INITS_TABLE = """
CREATE TABLE IF NOT EXISTS inits (           -- [init], once per worker (per role host) before its first run
    id INTEGER PRIMARY KEY,
    worker TEXT NOT NULL,
    role TEXT,                       -- the role host it ran on; NULL without roles
    command TEXT NOT NULL,
    status TEXT NOT NULL,            -- ok | failed | timeout
    exit_status INTEGER,
    time REAL NOT NULL,              -- epoch seconds when it finished
    wall REAL,
    stdout BLOB,
    stderr BLOB
);
"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tests (
    id INTEGER PRIMARY KEY,          -- 0-based index in the spec's order
    name TEXT NOT NULL UNIQUE,
    command TEXT NOT NULL,
    metrics TEXT NOT NULL            -- JSON list of {name, unit, better, primary}
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,          -- position of the run in the plan (time order)
    arm TEXT NOT NULL CHECK (arm IN ('fixed', 'random')),
    arm_index INTEGER NOT NULL,
    test_order TEXT NOT NULL,        -- JSON list of test ids
    status TEXT NOT NULL DEFAULT 'planned',  -- planned | running | done | failed | skipped (its context's build failed)
                                             -- | not-needed (a sequential experiment stopped before it)
    worker TEXT NOT NULL DEFAULT 'local',    -- the worker that carries this run out
    treatment INTEGER                -- index into meta "treatments" (contexts, observer, factors); NULL: none
);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    number INTEGER NOT NULL,         -- 1 for the first attempt of the run
    worker TEXT NOT NULL,
    status TEXT NOT NULL,            -- running | done | interrupted | reset-failed | failed | context-failed
    started REAL NOT NULL,
    ended REAL,
    snapshot TEXT,                   -- JSON environment snapshot
    reset_status TEXT,               -- ok | failed | timeout | none
    reset_exit INTEGER,
    reset_wall REAL,
    reset_stdout BLOB,
    reset_stderr BLOB,
    detail TEXT
);
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    attempt_id INTEGER NOT NULL REFERENCES attempts(id),
    worker TEXT NOT NULL,
    test_id INTEGER NOT NULL REFERENCES tests(id),
    position INTEGER NOT NULL,
    predecessor_id INTEGER,          -- NULL for the first trial of a run
    started REAL NOT NULL,           -- epoch seconds
    ended REAL NOT NULL,
    duration REAL NOT NULL,          -- monotonic seconds (= wall_time)
    exit_status INTEGER,
    status TEXT NOT NULL,            -- ok | failed | timeout | bad-output
    reason TEXT,
    wall_time REAL, user_time REAL, sys_time REAL, max_rss REAL,
    stdout_tail BLOB, stderr_tail BLOB,
    stdout_bytes_dropped INTEGER NOT NULL DEFAULT 0,
    stderr_bytes_dropped INTEGER NOT NULL DEFAULT 0,
    boot_id TEXT,                    -- the host's boot identity while the trial ran
    spawn TEXT,                      -- exec (no shell) | shell (/bin/sh -c)
    leftovers INTEGER,               -- processes it left running, killed when it ended; NULL: not known
    hosts TEXT                       -- a worker with roles: JSON {role: {boot_id, started/ended or open/close}}, each on
                                     -- that host's clock; NULL: one host
);
CREATE TABLE IF NOT EXISTS trial_values (
    trial_id INTEGER NOT NULL REFERENCES trials(id),
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (trial_id, metric)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS trials_by_attempt ON trials(attempt_id);
""" + _SETUPS_TABLE + _LOOKS_TABLE + _DEPLOYS_TABLE + _INITS_TABLE
_LATER_TABLES = ("setups", "looks", "deploys", "inits")  # added since format 1 was first written
_READ_TABLES = ("meta", "tests", "runs", "attempts", "trials", "trial_values", "looks", "deploys")  # what analyze, report, export read


@dataclass(frozen=True)
class TrialRecord:
    run_id: int
    attempt_id: int
    worker: str
    test_id: int
    position: int
    predecessor_id: int | None
    started: float
    ended: float
    duration: float
    exit_status: int | None
    status: str
    reason: str | None
    wall_time: float
    user_time: float
    sys_time: float
    max_rss: float
    stdout_tail: bytes
    stderr_tail: bytes
    stdout_dropped: int
    stderr_dropped: int
    values: Mapping[str, float]
    boot_id: str | None = None
    spawn: str | None = None
    leftovers: int | None = None
    hosts: Mapping[str, Any] | None = None


def journal_path(directory: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(directory), JOURNAL_NAME)


CREATING = ".creating"  # a journal being made (Journal.create) is this name until it holds its plan


def _remove_making(directory: str) -> None:
    """What a Journal.create that was killed left: the journal it was making."""
    for name in os.listdir(directory):
        if name.startswith(JOURNAL_NAME + CREATING):
            os.remove(os.path.join(directory, name))


def _fsync_folder(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# Columns added since format 1 was first written; a journal without them gets them on open.
_ADDED_COLUMNS = (
    ("runs", "worker", "TEXT NOT NULL DEFAULT 'local'"),
    ("trials", "boot_id", "TEXT"),
    ("trials", "spawn", "TEXT"),
    ("trials", "leftovers", "INTEGER"),
    ("runs", "treatment", "INTEGER"),
    ("trials", "hosts", "TEXT"),
)


_INSERT_TRIAL = """INSERT INTO trials(run_id, attempt_id, worker, test_id, position, predecessor_id, started, ended, duration,
       exit_status, status, reason, wall_time, user_time, sys_time, max_rss, stdout_tail, stderr_tail,
       stdout_bytes_dropped, stderr_bytes_dropped, boot_id, spawn, leftovers, hosts)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""


def _locked(method: Any) -> Any:
    """Serialize a Journal method: one writer for every worker thread of an experiment."""

    def wrapper(self: "Journal", *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)

    wrapper.__name__ = method.__name__
    wrapper.__doc__ = method.__doc__
    return wrapper


class Journal:
    """Read and write one experiment's journal. Its methods may be called from several threads
    (one per worker): they take turns on one connection, so there is one writer."""

    def __init__(self, path: str, conn: sqlite3.Connection, guard: journal_reader.Guard | None = None,
                 budget: journal_reader.Budget | None = None) -> None:
        self.path = path
        self.conn = conn
        self.guard = guard  # read_only: checks each table before it is read (store/journal_reader.py)
        self.budget = budget
        self.lock = threading.RLock()
        self._flusher: threading.Thread | None = None  # the fsync of the last finished run, if under way
        self._flush_error: OSError | None = None

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: str, meta: Mapping[str, Any], tests: Sequence[Mapping[str, Any]], runs: Sequence[Mapping[str, Any]],
               *, private: bool = False) -> "Journal":
        """A new journal holding the plan, committed before anything runs. It is made whole
        under another name and renamed into place: a journal is there with its plan, or not at
        all (an experiment killed while its journal was being made starts again with `run`).
        Its folder (if made here) and its files are never writable by group or other, and with
        `private` (the spec holds a secret) readable by the user alone (store/modes.py)."""
        make_folder(directory, private)
        path = journal_path(directory)
        making = path + CREATING
        _remove_making(directory)
        make_file(making, private)  # SQLite gives its -journal, -wal and -shm files the database's mode
        conn = sqlite3.connect(making, isolation_level=None)  # rollback journal, synchronous FULL: durable at close
        try:
            conn.execute("PRAGMA foreign_keys=ON")
            conn.executescript(_SCHEMA)  # executescript commits on its own; the plan goes in one transaction
            with _transaction(conn):
                conn.executemany(
                    "INSERT INTO meta(key, value) VALUES (?, ?)",
                    [(k, json.dumps(v)) for k, v in {"format_version": FORMAT_VERSION, **meta}.items()],
                )
                conn.executemany(
                    "INSERT INTO tests(id, name, command, metrics) VALUES (?, ?, ?, ?)",
                    [(i, t["name"], t["command"], json.dumps(t["metrics"])) for i, t in enumerate(tests)],
                )
                conn.executemany(
                    "INSERT INTO runs(id, arm, arm_index, test_order, worker, treatment) VALUES (?, ?, ?, ?, ?, ?)",
                    [(r["id"], r["arm"], r["arm_index"], json.dumps(list(r["order"])), r.get("worker", "local"), r.get("treatment"))
                     for r in runs],
                )
        finally:
            conn.close()
        os.replace(making, path)
        _fsync_folder(directory)
        conn = _connect(path)
        return cls(path, conn)

    @classmethod
    def open(cls, directory: str | os.PathLike[str], *, read_only: bool = False) -> "Journal":
        """The journal of an experiment directory: for resuming it, or, `read_only`, for
        reading it (analyze, report, export), which never writes to it, not even to bring an
        older journal's tables up to date."""
        directory = os.fspath(directory)
        path = journal_path(directory)
        if not os.path.isdir(directory):
            raise DataError(f"{directory}: no such experiment directory")
        if not os.path.exists(path):
            raise DataError(f"{directory}: not a benchsage experiment directory (no {JOURNAL_NAME})")
        if read_only:
            return cls._open_read_only(path)
        try:
            conn = _connect(path)
            version = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise DataError(f"{path}: not a readable benchsage journal ({exc})") from None
        if version is None or json.loads(version[0]) != FORMAT_VERSION:
            raise DataError(f"{path}: journal format {version[0] if version else 'unknown'} is not supported by this benchsage")
        _add_missing_columns(conn)
        return cls(path, conn)

    @classmethod
    def _open_read_only(cls, path: str) -> "Journal":
        guard, budget = journal_reader.open_checked(path, FORMAT_VERSION, _SCHEMA, _LATER_TABLES,
                                                    [(table, column) for table, column, _ in _ADDED_COLUMNS], HARNESS_METRICS)
        return cls(path, guard.conn, guard, budget)

    @contextmanager
    def reading(self) -> Iterator["Journal"]:
        """Read the journal: an SQLite error on the way (a damaged file, a read past its budget)
        is a DataError naming the journal and the problem."""
        try:
            yield self
        except sqlite3.Error as exc:
            raise journal_reader.unreadable(self.path, self.budget, exc) from None

    def check(self, *tables: str) -> None:
        """Check these tables (by default every table the readers read) of a journal opened
        read_only, before reading them through `conn`; the Journal's own reading methods check
        what they read. A reader that checks them all refuses a journal as every other does."""
        if self.guard is not None:
            with self.reading():
                for table in tables or _READ_TABLES:
                    self.guard.ensure(table)

    @staticmethod
    def exists(directory: str | os.PathLike[str]) -> bool:
        return os.path.exists(journal_path(directory))

    @_locked
    def close(self) -> None:
        self.flushed()
        self.conn.close()

    def flushed(self) -> None:
        """Wait until the last finished run is on disk (finish_attempt's fsync). Raises the
        OSError the fsync met, as a failed synchronous commit would have."""
        flusher = self._flusher
        if flusher is not None:
            flusher.join()
            self._flusher = None
        error, self._flush_error = self._flush_error, None
        if error is not None:
            raise error

    def _flush_later(self) -> None:
        """fsync the write-ahead log, which holds every commit since the last checkpoint, in a
        thread (os.fsync lets the other threads run)."""
        self.flushed()

        def flush() -> None:
            try:
                fd = os.open(self.path + "-wal", os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:  # checkpointed and removed: the database file holds it all
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

        def run() -> None:
            try:
                flush()
            except OSError as exc:
                self._flush_error = exc

        self._flusher = threading.Thread(target=run, name="journal-flush", daemon=True)
        self._flusher.start()

    # -- reading ---------------------------------------------------------------------------

    # A journal opened read_only has each table checked (self._check) before it is read: its
    # values have their types and its JSON the shapes read here (store/journal_reader.py).
    @_locked
    def meta(self) -> dict[str, Any]:
        with self.reading():
            self._check("meta")
            return {k: json.loads(v) for k, v in self.conn.execute("SELECT key, value FROM meta")}

    @_locked
    def tests(self) -> list[dict[str, Any]]:
        with self.reading():
            self._check("tests")
            rows = self.conn.execute("SELECT id, name, command, metrics FROM tests ORDER BY id").fetchall()
        return [{"id": i, "name": n, "command": c, "metrics": json.loads(m)} for i, n, c, m in rows]

    @_locked
    def runs(self) -> list[dict[str, Any]]:
        with self.reading():
            self._check("runs")
            have = _columns(self.conn, "runs")  # an older journal read without adding its missing columns
            worker = "worker" if "worker" in have else "'local'"
            treatment = "treatment" if "treatment" in have else "NULL"
            rows = self.conn.execute(f"SELECT id, arm, arm_index, test_order, status, {worker}, {treatment} FROM runs ORDER BY id").fetchall()
        return [
            {"id": i, "arm": a, "arm_index": ai, "order": json.loads(o), "status": s, "worker": w, "treatment": t}
            for i, a, ai, o, s, w, t in rows
        ]

    @_locked
    def attempts(self) -> list[dict[str, Any]]:
        with self.reading():
            self._check("attempts")
            cur = self.conn.execute(
                "SELECT id, run_id, number, worker, status, started, ended, snapshot, reset_status, reset_exit, reset_wall, detail FROM attempts ORDER BY id"
            )
            cols = [d[0] for d in cur.description]
            rows = cur.fetchall()
        out = []
        for row in rows:
            rec = dict(zip(cols, row))
            rec["snapshot"] = json.loads(rec["snapshot"]) if rec["snapshot"] else None
            out.append(rec)
        return out

    def _check(self, table: str) -> None:
        if self.guard is not None:
            self.guard.ensure(table)

    def _later_rows(self, table: str, sql: str) -> list[Any]:
        """The rows of a table added since format 1: none from an older journal opened read_only."""
        if self.guard is not None:
            with self.reading():
                return self.conn.execute(sql).fetchall() if self.guard.has(table) else []
        try:
            return self.conn.execute(sql).fetchall()
        except sqlite3.OperationalError:  # an older journal the writer could not bring up to date
            return []

    @_locked
    def progress(self, worker: str | None = None) -> tuple[int, int]:
        """(runs done, trials of done attempts), of one worker or of all."""
        where, args = ("AND runs.worker = ?", (worker,)) if worker is not None else ("", ())
        done = self.conn.execute(f"SELECT COUNT(*) FROM runs WHERE status = 'done' {where}", args).fetchone()[0]
        trials = self.conn.execute(
            "SELECT COUNT(*) FROM trials JOIN attempts ON trials.attempt_id = attempts.id JOIN runs ON trials.run_id = runs.id "
            f"WHERE attempts.status = 'done' {where}",
            args,
        ).fetchone()[0]
        return int(done), int(trials)

    def test_successes(self) -> dict[int, tuple[int, int]]:
        """Each test's analysed trials and how many of them succeeded: {test id: (trials, ok)}."""
        rows = self.conn.execute(
            "SELECT t.test_id, COUNT(*), SUM(t.status = 'ok') FROM trials t JOIN attempts a ON t.attempt_id = a.id "
            "WHERE a.status = 'done' GROUP BY t.test_id"
        ).fetchall()
        return {int(test): (int(n), int(ok or 0)) for test, n, ok in rows}

    # The reading queries name their join order (CROSS JOIN): each table's rows in id order, the
    # others found by primary key, whatever statistics a journal carries for SQLite's planner.
    def trial_rows(self, *, analysed_only: bool = True) -> Iterator[tuple[Any, ...]]:
        """Trials of completed attempts (or all), in time order, with their run's arm."""
        where = "WHERE a.status = 'done'" if analysed_only else ""
        return self._rows(
            ("attempts", "trials"),
            f"""SELECT t.id, t.run_id, r.arm, t.worker, t.test_id, t.position, t.predecessor_id, t.started, t.ended,
                       t.duration, t.exit_status, t.status, t.reason, t.wall_time, t.user_time, t.sys_time, t.max_rss,
                       a.number, a.status
                FROM trials t CROSS JOIN attempts a ON t.attempt_id = a.id CROSS JOIN runs r ON t.run_id = r.id
                {where} ORDER BY t.id""",
        )

    def trial_values(self, *, analysed_only: bool = True) -> Iterator[tuple[int, str, float]]:
        where = "WHERE a.status = 'done'" if analysed_only else ""
        return self._rows(
            ("attempts", "trials", "trial_values"),
            f"""SELECT v.trial_id, v.metric, v.value FROM trial_values v
                CROSS JOIN trials t ON v.trial_id = t.id CROSS JOIN attempts a ON t.attempt_id = a.id {where} ORDER BY v.trial_id""",
        )

    def _rows(self, tables: Sequence[str], sql: str) -> Iterator[Any]:
        """The rows of a query: the cursor itself, or for a journal opened read_only the rows
        of checked tables, an SQLite error while they come a DataError (Journal.reading)."""
        if self.guard is None:
            return self.conn.execute(sql)
        return self._checked_rows(tables, sql)

    def _checked_rows(self, tables: Sequence[str], sql: str) -> Iterator[Any]:
        with self.reading():
            for table in tables:
                self._check(table)
            yield from self.conn.execute(sql)

    @_locked
    def trial_output(self, trial_id: int) -> tuple[bytes, bytes]:
        with self.reading():
            self._check("trials")
            row = self.conn.execute("SELECT stdout_tail, stderr_tail FROM trials WHERE id = ?", (trial_id,)).fetchone()
        return (journal_reader.tail_bytes(row[0]), journal_reader.tail_bytes(row[1])) if row else (b"", b"")

    # -- writing ---------------------------------------------------------------------------

    @_locked
    def interrupt_unfinished(self) -> int:
        """Mark attempts left 'running' by a crash as interrupted; their runs go back to planned."""
        with _transaction(self.conn):
            cur = self.conn.execute(
                "UPDATE attempts SET status = 'interrupted', ended = COALESCE(ended, ?), detail = COALESCE(detail, 'interrupted') WHERE status = 'running'",
                (time.time(),),
            )
            # Skipped runs (their context's link-order build failed) are tried again: the build may be fixed.
            self.conn.execute("UPDATE runs SET status = 'planned' WHERE status IN ('running', 'failed', 'skipped')")
        return cur.rowcount

    @_locked
    def begin_attempt(self, run_id: int, worker: str) -> tuple[int, int]:
        """A new attempt at a run: (attempt id, attempt number)."""
        with _transaction(self.conn):
            number = self.conn.execute("SELECT COUNT(*) FROM attempts WHERE run_id = ?", (run_id,)).fetchone()[0] + 1
            cur = self.conn.execute(
                "INSERT INTO attempts(run_id, number, worker, status, started) VALUES (?, ?, ?, 'running', ?)",
                (run_id, number, worker, time.time()),
            )
            self.conn.execute("UPDATE runs SET status = 'running' WHERE id = ?", (run_id,))
        return int(cur.lastrowid or 0), int(number)

    @_locked
    def record_reset(self, attempt_id: int, status: str, exit_status: int | None, wall: float | None, stdout: bytes, stderr: bytes) -> None:
        with _transaction(self.conn):
            self.conn.execute(
                "UPDATE attempts SET reset_status = ?, reset_exit = ?, reset_wall = ?, reset_stdout = ?, reset_stderr = ? WHERE id = ?",
                (status, exit_status, wall, stdout[-TAIL_BYTES:], stderr[-TAIL_BYTES:], attempt_id),
            )

    @_locked
    def record_setup(self, attempt_id: int, kind: str, what: str, command: str, status: str, exit_status: int | None,
                     wall: float | None, stdout: bytes, stderr: bytes) -> None:
        with _transaction(self.conn):
            self.conn.execute(
                "INSERT INTO setups(attempt_id, kind, what, command, status, exit_status, wall, stdout, stderr) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (attempt_id, kind, what, command, status, exit_status, wall, stdout[-TAIL_BYTES:], stderr[-TAIL_BYTES:]),
            )

    @_locked
    def setups(self) -> list[dict[str, Any]]:
        rows = self._later_rows("setups", "SELECT attempt_id, kind, what, command, status, exit_status, wall FROM setups ORDER BY id")
        keys = ("attempt_id", "kind", "what", "command", "status", "exit_status", "wall")
        return [dict(zip(keys, row)) for row in rows]

    @_locked
    def record_init(self, worker: str, role: str | None, command: str, status: str, exit_status: int | None, wall: float | None,
                    stdout: bytes, stderr: bytes) -> None:
        with _transaction(self.conn):
            self.conn.execute(
                "INSERT INTO inits(worker, role, command, status, exit_status, time, wall, stdout, stderr) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (worker, role, command, status, exit_status, time.time(), wall, stdout[-TAIL_BYTES:], stderr[-TAIL_BYTES:]),
            )

    @_locked
    def inits(self) -> list[dict[str, Any]]:
        """Every [init] that ran, in order: {worker, role, command, status, exit_status, time, wall}."""
        rows = self._later_rows("inits", "SELECT worker, role, command, status, exit_status, time, wall FROM inits ORDER BY id")
        keys = ("worker", "role", "command", "status", "exit_status", "time", "wall")
        return [dict(zip(keys, row)) for row in rows]

    @_locked
    def looks(self) -> list[dict[str, Any]]:
        """The looks of a sequential experiment, in order: {id, runs, time, record}."""
        rows = self._later_rows("looks", "SELECT id, runs, time, record FROM looks ORDER BY id")
        return [{"id": i, "runs": n, "time": t, "record": json.loads(r)} for i, n, t, r in rows]

    @_locked
    def look_values(self, runs: int) -> list[tuple[int, str, str, float]]:
        """(test id, arm, metric, value) of the ok trials of the done attempts of the first `runs`
        runs of each arm on every worker (arm_index < runs): what a look at `runs` runs per arm
        analyses. wall_time from the trial, every other metric from its recorded values."""
        where = "WHERE a.status = 'done' AND t.status = 'ok' AND r.arm_index < ?"
        joins = "JOIN attempts a ON t.attempt_id = a.id JOIN runs r ON t.run_id = r.id"
        rows = self.conn.execute(
            f"""SELECT t.test_id, r.arm, 'wall_time', t.wall_time FROM trials t {joins} {where}
                UNION ALL
                SELECT t.test_id, r.arm, v.metric, v.value FROM trial_values v JOIN trials t ON v.trial_id = t.id {joins} {where}""",
            (runs, runs),
        ).fetchall()
        return [(int(test), arm, metric, float(value)) for test, arm, metric, value in rows]

    @_locked
    def record_look(self, index: int, runs: int, record: Mapping[str, Any], not_needed: Sequence[int] = ()) -> None:
        """Journal a look and, when it stopped the experiment, mark the planned runs it made
        unnecessary, in one transaction flushed to disk: a resumed experiment never takes a look
        again nor carries out a run the look ruled out."""
        self.conn.execute("PRAGMA synchronous=FULL")
        try:
            with _transaction(self.conn):
                self.conn.execute("INSERT INTO looks(id, runs, time, record) VALUES (?, ?, ?, ?)",
                                  (index, runs, time.time(), json.dumps(record, allow_nan=False)))
                self.conn.executemany("UPDATE runs SET status = ? WHERE id = ? AND status IN ('planned', 'skipped')",
                                      [(NOT_NEEDED, run_id) for run_id in not_needed])
        finally:
            self.conn.execute("PRAGMA synchronous=NORMAL")

    @_locked
    def record_snapshot(self, attempt_id: int, snapshot: Mapping[str, Any]) -> None:
        with _transaction(self.conn):
            self.conn.execute("UPDATE attempts SET snapshot = ? WHERE id = ?", (json.dumps(snapshot, default=str), attempt_id))

    @_locked
    def add_trial(self, t: TrialRecord) -> int:
        """Insert one trial and its values, and commit before returning. A trial without values
        is one statement, committed on its own (one round through SQLite, not three: this is
        between two trials of a run)."""
        conn = self.conn
        row = (
            t.run_id, t.attempt_id, t.worker, t.test_id, t.position, t.predecessor_id, t.started, t.ended,
            t.duration, t.exit_status, t.status, t.reason, t.wall_time, t.user_time, t.sys_time, t.max_rss,
            t.stdout_tail[-TAIL_BYTES:], t.stderr_tail[-TAIL_BYTES:],
            # bytes of output the journal does not hold: the worker's and its own trimming
            t.stdout_dropped + max(0, len(t.stdout_tail) - TAIL_BYTES), t.stderr_dropped + max(0, len(t.stderr_tail) - TAIL_BYTES),
            t.boot_id, t.spawn, t.leftovers, json.dumps(t.hosts) if t.hosts is not None else None,
        )
        if not t.values:
            return int(conn.execute(_INSERT_TRIAL, row).lastrowid or 0)
        conn.execute("BEGIN")
        try:
            trial_id = int(conn.execute(_INSERT_TRIAL, row).lastrowid or 0)
            conn.executemany(
                "INSERT INTO trial_values(trial_id, metric, value) VALUES (?, ?, ?)",
                [(trial_id, k, v) for k, v in t.values.items()],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return trial_id

    @_locked
    def finish_attempt(self, attempt_id: int, run_id: int, status: str, detail: str | None = None) -> None:
        """Close an attempt; a done run is flushed to disk (an fsync, in a thread: flushed()
        waits for it, close() too)."""
        run_status = {"done": "done", "interrupted": "planned", "context-failed": "skipped"}.get(status, "failed")
        with _transaction(self.conn):
            self.conn.execute(
                "UPDATE attempts SET status = ?, ended = ?, detail = ? WHERE id = ?", (status, time.time(), detail, attempt_id)
            )
            self.conn.execute("UPDATE runs SET status = ? WHERE id = ?", (run_status, run_id))
        if status == "done":
            self._flush_later()

    @_locked
    def record_deploy(self, record: Mapping[str, Any]) -> None:
        """One host's verified deploy (execute/deploy.py Shipped.record())."""
        with _transaction(self.conn):
            self.conn.execute("INSERT INTO deploys(worker, dir, tree, files, files_sent, bytes_sent, seconds, time) "
                              "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (*(record[k] for k in _DEPLOY_KEYS[:-1]), time.time()))

    @_locked
    def deploys(self) -> list[dict[str, Any]]:
        """Every verified deploy, oldest first."""
        rows = self._later_rows("deploys", f"SELECT {', '.join(_DEPLOY_KEYS)} FROM deploys ORDER BY id")
        return [dict(zip(_DEPLOY_KEYS, row)) for row in rows]

    @_locked
    def set_meta(self, key: str, value: Any) -> None:
        with _transaction(self.conn):
            self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value)))


_DEPLOY_KEYS = ("worker", "dir", "tree", "files", "files_sent", "bytes_sent", "seconds", "time")


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    try:
        conn.execute(_SETUPS_TABLE)  # tables added since format 1 was first written
        conn.execute(_LOOKS_TABLE)
        conn.execute(_DEPLOYS_TABLE)
        conn.execute(_INITS_TABLE)
    except sqlite3.OperationalError:
        pass  # a read-only journal: readers treat the table as empty
    for table, column, decl in _ADDED_COLUMNS:
        if column not in _columns(conn, table):
            try:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
            except sqlite3.OperationalError:
                pass  # a read-only journal: readers treat the column as absent


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


class _transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
            return
        # The error inside the transaction is the one to see; a rollback that fails as well
        # (SQLite may have rolled back already) is added to it, never raised in its place.
        try:
            self.conn.execute("ROLLBACK")
        except sqlite3.Error as second:
            if isinstance(exc, BaseException):
                exc.add_note(f"rolling the journal's transaction back failed too: {type(second).__name__}: {second}")


def check_directory_for(directory: str, spec_digest: str) -> None:
    """Refuse to start an experiment in a directory that already holds one."""
    if not Journal.exists(directory):
        # The workers' connection logs (workers/) are written while connecting, before the journal.
        # So is a journal that a killed `run` was making (Journal.create removes it).
        if os.path.isdir(directory) and {n for n in os.listdir(directory) if not n.startswith(JOURNAL_NAME + CREATING)} - {"workers"}:
            raise UsageError(f"{directory}: directory is not empty and holds no benchsage journal; choose another -o DIR")
        return
    try:
        journal = Journal.open(directory, read_only=True)
        meta = journal.meta()
        runs = journal.runs()
        journal.close()
    except DataError as exc:
        raise UsageError(f"{directory}: already holds a journal that cannot be read ({exc}); choose another -o DIR") from None
    if meta.get("spec_digest") != spec_digest:
        raise UsageError(
            f"{directory}: already holds a different experiment ('{meta.get('name')}', another spec); choose another -o DIR"
        )
    if all(r["status"] in FINISHED for r in runs):
        raise UsageError(f"{directory}: already holds this experiment, finished; analyze it with `benchsage analyze {directory}` or choose another -o DIR")
    raise UsageError(f"{directory}: already holds this experiment, unfinished; continue it with `benchsage resume {directory}`")
