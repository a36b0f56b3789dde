"""A journal read without trusting it: `analyze`, `report` and `export` read journals that
others made, so their connection can only read, runs nothing the file names, and stops after a
budget of work in proportion to the file's size.

SQLite does what a database's schema says: a view where a table should be can make a query
endless (and fill the disk with its sort), a virtual table runs its module's code. So the
tables a reader reads must be ordinary tables with the journal format's columns, and each
table's values must have the types and ranges the readers rely on (checked once per table,
when a reader first reaches it). Anything else is a DataError naming the file, the table, the
row and the column: one line, exit status 2.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import urllib.parse
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from benchsage.errors import DataError
from benchsage.vocabulary import CORRECTIONS

# SQLite's virtual machine steps a reader may take: a base for a journal's small queries and
# steps per byte of the file (its write-ahead log included). Reading every table of a journal
# takes a few steps per byte (tests/store/test_untrusted_journals.py checks the margin), so the
# budget only ends reads that a file of that size cannot hold: an endless or exploding query.
BASE_STEPS = 20_000_000
STEPS_PER_BYTE = 200
_STEPS_PER_CALL = 10_000  # steps between two calls of the progress handler that counts them

INT32_MAX = 2**31 - 1  # positions and test numbers are 32-bit in the trial table
_FINITE = 1.7976931348623157e308  # the largest double: every finite number lies within ±_FINITE, infinities do not


class Budget:
    """The progress handler of a connection: counts SQLite's steps and interrupts the statement
    under way once the budget is spent (it then raises sqlite3.OperationalError)."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.calls = 0
        self.exhausted = False

    def __call__(self) -> int:
        self.calls += 1
        if self.calls * _STEPS_PER_CALL > self.steps:
            self.exhausted = True
            return 1
        return 0

    @property
    def spent(self) -> int:
        return self.calls * _STEPS_PER_CALL


def connect(path: str) -> tuple[sqlite3.Connection, Budget]:
    """A connection to the journal at `path` that cannot write (it still reads the write-ahead
    log an experiment under way writes), whose schema cannot call functions of ours, whose
    temporary tables and sorts stay in memory (never a temporary file), whose values are at
    most the file's size, and whose work is bounded by a Budget."""
    size = _file_size(path)
    conn = sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro", uri=True, isolation_level=None, timeout=30,
                           check_same_thread=False)
    budget = Budget(BASE_STEPS + STEPS_PER_BYTE * size)
    try:
        conn.set_progress_handler(budget, _STEPS_PER_CALL)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(1 << 20, min(size, 1 << 30)))
        for pragma in ("query_only=ON", "trusted_schema=OFF", "cell_size_check=ON", "temp_store=MEMORY"):
            conn.execute(f"PRAGMA {pragma}")
    except sqlite3.Error:
        conn.close()
        raise
    return conn, budget


def open_checked(path: str, format_version: str, schema: str, optional_tables: Iterable[str], optional_columns: Iterable[tuple[str, str]],
                 harness_metrics: Iterable[str]) -> tuple["Guard", Budget]:
    """The Guard (its connection: connect) of the journal at `path`, whose meta is checked and
    whose format is `format_version`; DataError otherwise."""
    try:
        conn, budget = connect(path)
    except sqlite3.Error as exc:
        raise unreadable(path, None, exc) from None
    guard = Guard(conn, path, schema, optional_tables, optional_columns, harness_metrics)
    try:
        try:
            guard.ensure("meta")
            row = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
        except sqlite3.Error as exc:
            raise unreadable(path, budget, exc) from None
        version = json.loads(row[0]) if row else None  # checked text (META_SHAPES)
        if version != format_version:
            raise DataError(f"{path}: journal format {version or 'unknown'} is not supported by this benchsage")
    except BaseException:
        conn.close()
        raise
    return guard, budget


def tail_bytes(tail: Any) -> bytes:
    """A stored output tail (BLOB; TEXT in a journal that wrote it as text) as bytes; nothing
    for anything else (a number where a tail should be: that column is read unchecked, _UNREAD)."""
    if isinstance(tail, str):
        return tail.encode("utf-8", "replace")
    return bytes(tail) if isinstance(tail, bytes) else b""


