"""Journals someone else made (issue #39): `analyze`, `report`, `export` and the Python API read
them inert and bounded.

A real journal, made by `benchsage run` of a small spec with a factor, a sweep, a declared
metric, a comparison and sequential looks, is damaged in each way below. Every reader then ends
with exit status 2 and one line naming the journal and what is wrong in it (the API: a
DataError), with no traceback, within the test's timeout and without writing a big file (the
children run under RLIMIT_FSIZE, with their own temporary folder); the journal whose `trials`
is an endless recursive view included. Every single value of the journal replaced by a value of
another type is read or refused, never a crash.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import pytest

import benchsage
from benchsage.cli import main
from benchsage.errors import DataError
from benchsage.store.exporters.tidy import tidy_table
from benchsage.store.importers.benchsage import read_experiment
from benchsage.store.journal import Journal, journal_path

sys.path.insert(0, str(Path(__file__).parents[1]))
from childpeak import measured, outcome  # noqa: E402

SPEC = """\
[experiment]
name = "untrusted"
runs = 4
seed = 5
stop = "sequential"
looks = 2

[[factor]]
name = "f"
levels = ["x", "y"]
env = "F"

[[sweep]]
name = "n"
levels = [1, 2]

[[test]]
name = "a"
command = "echo {n}"

[[test]]
name = "b"
command = "printf 'v: 3\\n'"

[[test.metric]]
name = "v"
regex = 'v: ([0-9.]+)'

