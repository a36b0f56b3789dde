"""The run loop against real processes, real SQLite and real crashes (kill -9, SIGTERM)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from benchsage.errors import ExperimentError, UsageError
from benchsage.execute.local import LocalWorker
from benchsage.execute.progress import QuietProgress
from benchsage.design.experiment import plan_experiment
from benchsage.execute.create import create_experiment
from benchsage.execute.runner import Runner
from benchsage.execute.session import spec_from_journal
from benchsage.spec import load_spec
from benchsage.store.journal import Journal, journal_path


def make_spec(tmp_path: Path, body: str, *, runs: int = 3, reset: str | None = "true", seed: int = 11) -> Path:
    reset_part = f'[reset]\ncommand = "{reset}"\ntimeout = 20\n' if reset else ""
    text = f'[experiment]\nname = "t"\nruns = {runs}\nseed = {seed}\n{reset_part}\n' + textwrap.dedent(body)
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return path


def execute(spec_path: Path, directory: Path) -> Journal:
    spec = load_spec(spec_path)
    journal = create_experiment(spec, plan_experiment(spec), str(directory))
    with LocalWorker() as worker:
        Runner(spec, journal, worker, QuietProgress()).execute()
    return journal


def rows(directory: Path, sql: str) -> list[tuple]:
    # Read-only: polling a journal that does not exist yet must not create an empty one.
    conn = sqlite3.connect(f"file:{journal_path(directory)}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


THREE = """
[[test]]
name = "a"
command = "echo 'value: 1.5'"
[[test.metric]]
name = "v"
regex = 'value: ([0-9.]+)'
[[test]]
name = "b"
command = "true"
[[test]]
name = "c"
command = "printf '{\\"r\\": {\\"ops\\": 42}}'"
[[test.metric]]
name = "ops"
json = "r.ops"
better = "higher"
"""


def test_full_experiment_is_journaled(tmp_path: Path) -> None:
    journal = execute(make_spec(tmp_path, THREE), tmp_path / "out")
    runs = journal.runs()
    assert len(runs) == 6 and all(r["status"] == "done" for r in runs)
    trials = rows(tmp_path / "out", "SELECT run_id, test_id, position, predecessor_id, status FROM trials ORDER BY id")
    assert len(trials) == 18 and all(t[4] == "ok" for t in trials)
    # Every run holds each test once, in the planned order, with the right predecessors.
    for run in runs:
        mine = [t for t in trials if t[0] == run["id"]]
        assert [t[1] for t in mine] == run["order"]
        assert [t[2] for t in mine] == [0, 1, 2]
        assert [t[3] for t in mine] == [None] + run["order"][:-1]
    values = rows(tmp_path / "out", "SELECT metric, value FROM trial_values")
    counts = Counter(m for m, _ in values)
    # The whole tree's peak_memory and cpu_time come with every trial where the host gives
    # the agent cgroups (root here), with none where it does not.
    assert counts.pop("peak_memory", 0) == counts.pop("cpu_time", 0) in (0, 18)
    assert counts == {"v": 6, "ops": 6}
    assert {v for m, v in values if m == "v"} == {1.5} and {v for m, v in values if m == "ops"} == {42.0}
    # Harness metrics and a snapshot per run.
    wall = rows(tmp_path / "out", "SELECT wall_time, user_time, sys_time, max_rss FROM trials")
    assert all(w > 0 and u >= 0 and s >= 0 and r > 0 for w, u, s, r in wall)
    attempts = journal.attempts()
    assert len(attempts) == 6 and all(a["snapshot"] and a["reset_status"] == "ok" for a in attempts)
    journal.close()


def test_failures_are_recorded_never_numbers(tmp_path: Path) -> None:
    body = """
    [[test]]
    name = "exits"
    command = "echo out; echo err >&2; exit 3"
    [[test]]
    name = "hangs"
    command = "sleep 30"
    timeout = 0.5
    [[test]]
    name = "garbled"
    command = "echo 'no number here'"
    [[test.metric]]
    name = "v"
    regex = 'value: ([0-9.]+)'
    [[test]]
    name = "killed"
    command = "kill -9 $$"
    [[test]]
    name = "fine"
    command = "true"
    """
    started = time.monotonic()
    journal = execute(make_spec(tmp_path, body, runs=1), tmp_path / "out")
    assert time.monotonic() - started < 20  # the hanging test was killed at its timeout, twice
    got = {
        (name, status, reason)
        for name, status, reason in rows(
            tmp_path / "out", "SELECT tests.name, trials.status, trials.reason FROM trials JOIN tests ON tests.id = trials.test_id"
        )
    }
    assert ("exits", "failed", "exit status 3") in got
    assert ("hangs", "timeout", "exceeded its timeout of 0.5 s and was killed") in got
    assert any(n == "garbled" and s == "bad-output" and "metric 'v'" in r for n, s, r in got)
    assert ("killed", "failed", "killed by SIGKILL") in got
    assert ("fine", "ok", None) in got
    assert rows(tmp_path / "out", "SELECT COUNT(*) FROM trial_values JOIN trials ON trials.id = trial_id WHERE status != 'ok'") == [(0,)]
    out, err = journal.trial_output(rows(tmp_path / "out", "SELECT id FROM trials WHERE test_id = 0 LIMIT 1")[0][0])
    assert out == b"out\n" and err == b"err\n"
    assert all(r["status"] == "done" for r in journal.runs())  # failing trials do not stop the experiment
    journal.close()


def test_huge_output_is_bounded(tmp_path: Path) -> None:
    body = """
    [[test]]
    name = "loud"
    command = "head -c 1500000000 /dev/zero; echo 'value: 7'"
    [[test.metric]]
    name = "v"
    regex = 'value: ([0-9.]+)'
    """
    execute(make_spec(tmp_path, body, runs=1), tmp_path / "out")
    (status, tail_len, dropped), = {r for r in rows(tmp_path / "out", "SELECT status, length(stdout_tail), stdout_bytes_dropped FROM trials")}
    assert status == "ok" and tail_len <= 8192 and dropped >= 1_500_000_000 - (1 << 20)
    assert rows(tmp_path / "out", "SELECT DISTINCT value FROM trial_values WHERE metric NOT IN ('peak_memory', 'cpu_time')") == [(7.0,)]


def test_failing_reset_stops_cleanly_and_resume_finishes(tmp_path: Path) -> None:
    flag = tmp_path / "allow"
    spec_path = make_spec(tmp_path, THREE, runs=3, reset=f"test -e {flag} || {{ echo no flag >&2; exit 4; }}")
    spec = load_spec(spec_path)
    journal = create_experiment(spec, plan_experiment(spec), str(tmp_path / "out"))
    with pytest.raises(ExperimentError) as info, LocalWorker() as worker:
        Runner(spec, journal, worker, QuietProgress()).execute()
    message = str(info.value)
    assert "reset failed before run 1 (exit status 4: no flag)" in message and "benchsage resume" in message
    assert info.value.exit_status == 3
    assert rows(tmp_path / "out", "SELECT COUNT(*) FROM trials") == [(0,)]  # no trial ran after a failed reset
    assert rows(tmp_path / "out", "SELECT status, reset_status, reset_exit FROM attempts") == [("reset-failed", "failed", 4)]
    journal.close()
    flag.touch()
    journal = Journal.open(tmp_path / "out")
    with LocalWorker() as worker:
        Runner(spec_from_journal(journal), journal, worker, QuietProgress()).execute()
    assert all(r["status"] == "done" for r in journal.runs())
    assert rows(tmp_path / "out", "SELECT COUNT(*) FROM trials") == [(18,)]
    journal.close()


def test_directory_of_another_experiment_is_refused(tmp_path: Path) -> None:
    execute(make_spec(tmp_path, THREE, runs=1), tmp_path / "out").close()
    other = make_spec(tmp_path, THREE.replace('"true"', '"true; true"'), runs=1)
    with pytest.raises(UsageError, match="already holds a different experiment"):
        create_experiment(load_spec(other), plan_experiment(load_spec(other)), str(tmp_path / "out"))
    same = load_spec(make_spec(tmp_path, THREE, runs=1))
    with pytest.raises(UsageError, match="already holds this experiment, finished"):
        create_experiment(same, plan_experiment(same), str(tmp_path / "out"))
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty"):
        create_experiment(load_spec(other), plan_experiment(load_spec(other)), str(tmp_path / "junk"))


# -- crashes of the controller ------------------------------------------------------------------

SLOW = """
[[test]]
name = "one"
command = "sleep 0.15; echo 'value: 1'"
[[test.metric]]
name = "v"
regex = 'value: ([0-9.]+)'
[[test]]
name = "two"
command = "sleep 0.15; echo 'value: 2'"
[[test.metric]]
name = "v"
regex = 'value: ([0-9.]+)'
[[test]]
name = "three"
command = "sleep 0.15"
"""


def start_cli(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "benchsage", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


def count(directory: Path, sql: str) -> int:
    try:
        return rows(directory, sql)[0][0]
    except sqlite3.Error:
        return 0


def check_complete_and_unduplicated(directory: Path, runs: int, tests: int) -> None:
    journal = Journal.open(directory)
    assert all(r["status"] == "done" for r in journal.runs())
    done = rows(directory, "SELECT t.run_id, t.position FROM trials t JOIN attempts a ON a.id = t.attempt_id WHERE a.status = 'done'")
    assert len(done) == runs * 2 * tests
    assert len(set(done)) == len(done)  # nothing duplicated
    per_run = Counter(a["run_id"] for a in journal.attempts() if a["status"] == "done")
    assert set(per_run.values()) == {1}  # exactly one complete attempt per run
    journal.close()


@pytest.mark.slow
def test_kill_9_during_a_trial_then_resume(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, SLOW, runs=3)
    out = tmp_path / "out"
    proc = start_cli("run", str(spec), "-o", str(out), "--quiet", cwd=tmp_path)
    wait_for(lambda: count(out, "SELECT COUNT(*) FROM trials") >= 5)
    time.sleep(0.05)  # somewhere inside the next trial
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    measured_before = rows(out, "SELECT id, run_id, position, status FROM trials")
    assert 5 <= len(measured_before) < 18
    resumed = start_cli("resume", str(out), "--json", cwd=tmp_path)
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr.decode()
    assert b"interrupted run(s) will be redone" in stderr
    check_complete_and_unduplicated(out, 3, 3)
    # Everything measured before the crash is still in the journal, untouched.
    after = {r[0]: r for r in rows(out, "SELECT id, run_id, position, status FROM trials")}
    assert all(after[r[0]] == r for r in measured_before)
    # The interrupted attempt's trials are kept but not analysed.
    assert count(out, "SELECT COUNT(*) FROM attempts WHERE status = 'interrupted'") == 1
    import json

    doc = json.loads(stdout)
    assert {(t["test"], t["n_fixed"], t["n_random"]) for t in doc["tests"] if t["primary"]} == {
        ("one", 3, 3), ("two", 3, 3), ("three", 3, 3)
    }


@pytest.mark.slow
def test_kill_9_during_a_reset_then_resume(tmp_path: Path) -> None:
    marker = tmp_path / "reset-ran"
    spec = make_spec(tmp_path, SLOW, runs=2, reset=f"echo x >> {marker}; sleep 0.4")
    out = tmp_path / "out"
    proc = start_cli("run", str(spec), "-o", str(out), "--quiet", cwd=tmp_path)
    # Kill inside the second run's reset: one run done, the reset of the next one started.
    wait_for(lambda: marker.exists() and len(marker.read_text().split()) >= 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert count(out, "SELECT COUNT(*) FROM runs WHERE status = 'done'") == 1
    resumed = start_cli("resume", str(out), "--quiet", cwd=tmp_path)
    _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr.decode()
    check_complete_and_unduplicated(out, 2, 3)


def test_sigterm_keeps_what_was_measured(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, SLOW.replace("sleep 0.15", "sleep 0.5"), runs=2)
    out = tmp_path / "out"
    proc = start_cli("run", str(spec), "-o", str(out), "--quiet", cwd=tmp_path)
    wait_for(lambda: count(out, "SELECT COUNT(*) FROM trials") >= 4)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 3
    lines = stderr.decode().strip().splitlines()
    errors = [line for line in lines if line.startswith("benchsage: error:")]
    assert len(errors) == 1 and errors[0] == lines[-1]  # one line, after any warnings
    assert "interrupted during run 2" in errors[0] and "benchsage resume" in errors[0]
    assert "Traceback" not in stderr.decode()
    assert count(out, "SELECT COUNT(*) FROM attempts WHERE status = 'interrupted'") == 1
    assert count(out, "SELECT COUNT(*) FROM runs WHERE status = 'done'") == 1
    # The trial that was running when SIGTERM arrived was killed with its process group.
    assert subprocess.run(["pgrep", "-f", "sleep 0.5"], capture_output=True).returncode == 1