def _file_size(path: str) -> int:
    """The bytes of the journal and its write-ahead log; DataError for anything but regular
    files (a FIFO would block the reader, a device would never end)."""
    size = 0
    for name in (path, path + "-wal", path + "-shm"):
        if name != path and not os.path.lexists(name):
            continue
        if not os.path.isfile(name):
            raise DataError(f"{name}: not a regular file, so not part of a journal benchsage wrote")
        if not name.endswith("-shm"):
            size += os.path.getsize(name)
    return size


def unreadable(path: str, budget: Budget | None, exc: sqlite3.Error) -> DataError:
    """The DataError for an SQLite error met while reading the journal at `path`."""
    if budget is not None and budget.exhausted:
        return DataError(
            f"{path}: reading it took more than {budget.steps:,} steps of SQLite, more than a journal of its size needs: "
            "it is damaged or made to be endless; it is not read"
        )
    message = " ".join(str(exc).split())
    return DataError(f"{path}: not a readable benchsage journal ({message})")


@dataclass(frozen=True)
class Column:
    name: str
    declared: str  # INTEGER, REAL, TEXT or BLOB: the column's type, hence its affinity
    kind: str  # "int", "number", "text", "blob"
    required: bool  # NOT NULL in the format


@functools.lru_cache(maxsize=4)
def format_tables(schema: str) -> dict[str, dict[str, Column]]:
    """The tables and columns of the journal format, as its writer's schema creates them."""
    kinds = {"INTEGER": "int", "REAL": "number", "TEXT": "text", "BLOB": "blob"}
    mem = sqlite3.connect(":memory:")
    try:
        mem.executescript(schema)
        names = [n for (n,) in mem.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
        return {table: {c[1]: Column(c[1], c[2].upper(), kinds.get(c[2].upper(), "blob"), bool(c[3]) or bool(c[5]))
                        for c in mem.execute(f"PRAGMA table_info({_quoted(table)})")}
                for table in names}
    finally:
        mem.close()


# Ranges beyond the declared types: the numbering the readers index arrays with. A bound named
# by a string is the journal's own count of that thing (its ids run from 0 to count - 1).
_RANGES: dict[tuple[str, str], tuple[int, int | str]] = {
    ("runs", "arm_index"): (0, INT32_MAX),
    ("runs", "treatment"): (0, "treatments"),
    ("attempts", "run_id"): (0, "runs"),
    ("attempts", "number"): (0, INT32_MAX),
    ("trials", "run_id"): (0, "runs"),
    ("trials", "test_id"): (0, "tests"),
    ("trials", "predecessor_id"): (0, "tests"),
    ("trials", "position"): (0, INT32_MAX - 1),
    ("trials", "stdout_bytes_dropped"): (0, 2**63 - 1),
    ("trials", "stderr_bytes_dropped"): (0, 2**63 - 1),
    ("trials", "leftovers"): (0, 2**63 - 1),
    ("looks", "runs"): (0, INT32_MAX),
}
_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {("runs", "arm"): ("fixed", "random")}
# Columns no reader reads row by row, left unchecked (each column checked costs a look at it in
# every row of the largest table): a trial's output tails (read one at a time, and taken as
# bytes then), its spawn, exit status, end, the bytes of output it dropped, its role hosts' clocks.
_UNREAD = {("trials", name) for name in ("stdout_tail", "stderr_tail", "stdout_bytes_dropped", "stderr_bytes_dropped", "spawn",
                                         "exit_status", "ended", "hosts")}
_KEYS: dict[str, tuple[str, ...]] = {"meta": ("key",), "trial_values": ("trial_id", "metric")}
_NUMBERED = ("tests", "runs")  # tables whose ids are 0, 1, 2, ...: the readers index by them
_BEFORE = {"runs": ("meta", "tests"), "attempts": ("runs",), "trials": ("tests", "runs"), "trial_values": ("tests",)}


@dataclass(frozen=True)
class _Rule:
    column: str
    sql: str  # 1 for a good row, else 0 (never NULL)
    expected: str  # what a journal has there, for the error message


class Guard:
    """What a reader may rely on in one journal, checked table by table as the readers reach
    them: `ensure(table)` before reading a table."""

    def __init__(self, conn: sqlite3.Connection, path: str, schema: str, optional_tables: Iterable[str],
                 optional_columns: Iterable[tuple[str, str]], harness_metrics: Iterable[str] = ()) -> None:
        self.conn = conn
        self.path = path
        self.tables = format_tables(schema)
        self.optional_tables = frozenset(optional_tables)
        self.optional_columns = frozenset(optional_columns)
        self.harness_metrics = tuple(harness_metrics)  # every test declares them, and a successful trial has their columns
        self.present: dict[str, set[str]] = {}  # the checked tables and the format's columns each has
        self.absent: set[str] = set()  # later tables an older journal does not have
        self.bounds: dict[str, int] = {}  # the number of tests, runs and treatments
        self.metrics: dict[str, None] = {}  # the metrics the tests declare, in order
        self.sequential: dict[str, Any] | None = None  # meta "sequential": the plan of a sequential experiment

    def error(self, what: str) -> DataError:
        return DataError(f"{self.path}: {what}")

    def has(self, table: str, column: str | None = None) -> bool:
        """Whether the journal has the table (a later one an older journal lacks) and column."""
        self.ensure(table)
        return table in self.present and (column is None or column in self.present[table])

    def ensure(self, table: str) -> None:
        if table in self.present or table in self.absent:
            return
        for first in _BEFORE.get(table, ()):
            self.ensure(first)
        columns = self._shape(table)
        if columns is None:
            self.absent.add(table)
            return
        if table in _NUMBERED:
            self.bounds[table] = self._numbered(table)
        self._values(table, columns)
        self._documents(table, columns)
        self.present[table] = columns

    def _shape(self, table: str) -> set[str] | None:
        """The format's columns the table has; None for a later table an older journal lacks.
        The table must be an ordinary table (not a view, not a virtual table) without computed
        columns, and have every column of the format but those added since format 1."""
        row = self.conn.execute("SELECT type, sql FROM sqlite_master WHERE name = ? COLLATE NOCASE AND type IN ('table', 'view')",
                                (table,)).fetchone()
        if row is None:
            if table in self.optional_tables:
                return None
            raise self.error(f"it has no table '{table}', which every benchsage journal has: it is not a journal benchsage wrote, "
                             "or it was damaged")
        kind, sql = row
        if kind != "table" or (sql or "").lstrip().upper().startswith("CREATE VIRTUAL"):
            what = "a virtual table" if kind == "table" else f"a {kind}"
            raise self.error(f"'{table}' is {what}, not a table of data as in a journal benchsage wrote (reading it could run "
                             "without end, or run code); it is not read")
        found = {c[1]: c for c in self.conn.execute(f"PRAGMA table_xinfo({_quoted(table)})")}
        have = set()
        for name, column in self.tables[table].items():
            info = found.get(name)
            if info is None:
                if (table, name) in self.optional_columns:
                    continue
                raise self.error(f"table '{table}' has no column '{name}', which every benchsage journal has")
            if info[6] != 0:
                raise self.error(f"column '{name}' of table '{table}' is computed, not stored: not a journal benchsage wrote")
            if str(info[2]).upper() != column.declared:  # the type's affinity is what the checks of its values assume
                raise self.error(f"column '{name}' of table '{table}' is declared {info[2] or 'without a type'}, where a journal "
                                 f"declares {column.declared}")
            if name == "id" and not (info[5] == 1 and str(info[2]).upper() == "INTEGER"):
                raise self.error(f"column 'id' of table '{table}' is not its INTEGER PRIMARY KEY, as in every benchsage journal")
            have.add(name)
        return have

    def _numbered(self, table: str) -> int:
        count, low, high = self.conn.execute(f"SELECT COUNT(*), MIN(id), MAX(id) FROM {table}").fetchone()
        if count and (low != 0 or high != count - 1):
            raise self.error(f"table '{table}' numbers its {count} rows from {low} to {high}; a journal numbers them 0, 1, 2, ...")
        return int(count)

    def _values(self, table: str, columns: set[str]) -> None:
        """Every row's values of the format's columns have their declared type (NULL only where
        the format allows it), numbers are finite and numbering within its range; with the rules
        across columns (_across). The first row that breaks a rule is named, with the column and
        its value, in one scan of the table."""
        # An id (INTEGER PRIMARY KEY: _shape) is a rowid, an integer whatever the file holds.
        rules = [self._rule(table, self.tables[table][name]) for name in self.tables[table]
                 if name in columns and (table, name) not in _UNREAD and name != "id"]
        rules += self._across(table, columns)
        if not rules:
            return
        keys = _KEYS.get(table, ("id",))
        flags = ", ".join(f"NOT ({rule.sql})" for rule in rules)
        cols = ", ".join(_quoted(rule.column) for rule in rules)
        good = " AND ".join(f"({rule.sql})" for rule in rules)
        query = f"SELECT {', '.join(keys)}, {flags}, {cols} FROM {_quoted(table)} WHERE NOT ({good}) LIMIT 1"
        # The declared metrics are one parameter, a JSON list (see _across).
        row = self.conn.execute(query, {"metrics": json.dumps(list(self.metrics))} if table == "trial_values" else {}).fetchone()
        if row is None:
            return
        where = ", ".join(f"{k} {_shown(v)}" for k, v in zip(keys, row))
        flagged = row[len(keys): len(keys) + len(rules)]
        i = next(k for k, flag in enumerate(flagged) if flag)
        value = row[len(keys) + len(rules) + i]
        raise self.error(f"table '{table}', row {where}: column '{rules[i].column}' holds {_shown(value)}, where a journal has "
                         f"{rules[i].expected}")

    def _rule(self, table: str, column: Column) -> _Rule:
        # Comparisons where they tell the type, with the column's affinity known (_shape): every
        # number sorts before every text, every text before every blob. typeof, a function call
        # per value, only where they cannot tell: a comparison finds 1.0 equal to 1.
        c = _quoted(column.name)
        rule = {"int": f"typeof({c}) = 'integer'", "number": f"{c} BETWEEN {-_FINITE!r} AND {_FINITE!r}",
                "text": f"{c} >= '' AND {c} < x''", "blob": f"{c} >= ''"}[column.kind]
        expected = {"int": "a whole number", "number": "a finite number", "text": "text", "blob": "bytes"}[column.kind]
        bound = _RANGES.get((table, column.name))
        if bound is not None:
            low, high = bound[0], (self.bounds[bound[1]] - 1 if isinstance(bound[1], str) else bound[1])
            rule += f" AND {c} BETWEEN {low} AND {high}"
            expected += f" from {low} to {high}" if high >= low else f" (the journal has no {bound[1]} to number)"
        choices = _CHOICES.get((table, column.name))
        if choices:
            rule += f" AND {c} IN ({', '.join(repr(x) for x in choices)})"
            expected = " or ".join(f"'{x}'" for x in choices)
        # Each rule is 1 or 0, never NULL: the conjunction of them all (_values) stops at the first broken.
        if column.required:
            return _Rule(column.name, f"{c} IS NOT NULL AND {rule}", expected)
        return _Rule(column.name, f"{c} IS NULL OR ({rule})", expected + " or nothing (NULL)")

    def _across(self, table: str, columns: set[str]) -> list[_Rule]:
        """Rules that join columns: a successful trial has the harness's measurements, and a
        value is of a metric some test declares. (A trial whose attempt, or a value whose trial,
        is not in the journal is no analysed attempt's: the readers' joins leave it out.)"""
        if table == "trials":
            return [_Rule(name, f"status IS NOT 'ok' OR {_quoted(name)} IS NOT NULL", "a measurement, as the trial succeeded")
                    for name in self.harness_metrics if name in columns]
        if table == "trial_values":
            return [_Rule("metric", "metric IN (SELECT value FROM json_each(:metrics))",
                          "the name of a metric a test declares (table 'tests', column 'metrics')")]
        return []

    def _documents(self, table: str, columns: set[str]) -> None:
        """The JSON values the readers decode are JSON of the shapes they read."""
        if table == "meta":
            meta = checked_meta(self, self.conn.execute("SELECT key, value FROM meta"))
            self.bounds["treatments"] = len(meta.get("treatments") or ())
            self.sequential = meta.get("sequential")
        elif table == "tests":
            for test_id, text in self.conn.execute("SELECT id, metrics FROM tests ORDER BY id"):
                metrics = self.decoded("tests", f"row id {test_id}", "metrics", text, METRICS_SHAPE)
                names = [m["name"] for m in metrics]
                missing = [name for name in self.harness_metrics if name not in names]
                if missing:
                    raise self.error(f"table 'tests', row id {test_id}: column 'metrics' lacks {', '.join(missing)}, which the "
                                     "harness records for every test")
                self.metrics.update(dict.fromkeys(names))
        elif table == "runs":
            for run_id, text in self.conn.execute("SELECT id, test_order FROM runs ORDER BY id"):
                order = self.decoded("runs", f"row id {run_id}", "test_order", text, [int])
                if any(not 0 <= t < self.bounds["tests"] for t in order):
                    raise self.error(f"table 'runs', row id {run_id}: column 'test_order' holds {_shown(text)}, which names a test the "
                                     f"journal does not have (it has {self.bounds['tests']}, numbered from 0)")
            plan = self.sequential
            if plan is not None and not (1 <= plan["looks"] <= plan["runs_per_arm"] <= self.bounds["runs"] and plan["workers"] >= 1):
                raise self.error(f"table 'meta', key 'sequential': {plan['looks']} looks at up to {plan['runs_per_arm']} runs per arm "
                                 f"on {plan['workers']} workers, in a journal of {self.bounds['runs']} runs")
        elif table == "attempts":
            for attempt_id, text in self.conn.execute("SELECT id, snapshot FROM attempts WHERE snapshot IS NOT NULL ORDER BY id"):
                self.decoded("attempts", f"row id {attempt_id}", "snapshot", text, SNAPSHOT_SHAPE)
        elif table == "looks":
            for look_id, text in self.conn.execute("SELECT id, record FROM looks ORDER BY id"):
                self.decoded("looks", f"row id {look_id}", "record", text, LOOK_SHAPE)

    def decoded(self, table: str, where: str, column: str, text: Any, shape: Any) -> Any:
        """The JSON `text` of a column, which must have `shape` (see conforms)."""
        try:
            value = json.loads(text) if isinstance(text, str) else _NOT_JSON
        except (ValueError, RecursionError):
            value = _NOT_JSON
        if value is _NOT_JSON:
            raise self.error(f"table '{table}', {where}: column '{column}' holds {_shown(text)}, which is not JSON")
        complaint = conforms(value, shape)
        if complaint is not None:
            raise self.error(f"table '{table}', {where}: column '{column}' holds {_shown(text)}: {complaint}")
        return value


_NOT_JSON = object()


def conforms(value: Any, shape: Any) -> str | None:
    """Why `value` does not have `shape`, or None when it has. A shape is a type (float: any
    number; object: anything), a tuple of shapes (one of them), [shape] (a list of them),
    {str: shape} (a mapping of any keys to them) or a dict of keys to shapes (a record: those
    keys, where present, have their shapes; a key ending in "!" must be present)."""
    if isinstance(shape, tuple):
        complaints = [conforms(value, s) for s in shape]
        return None if any(c is None for c in complaints) else next(c for c in complaints if c)
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"expected a list, found {_kind(value)}"
        return next((f"item {i}: {c}" for i, item in enumerate(value) if (c := conforms(item, shape[0])) is not None), None)
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"expected an object, found {_kind(value)}"
        if list(shape) == [str]:
            return next((f"'{k}': {c}" for k, item in value.items() if (c := conforms(item, shape[str])) is not None), None)
        missing = next((k[:-1] for k in shape if k.endswith("!") and k[:-1] not in value), None)
        if missing is not None:
            return f"expected an object with '{missing}'"
        return next((f"'{k}': {c}" for k, s in ((k.rstrip("!"), s) for k, s in shape.items())
                     if k in value and (c := conforms(value[k], s)) is not None), None)
    if shape is object:
        return None
    if shape is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) <= _FINITE
        return None if ok else f"expected a finite number, found {_kind(value)}"
    if shape is int:
        return None if isinstance(value, int) and not isinstance(value, bool) else f"expected a whole number, found {_kind(value)}"
    return None if isinstance(value, shape) else f"expected {_KIND_NAMES.get(shape, shape.__name__)}, found {_kind(value)}"