[[compare]]
a = "a[n=1]"
b = "a[n=2]"
"""

FILE_LIMIT = 32 << 20  # bytes any file a reader writes may reach (RLIMIT_FSIZE): the report is ~150 KiB
MEMORY_LIMIT_MIB = 400  # peak RSS of a reading child


def _build(path: Path) -> None:
    folder = Path(tempfile.mkdtemp(dir=path.parent))
    (folder / "experiment.toml").write_text(SPEC)
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", "experiment.toml", "-o", str(path), "--quiet"], cwd=folder,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode in (0, 1), done.stderr


@pytest.fixture
def made(built_once) -> Path:  # type: ignore[no-untyped-def]
    """The experiment directory `benchsage run` made (shared, read only: copy it to change it)."""
    return built_once("untrusted-journal", _build)


def _copy(made: Path, to: Path) -> Path:
    to.mkdir()
    shutil.copyfile(journal_path(made), journal_path(to))
    return to


def _sql(*scripts: str) -> Callable[[Path], None]:
    """Apply the scripts to the journal, each in its own connection (a schema rewritten by one
    is read fresh by the next)."""

    def apply(path: Path) -> None:
        for script in scripts:
            conn = sqlite3.connect(path)
            conn.executescript("PRAGMA synchronous=OFF;" + script)
            conn.commit()
            conn.close()

    return apply


def _loosened(table: str, declared: str, loose: str, then: str) -> Callable[[Path], None]:
    """Rewrite a table's declaration (SQLite's writable_schema, as a hand-made file would have
    it), then apply `then`."""
    return _sql(f"PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql = replace(sql, '{declared}', '{loose}') "
                f"WHERE name = '{table}'; PRAGMA writable_schema=OFF;", then)


def _bytes(data: bytes | None) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        content = path.read_bytes()
        path.write_bytes(data if data is not None else content[: len(content) // 2])

    return apply


ENDLESS_TRIALS = (
    "DROP TABLE trials; CREATE VIEW trials AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT x AS id, 0 AS run_id, 1 AS attempt_id, 'local' AS worker, 0 AS test_id, 0 AS position, NULL AS predecessor_id, "
    "0.0 AS started, 0.0 AS ended, 0.0 AS duration, 0 AS exit_status, 'ok' AS status, NULL AS reason, 0.1 AS wall_time, "
    "0.0 AS user_time, 0.0 AS sys_time, 0.0 AS max_rss, NULL AS stdout_tail, NULL AS stderr_tail, 0 AS stdout_bytes_dropped, "
    "0 AS stderr_bytes_dropped, NULL AS boot_id, NULL AS spawn, NULL AS leftovers, NULL AS hosts FROM c"
)
FIRST_VALUE = "metric = 'v' AND trial_id = (SELECT MIN(trial_id) FROM trial_values WHERE metric = 'v')"

# Each way to damage a journal, and what the one line says (a fragment of it).
DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "the trials table is an endless recursive view": (_sql(ENDLESS_TRIALS), "'trials' is a view"),
    "the tests table is a virtual table": (_sql("DROP TABLE tests; CREATE VIRTUAL TABLE tests USING fts4(id, name, command, metrics)"),
                                           "'tests' is a virtual table"),
    "a table dropped": (_sql("DROP TABLE trials"), "no table 'trials'"),
    "a column dropped": (_sql("ALTER TABLE trials DROP COLUMN status"), "table 'trials' has no column 'status'"),
    "a column computed, not stored": (_loosened("trials", "hosts TEXT", "hosts TEXT GENERATED ALWAYS AS (zeroblob(1000000000)) VIRTUAL",
                                                "SELECT 1"), "column 'hosts' of table 'trials' is computed"),
    "a column of another type": (_loosened("trials", "test_id INTEGER NOT NULL", "test_id TEXT NOT NULL", "SELECT 1"),
                                 "column 'test_id' of table 'trials' is declared TEXT"),
    "ids that are not the primary key": (_loosened("tests", "id INTEGER PRIMARY KEY", "id INTEGER", "SELECT 1"),
                                         "column 'id' of table 'tests' is not its INTEGER PRIMARY KEY"),
    "garbage in meta": (_sql("UPDATE meta SET value = '{not json' WHERE key = 'name'"), "key 'name': column 'value' holds '{not json', which is not JSON"),
    "a meta value of the wrong type": (_sql("UPDATE meta SET value = '5' WHERE key = 'treatments'"), "key 'treatments'"),
    "a significance level that is none": (_sql("UPDATE meta SET value = '7' WHERE key = 'alpha'"), "key 'alpha'"),
    "an unknown format": (_sql("UPDATE meta SET value = '\"99\"' WHERE key = 'format_version'"), "journal format 99 is not supported"),
    "a sequential plan that does not fit the journal": (
        _sql("UPDATE meta SET value = json_set(value, '$.looks', 1000, '$.runs_per_arm', 1000) WHERE key = 'sequential'"), "key 'sequential'"),
    "tests.metrics that is not a JSON list": (_sql("UPDATE tests SET metrics = '{\"a\": 1}' WHERE id = 0"), "expected a list"),
    "tests.metrics cut short": (_sql("UPDATE tests SET metrics = '[{' WHERE id = 0"), "which is not JSON"),
    "a test's metrics without the harness's": (_sql("UPDATE tests SET metrics = '[{\"name\": \"v\"}]' WHERE id = 1"), "lacks wall_time"),
    "test ids with a gap": (_sql("UPDATE tests SET id = 7 WHERE id = 1"), "table 'tests' numbers its"),
    "a run's order naming no test": (_sql("UPDATE runs SET test_order = '[9, 0]' WHERE id = 0"), "names a test the journal does not have"),
    "an arm neither fixed nor random": (_sql("PRAGMA ignore_check_constraints=ON; UPDATE runs SET arm = 'sideways' WHERE id = 0"),
                                        "column 'arm' holds 'sideways'"),
    "a run id that points nowhere": (_sql("UPDATE trials SET run_id = 999 WHERE id = 1"), "column 'run_id' holds 999"),
    "a test id that points nowhere": (_sql("UPDATE trials SET test_id = 99 WHERE id = 1"), "column 'test_id' holds 99"),
    "a predecessor that points nowhere": (_sql("UPDATE trials SET predecessor_id = 99 WHERE id = 2"), "column 'predecessor_id' holds 99"),
    "a treatment that points nowhere": (_sql("UPDATE runs SET treatment = 99 WHERE id = 0"), "column 'treatment' holds 99"),
    "a value of no declared metric": (_sql(f"UPDATE trial_values SET metric = 'nope' WHERE {FIRST_VALUE}"), "column 'metric' holds 'nope'"),
    "NULL where a value is required": (_loosened("trials", "started REAL NOT NULL", "started REAL", "UPDATE trials SET started = NULL WHERE id = 1"),
                                       "column 'started' holds nothing (NULL)"),
    "a successful trial without its measurement": (_sql("UPDATE trials SET wall_time = NULL WHERE id = 1 AND status = 'ok'"),
                                                   "column 'wall_time' holds nothing (NULL), where a journal has a measurement"),
    "text in a number column": (_sql("UPDATE trials SET wall_time = 'fast' WHERE id = 1"), "column 'wall_time' holds 'fast'"),
    "text in an id column": (_sql("UPDATE trials SET test_id = 'a' WHERE id = 1"), "column 'test_id' holds 'a'"),
    "a fraction in an id column": (_sql("UPDATE trials SET position = 0.5 WHERE id = 1"), "column 'position' holds 0.5"),
    "a negative position": (_sql("UPDATE trials SET position = -5 WHERE id = 1"), "column 'position' holds -5"),
    "a negative count": (_sql("UPDATE trials SET leftovers = -3 WHERE id = 1"), "column 'leftovers' holds -3"),
    "a huge position": (_sql("UPDATE trials SET position = 9223372036854775807 WHERE id = 1"), "column 'position' holds 9223372036854775807"),
    "a huge run id": (_sql("UPDATE trials SET run_id = 9223372036854775807 WHERE id = 1"), "column 'run_id' holds 9223372036854775807"),
    "an infinite value": (_sql(f"UPDATE trial_values SET value = 9e999 WHERE {FIRST_VALUE}"), "column 'value' holds inf"),
    "a snapshot that is not JSON": (_sql("UPDATE attempts SET snapshot = '{x' WHERE id = 1"), "column 'snapshot' holds '{x'"),
    "a look that is not one": (_sql("UPDATE looks SET record = '[1]' WHERE id = 0"), "table 'looks', row id 0"),
    "not a database at all": (_bytes(b"this is not SQLite\n" * 100), "not a readable benchsage journal"),
    "a file cut in half": (_bytes(None), "journal.sqlite: "),
}
HANGS_TODAY = {"the trials table is an endless recursive view"}  # read in a child only, with a timeout


CHILD_SECONDS = 60


def _child(args: list[str], tmp: Path) -> tuple[subprocess.CompletedProcess, float]:
    """`benchsage ARGS` in a child with its own empty temporary folder and no file beyond
    FILE_LIMIT, ended by SIGALRM after 60 s; its result and its peak RSS in MiB."""
    temp = tmp / "child-tmp"
    temp.mkdir(exist_ok=True)
    usage = tmp / "child-usage"
    env = {**os.environ, "TMPDIR": str(temp), "SQLITE_TMPDIR": str(temp)}
    with open(tmp / "out", "w+b") as out, open(tmp / "err", "w+b") as err:
        subprocess.run(measured([sys.executable, "-m", "benchsage", *args], usage, CHILD_SECONDS, FILE_LIMIT), stdout=out, stderr=err,
                       stdin=subprocess.DEVNULL, env=env, cwd=tmp)
        returncode, maxrss = outcome(usage)
        assert returncode != -signal.SIGALRM, f"benchsage {' '.join(args)} did not end within {CHILD_SECONDS} s"
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(args, returncode, out.read().decode(), err.read().decode("utf-8", "replace"))
    assert not any(temp.iterdir()), f"left in the temporary folder: {sorted(p.name for p in temp.iterdir())}"
    return result, maxrss / 1024


def _one_line(stderr: str, fragment: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchsage: error: "), stderr
    assert "journal.sqlite" in lines[0] and fragment in lines[0], lines[0]
    return lines[0]


# Read by `benchsage analyze` in a child of its own, with a timeout, a file limit and its peak
# memory measured: the damages that hang or that a table sized by a value could blow up. The
# others are read in this process (a child costs a second of CPU, most of it imports).
IN_A_CHILD = HANGS_TODAY | {"a huge position", "a huge run id", "a negative position", "an infinite value", "not a database at all",
                            "a file cut in half"}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_journal_is_one_line_naming_it_and_exit_2(made: Path, tmp_path: Path, damage: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    apply, fragment = DAMAGES[damage]
    directory = _copy(made, tmp_path / "exp")
    apply(Path(journal_path(directory)))
    if damage in IN_A_CHILD:
        done, peak_mib = _child(["analyze", str(directory)], tmp_path)
        assert done.returncode == 2, (done.returncode, done.stderr)
        _one_line(done.stderr, fragment)
        assert done.stdout == ""
        assert peak_mib < MEMORY_LIMIT_MIB
        return
    with pytest.raises(SystemExit) as exited:
        main(["analyze", str(directory)])
    said = capsys.readouterr()
    assert exited.value.code == 2, said.err
    _one_line(said.err, fragment)
    assert said.out == ""


@pytest.mark.parametrize("damage", sorted(set(DAMAGES) - HANGS_TODAY))
def test_report_export_and_the_api_refuse_it_the_same_way(made: Path, tmp_path: Path, damage: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    apply, fragment = DAMAGES[damage]
    directory = _copy(made, tmp_path / "exp")
    apply(Path(journal_path(directory)))
    lines = []
    for args in (["report", str(directory), "-o", str(tmp_path / "r.html")], ["export", str(directory), "-o", str(tmp_path / "t.csv")]):
        with pytest.raises(SystemExit) as exited:
            main(args)
        assert exited.value.code == 2, args
        lines.append(_one_line(capsys.readouterr().err, fragment))
    assert lines[0] == lines[1]  # the same problem, said the same way
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "t.csv").exists()
    for read in (benchsage.analyze, benchsage.load, tidy_table):
        with pytest.raises(DataError) as refused:
            read(directory)
        assert f"benchsage: error: {refused.value}" == lines[0]


def test_an_endless_view_ends_every_reader_promptly_without_a_temporary_file(made: Path, tmp_path: Path) -> None:
    """The 100 KiB journal whose trials table is a recursive view that never ends (before, SQLite
    sorted its rows into a temporary file until the disk was full): every reader refuses it at
    once, writes no file, and stays small."""
    directory = _copy(made, tmp_path / "exp")
    _sql(ENDLESS_TRIALS)(Path(journal_path(directory)))
    for args in (["analyze", str(directory), "--json"], ["report", str(directory), "-o", "r.html"], ["export", str(directory), "-o", "t.csv"]):
        done, _ = _child(args, tmp_path)
        assert done.returncode == 2, (args, done.returncode, done.stderr[-500:])
        _one_line(done.stderr, "'trials' is a view")
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "t.csv").exists()


def test_a_journal_that_is_a_fifo_or_a_device_is_refused_without_blocking(made: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(journal_path(fifo))
    device = tmp_path / "device"
    device.mkdir()
    os.symlink("/dev/zero", journal_path(device))
    wal = _copy(made, tmp_path / "wal")
    os.mkfifo(journal_path(wal) + "-wal")
    for directory in (fifo, device, wal):
        done, _ = _child(["analyze", str(directory)], tmp_path)
        assert done.returncode == 2, done.stderr
        _one_line(done.stderr, "not a regular file")


def test_the_budget_ends_a_query_that_would_not_end(made: Path) -> None:
    """What the checks of the schema leave to it: any statement the reader runs stops once the
    steps of SQLite reach the journal's budget, and the reader says so."""
    journal = Journal.open(made, read_only=True)
    try:
        assert journal.budget is not None
        with pytest.raises(DataError, match=r"journal\.sqlite: reading it took more than [\d,]+ steps of SQLite"):
            with journal.reading():
                journal.conn.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c").fetchone()
        assert journal.budget.exhausted
    finally:
        journal.close()


