"""A test that fails is said first: under the progress, in the verdict, in the JSON and in the
exit status (4); a test that fails in each of its first trials stops the experiment, unless
--ignore-failures. Real commands, real journals."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

SPEC = """
[experiment]
name = "failing"
runs = {runs}
seed = 3
{extra}

[[test]]
name = "fine"
command = "true"

[[test]]
name = "typo"
command = "{command}"
{test_extra}
"""


def _spec(tmp_path: Path, runs: int = 10, command: str = "pyhton3 -c 1", extra: str = "", test_extra: str = "") -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(SPEC.format(runs=runs, command=command, extra=extra, test_extra=test_extra))
    return path


def _bench(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300, env={**os.environ, **(env or {})})


def _trials(directory: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(directory / "journal.sqlite") as db:
        return db.execute("SELECT tests.name, trials.status FROM trials JOIN tests ON trials.test_id = tests.id ORDER BY trials.id").fetchall()


def test_a_test_that_cannot_run_stops_the_experiment_and_is_said_first(tmp_path: Path) -> None:
    done = _bench("run", str(_spec(tmp_path)), "-o", "out", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    # Under the progress: the failure with the shell's own words, once.
    assert "trial typo: failed (exit status 127)" in done.stderr
    assert done.stderr.count("pyhton3: not found") == 2  # under its first failure, and in the stop message
    assert "stopped: typo failed in all 2 of its trials (exit status 127: /bin/sh: 1: pyhton3: not found)" in done.stderr
    assert "benchsage resume out --ignore-failures" in done.stderr
    # It stopped after two runs: every trial of them is journaled, nothing after.
    trials = _trials(tmp_path / "out")
    assert [status for name, status in trials if name == "typo"] == ["failed", "failed"]
    assert len(trials) == 4
    # The answer opens with the failure, and the test keeps its row.
    lines = done.stdout.splitlines()
    assert lines[1] == "Tests failed: typo (2 of 2 trials)."
    assert lines[2] == "  typo: 2 of 2 trials failed: exit status 127: /bin/sh: 1: pyhton3: not found"
    row = next(line.split() for line in lines if line.startswith("typo "))
    assert row[:4] == ["typo", "0/0", "failed", "failed"]
    # The JSON says the same, and analyze exits 4 too (0 with --ignore-failures).
    doc = json.loads(_bench("analyze", "out", "--json", cwd=tmp_path).stdout)
    assert doc["verdict"] == "tests-failed"
    assert doc["failed_tests"] == [{"test": "typo", "failed": 2, "trials": 2, "statuses": {"failed": 2}, "reason": "exit status 127",
                                    "output_tail": "/bin/sh: 1: pyhton3: not found"}]
    typo = [t for t in doc["tests"] if t["test"] == "typo"]
    assert [(t["metric"], t["status"], t["kw_p"], t["median_fixed"]) for t in typo] == [("wall_time", "failed", None, None)]
    assert all(t["status"] == "ok" for t in doc["tests"] if t["test"] == "fine")
    assert _bench("analyze", "out", cwd=tmp_path).returncode == 4
    assert _bench("analyze", "out", "--ignore-failures", cwd=tmp_path).returncode == 0


def test_ignore_failures_carries_on_and_keeps_the_exit_status(tmp_path: Path) -> None:
    done = _bench("run", str(_spec(tmp_path, runs=5)), "-o", "out", "--ignore-failures", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("pyhton3: not found") == 1  # the output under the first failure only
    assert done.stderr.count("trial typo: failed") == 10
    doc = json.loads(done.stdout)
    assert doc["failed_tests"][0]["trials"] == 10 and doc["verdict"] == "tests-failed"
    # A journal stopped by a failing test goes on with resume --ignore-failures.
    stopped = tmp_path / "again"
    _bench("run", str(_spec(tmp_path, runs=4)), "-o", str(stopped), cwd=tmp_path)
    assert len(_trials(stopped)) == 4
    resumed = _bench("resume", str(stopped), "--ignore-failures", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert len(_trials(stopped)) == 16


def test_a_test_that_always_times_out(tmp_path: Path) -> None:
    done = _bench("run", str(_spec(tmp_path, command="sleep 5", test_extra="timeout = 0.2")), "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    (failed,) = json.loads(done.stdout)["failed_tests"]
    assert failed["statuses"] == {"timeout": 2} and "exceeded its timeout of 0.2 s" in failed["reason"]


def test_a_test_that_fails_in_more_than_half_of_its_trials_exits_4(tmp_path: Path) -> None:
    # Fails unless a counter file says this is one of its first two trials: 2 ok, then failures.
    script = tmp_path / "flaky.sh"
    script.write_text('n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count; [ "$n" -lt 2 ] || { echo "broke at $n" >&2; exit 3; }\n')
    done = _bench("run", str(_spec(tmp_path, runs=3, command=f"sh {script}")), "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    doc = json.loads(done.stdout)
    (failed,) = doc["failed_tests"]
    assert (failed["failed"], failed["trials"]) == (4, 6) and failed["output_tail"] == "broke at 2"
    assert "stopped" not in done.stderr  # it succeeded at first: no reason to stop early
    assert doc["verdict"] == "tests-failed"


def test_run_writes_its_report_and_says_where_last(tmp_path: Path) -> None:
    spec = _spec(tmp_path, runs=5, command="true")
    done = _bench("run", str(spec), "-o", "out", cwd=tmp_path, env={"BENCHSAGE_REPORT": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "Report: out/report.html"
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "failing" in page
    skipped = _bench("run", str(spec), "-o", "out2", "--no-report", cwd=tmp_path, env={"BENCHSAGE_REPORT": "1"})
    assert skipped.returncode == 0 and not (tmp_path / "out2" / "report.html").exists() and "Report:" not in skipped.stdout
    as_json = _bench("run", str(spec), "-o", "out3", "--json", cwd=tmp_path, env={"BENCHSAGE_REPORT": "1"})
    assert json.loads(as_json.stdout)["report"] == "out3/report.html" and (tmp_path / "out3" / "report.html").exists()