_KIND_NAMES = {str: "text", bool: "true or false", type(None): "null", dict: "an object", list: "a list"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    return {str: "text", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    """A value for an error message, cut short."""
    if value is None:
        return "nothing (NULL)"
    text = repr(value) if not isinstance(value, bytes) else f"{len(value)} bytes"
    return text if len(text) <= 60 else text[:57] + "..."


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# What the readers read of a journal's meta, by key: its shape (see conforms). Keys not named
# here are passed on as they are (shown in reports, escaped, never run).
_TEXT_LIST = [str]
META_SHAPES: Mapping[str, Any] = {
    "format_version": str,
    "name": (str, type(None)),
    "spec_text": (str, type(None)),
    "spec_path": (str, type(None)),
    "seed": (int, type(None)),
    "runs_per_arm": (int, type(None)),
    "random_orders": (str, type(None)),
    "spec_warnings": (_TEXT_LIST, type(None)),
    "generated": (_TEXT_LIST, type(None)),
    "treatments": ([{"context": object, "factors": ({str: object}, type(None))}], type(None)),
    "alpha": (float, type(None)),
    "correction": (str, type(None)),
    "sequential": ({"runs_per_arm!": int, "looks!": int, "workers!": int, "alpha!": float, "correction!": str, "min_effect!": float,
                    "decide": str}, type(None)),
    "deploy": (dict, type(None)),
    "created": (float, type(None)),
    "tool_version": (str, type(None)),
    "workers": ([dict], type(None)),
    "compare": ([{"a!": str, "b!": str, "metric": (str, type(None))}], type(None)),
    "observer_levels": (_TEXT_LIST, type(None)),
    "observer_baseline": (str, type(None)),
    "factors": ([{"name!": str, "levels!": [object]}], type(None)),
    "context_dimensions": (_TEXT_LIST, type(None)),
    "sweeps": ([{"name!": str}], type(None)),
    "test_sweeps": ({str: {str: object}}, type(None)),
}

# A look of a sequential experiment as looks.record records it (stats.sequential.Look.to_record).
LOOK_SHAPE = {"index!": int, "runs!": int, "information!": float, "alpha_spent!": float, "m!": int, "decided!": int,
              "newly_decided!": int, "stop!": bool, "tests!": [{"test!": (str, [str]), "n_fixed!": int, "n_random!": int}]}

# A run's environment snapshot (agent/snapshot.py): what its readers index into; they check the rest.
SNAPSHOT_SHAPE = {"files": ({str: (str, type(None))}, type(None))}

# A test's metrics as tests.metrics records them.
METRICS_SHAPE = [{"name!": str, "unit": str, "better": str, "primary": bool}]


def checked_meta(guard: Guard, rows: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
    """The meta table as a dict, each value decoded and of its shape (META_SHAPES)."""
    out = {}
    for key, text in rows:
        out[key] = guard.decoded("meta", f"key {_shown(key)}", "value", text, META_SHAPES.get(key, object))
    alpha = out.get("alpha")
    if alpha is not None and not 0 < alpha < 1:
        raise guard.error(f"table 'meta', key 'alpha': {alpha!r} is not a significance level (between 0 and 1)")
    if out.get("correction") not in (None, *CORRECTIONS):
        raise guard.error(f"table 'meta', key 'correction': {_shown(out['correction'])} is none of {', '.join(CORRECTIONS)}")
    return out


__all__ = ["Budget", "Guard", "META_SHAPES", "METRICS_SHAPE", "checked_meta", "conforms", "connect", "format_tables", "open_checked",
           "tail_bytes", "unreadable"]