def test_reading_a_large_journal_spends_a_small_part_of_its_budget(made: Path, tmp_path: Path) -> None:
    """The budget in proportion to the file leaves a wide margin to a real reading: the journal
    with 60,000 more trials (copies of its own, in new runs), read whole as analyze and export
    read it, spends under a tenth of the budget's share per byte."""
    directory = _copy(made, tmp_path / "exp")
    path = journal_path(directory)
    conn = sqlite3.connect(path)
    conn.executescript("""
        PRAGMA synchronous=OFF;
        CREATE TEMP TABLE k AS WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2500) SELECT i FROM c;
        INSERT INTO trials(run_id, attempt_id, worker, test_id, position, predecessor_id, started, ended, duration, exit_status, status,
                           reason, wall_time, user_time, sys_time, max_rss, stdout_tail, stderr_tail)
            SELECT run_id, attempt_id, worker, test_id, position, predecessor_id, started + k.i, ended + k.i, duration, exit_status, status,
                   reason, wall_time, user_time, sys_time, max_rss, stdout_tail, stderr_tail FROM trials, k ORDER BY k.i, trials.id;
    """)
    conn.commit()
    conn.close()
    journal = Journal.open(directory, read_only=True)
    try:
        journal.check("meta", "tests", "runs", "attempts", "trials", "trial_values", "looks", "deploys")
        assert len(list(journal.trial_rows())) > 60_000
        list(journal.trial_values())
        journal.meta(), journal.tests(), journal.runs(), journal.attempts(), journal.looks()
        assert journal.budget is not None
        from benchsage.store.journal_reader import BASE_STEPS

        per_byte = (journal.budget.steps - BASE_STEPS) / os.path.getsize(path)
        assert journal.budget.spent / os.path.getsize(path) < per_byte / 10
    finally:
        journal.close()


def test_the_reading_connection_writes_nothing_and_trusts_no_schema(made: Path) -> None:
    journal = Journal.open(made, read_only=True)
    try:
        pragmas = {name: journal.conn.execute(f"PRAGMA {name}").fetchone()[0] for name in ("query_only", "trusted_schema", "temp_store")}
        assert pragmas == {"query_only": 1, "trusted_schema": 0, "temp_store": 2}  # temp_store 2: in memory, never a file
        with pytest.raises(sqlite3.OperationalError):
            journal.conn.execute("CREATE TEMP TABLE t(x)")
    finally:
        journal.close()


def test_nothing_a_journal_names_is_run(made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A journal whose spec (generator, reset, tests), treatments and deploy name commands: the
    readers show them at most, and run none."""
    marker = tmp_path / "ran"
    directory = _copy(made, tmp_path / "exp")
    touch = f"touch {marker}"
    spec = SPEC + f'\n[generator]\ncommand = "{touch}"\n\n[reset]\ncommand = "{touch}"\n'
    conn = sqlite3.connect(journal_path(directory))
    conn.execute("UPDATE meta SET value = ? WHERE key = 'spec_text'", (json.dumps(spec),))
    conn.execute("UPDATE meta SET value = ? WHERE key = 'reset'", (json.dumps({"command": touch}),))
    conn.execute("UPDATE tests SET command = ?", (touch,))
    conn.commit()
    conn.close()
    for args in (["analyze", str(directory), "--json"], ["report", str(directory), "-o", str(tmp_path / "r.html")],
                 ["export", str(directory), "-o", str(tmp_path / "t.csv")]):
        with pytest.raises(SystemExit) as exited:
            main(args)
        assert exited.value.code in (0, 1, 4), args
    assert (tmp_path / "r.html").exists() and (tmp_path / "t.csv").exists()
    assert not marker.exists()


# Values of every type a cell can hold (text that is JSON of other shapes too), and JSON of
# every shape for meta's values.
_CELLS = [None, -1, 2**62, 1.5, 1e308, "x", b"\x00", "[1]", '[{"name": 5}]']
_JSON = ["{", "5", "-1", "1e308", '"s"', "null", "[1]", "{}", '[{"name": 5}]']


def _cases(base: Path) -> list[tuple[str, str, object]]:
    conn = sqlite3.connect(base)
    cases: list[tuple[str, str, object]] = []
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        if table == "meta":
            cases += [(f"meta {key}", f"UPDATE meta SET value = ? WHERE key = '{key}'", value)
                      for (key,) in conn.execute("SELECT key FROM meta") for value in _JSON]
            continue
        row = "metric = 'v' AND trial_id = (SELECT MAX(trial_id) FROM trial_values WHERE metric = 'v')" if table == "trial_values" else \
            f"rowid = (SELECT MAX(rowid) FROM {table})"
        for _, column, declared, *_ in conn.execute(f"PRAGMA table_info({table})"):
            # JSON's shapes matter in text; in a number column they are text like "x"
            values = _CELLS if "INT" not in declared and "REAL" not in declared else _CELLS[:-2]
            cases += [(f"{table}.{column}", f"UPDATE {table} SET {column} = ? WHERE {row}", value) for value in values]
    conn.close()
    return cases


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # 1e308: sums overflow, the analysis says what it could not compute
def test_any_value_replaced_by_any_other_is_read_or_refused(made: Path, tmp_path: Path) -> None:
    """Each cell of each table (one row of each) replaced in turn by each of _CELLS, and each value
    of meta by each of _JSON (the NOT NULL and CHECK constraints lifted first, as a hand-made file would not have
    them): the analysis, its JSON and the export either read the journal or refuse it with a
    DataError, never another exception."""
    base = _copy(made, tmp_path / "base")
    _sql("PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql = replace(replace(sql, 'NOT NULL', ''), "
         "'CHECK (arm IN (''fixed'', ''random''))', '') WHERE type = 'table'; PRAGMA writable_schema=OFF;")(Path(journal_path(base)))
    from benchsage.analyze.options import Options
    from benchsage.analyze.pipeline import analyze_loaded
    from benchsage.report.json import analysis_json_text

    crashes, read, refused = [], 0, 0
    case = tmp_path / "case"
    case.mkdir()
    for what, sql, value in _cases(Path(journal_path(base))):
        shutil.copyfile(journal_path(base), journal_path(case))
        conn = sqlite3.connect(journal_path(case))
        conn.execute("PRAGMA synchronous=OFF")
        try:
            conn.execute(sql, (value,))  # a rowid (INTEGER PRIMARY KEY) holds integers only, whatever the file
            conn.commit()
        except sqlite3.IntegrityError:
            continue
        finally:
            conn.close()
        try:
            analysis_json_text(analyze_loaded(read_experiment(case), Options()), None)
            tidy_table(case)
            read += 1
        except DataError:
            refused += 1
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            crashes.append(f"{what} = {value!r}: {type(exc).__name__}: {exc}")
    assert crashes == []
    assert read > 100 and refused > 300  # both ways are taken: neither a reader that refuses everything nor one that checks nothing


def test_a_bisect_directory_from_elsewhere_runs_nothing(tmp_path: Path) -> None:
    """`benchsage report DIR` of a bisect search's directory reads its record: the record's spec
    has a [generator] (run by the search, never by the report), and its repository a commit
    whose signature git would check with the repository's own gpg.program."""
    marker = tmp_path / "ran"
    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    tree = subprocess.run([*git, "rev-parse", "HEAD^{tree}"], check=True, capture_output=True, text=True).stdout.strip()
    signed = (f"tree {tree}\nauthor a <a@b> 1700000000 +0000\ncommitter a <a@b> 1700000000 +0000\n"
              "gpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\nsigned\n")
    commit = subprocess.run([*git, "hash-object", "-t", "commit", "-w", "--stdin"], input=signed, check=True, capture_output=True,
                            text=True).stdout.strip()
    gpg = tmp_path / "gpg.sh"
    gpg.write_text(f"#!/bin/sh\ntouch {marker}\n")
    gpg.chmod(0o755)
    subprocess.run([*git, "config", "log.showSignature", "true"], check=True)
    subprocess.run([*git, "config", "gpg.program", str(gpg)], check=True)
    search = tmp_path / "search"
    search.mkdir()
    spec = f'[experiment]\nname = "x"\nruns = 3\n\n[generator]\ncommand = "touch {marker}; echo true"\n'
    (search / "bisect.json").write_text(json.dumps({
        "spec_path": str(tmp_path / "experiment.toml"), "spec_text": spec, "repo": str(repo), "good": commit, "bad": commit,
        "candidates": [commit], "test": "true", "metric": "wall_time", "alpha": 0.05, "min_effect": 2.0, "max_runs": 10, "looks": 2,
        "seed": 1, "build": None}))
    done, _ = _child(["report", str(search), "-o", "r.html"], tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    assert not marker.exists()
