"""`benchsage time`: hyperfine's command line, order-safe, end to end with real commands."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest


def bench(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, env=os.environ)


def plan_of(directory: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(directory / "journal.sqlite") as db:
        return db.execute("SELECT arm, test_order FROM runs ORDER BY id").fetchall()


@pytest.mark.timing
def test_two_commands_answer_which_is_faster_and_whether_the_order_mattered(tmp_path: Path) -> None:
    done = bench("time", "-n", "fast", "-n", "slow", "sleep 0.01", "sleep 0.03", "-r", "6", "-o", "out", "--seed", "4",
                 "--no-report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Benchmark 1: fast (sleep 0.01)" in out and "Benchmark 2: slow (sleep 0.03)" in out
    assert "  Time (median [95% CI]):  1" in out and "  Range (min … max):" in out and "12 runs" in out
    summary = out.splitlines()[out.splitlines().index("Summary") + 1]
    assert summary.startswith("  fast ran ") and "× faster than slow [" in summary and summary.endswith("holds in both orders")
    ratio = float(summary.split(" ran ")[1].split("×")[0])
    assert 2.0 < ratio < 3.2  # 30 ms against 10 ms, with the harness's own time in both
    assert "No order effect larger than" in out or "Order matters" in out
    # An ordinary experiment underneath: analyze reads it, the plan alternates fixed and random orders.
    doc = json.loads(bench("analyze", "out", "--json", cwd=tmp_path).stdout)
    assert [t["test"] for t in doc["tests"] if t["primary"]] == ["fast", "slow"]
    (claim,) = doc["comparisons"]
    assert (claim["a"], claim["b"], claim["better"]) == ("fast", "slow", "a")
    arms = [arm for arm, _ in plan_of(tmp_path / "out")]
    assert arms.count("fixed") == arms.count("random") == 6


def test_a_parameter_scan_is_a_sweep_with_its_curve(tmp_path: Path) -> None:
    done = bench("time", "sleep 0.0{n}", "-P", "n", "1", "3", "-r", "5", "-o", "out", "--json", "--no-report", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [t["test"] for t in doc["tests"] if t["primary"]] == ["sleep[n=1]", "sleep[n=2]", "sleep[n=3]"]
    (curve,) = [c for c in doc["curves"] if c["metric"] == "wall_time"]
    assert curve["sweep"] == "n" and [p["level"] for p in curve["points"]] == [1, 2, 3]
    medians = [p["median"] for p in curve["points"]]
    assert medians == sorted(medians)
    listed = bench("time", "sleep 0.00{n}", "-L", "n", "1,4", "-r", "5", "-o", "out2", "--json", "--no-report", "--quiet", cwd=tmp_path)
    assert [t["test"] for t in json.loads(listed.stdout)["tests"] if t["primary"]] == ["sleep[n=1]", "sleep[n=4]"]


def test_a_failing_command_stops_the_experiment_unless_ignored(tmp_path: Path) -> None:
    done = bench("time", "true", "pyhton3 -c 1", "-r", "10", "-o", "out", "--no-report", cwd=tmp_path)
    assert done.returncode == 4
    assert "pyhton3: not found" in done.stderr and "stopped: pyhton3 failed in all 2 of its trials" in done.stderr
    assert "Tests failed: pyhton3 (2 of 2 trials)." in done.stdout
    ignored = bench("time", "true", "pyhton3 -c 1", "-r", "5", "-o", "out2", "-i", "--no-report", "--quiet", cwd=tmp_path)
    assert ignored.returncode == 0 and "Tests failed: pyhton3 (10 of 10 trials)." in ignored.stdout


def test_the_saved_spec_draws_the_same_plan(tmp_path: Path) -> None:
    here = tmp_path / "here"
    here.mkdir()
    done = bench("time", "true", "sleep 0.001", "-r", "4", "-o", "out", "--save-spec", str(tmp_path / "saved.toml"), "--quiet",
                 "--no-report", cwd=here)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "saved.toml").read_text()
    assert f'cwd = "{here}"' in text and "seed = " in text  # the drawn seed, and the folder the commands ran in
    again = bench("run", str(tmp_path / "saved.toml"), "-o", str(tmp_path / "again"), "--quiet", "--no-report", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert plan_of(here / "out") == plan_of(tmp_path / "again")


def test_bad_options_are_one_line_and_exit_2(tmp_path: Path) -> None:
    for args, message in ((["--bogus", "true"], "No such option"), (["-r", "0", "true"], "-r"), (["-D", "2", "true"], "-D/--parameter-step-size needs -P"),
                          (["-P", "n", "3", "1", "true {n}"], "MAX is below MIN"), (["-L", "n", "a,b", "true"], "no command names {n}"),
                          (["-n", "a", "true", "false"], "given 1 times for 2 commands"), ([], "Missing argument")):
        done = bench("time", *args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("benchsage: error: ") and message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert not (tmp_path / "results").exists()


def test_ctrl_c_keeps_what_was_measured_and_resume_finishes(tmp_path: Path) -> None:
    # The third trial of `mark` touches `started` and waits: the test interrupts it then.
    script = tmp_path / "mark.sh"
    script.write_text('n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count\n'
                      'if [ "$n" -eq 2 ] && [ ! -e resumed ]; then : > started; sleep 30; fi\n')
    proc = subprocess.Popen([sys.executable, "-m", "benchsage", "time", f"sh {script}", "true", "-r", "3", "-o", "out", "--no-report"],
                            cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3 and "interrupted" in err and "benchsage resume out" in err
    (tmp_path / "resumed").touch()
    resumed = bench("resume", "out", "--json", "--no-report", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    doc = json.loads(resumed.stdout)
    assert all(t["n_fixed"] == t["n_random"] == 3 for t in doc["tests"] if t["primary"])


def test_hyperfines_exports_are_written(tmp_path: Path) -> None:
    done = bench("time", "sleep 0.01", "true", "-r", "5", "-o", "out", "--no-report", "--quiet", "--export-json", "h.json",
                 "--export-markdown", "h.md", "--export-csv", "h.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "h.json").read_text())["results"]
    assert [r["command"] for r in results] == ["sleep 0.01", "true"] and all(len(r["times"]) == 10 for r in results)
    assert (tmp_path / "h.md").read_text().startswith("| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |")
    assert (tmp_path / "h.csv").read_text().splitlines()[0] == "command,mean,stddev,median,user,system,min,max"
    bad = bench("time", "true", "-r", "5", "-o", "out2", "--no-report", "--quiet", "--export-csv", str(tmp_path / "no" / "h.csv"), cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("benchsage: error: --export-csv ") and "No such file or directory" in bad.stderr


def test_every_step_option_runs_where_hyperfine_runs_it(tmp_path: Path) -> None:
    """-w, -p, --reset, -s, -c, -N, --timeout and --cpus from the command line, counted by the
    files the steps append to: the warm-up trial of each command is prepared but not reset nor
    recorded; each of the 4 runs is reset; setup and cleanup run once."""
    done = bench("time", "-r", "2", "-w", "1", "-p", "echo p >> prep.log", "--reset", "echo r >> reset.log", "-s", "echo s >> setup.log",
                 "-c", "echo c >> clean.log", "--timeout", "5", "--cpus", "0", "-N", "-n", "a", "-n", "b", "--save-spec", "saved.toml",
                 "sh -c 'echo a >> a.log'", "sh -c 'echo b >> b.log'", "-o", "out", "--no-report", "--quiet", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = {name: len((tmp_path / f"{name}.log").read_text().splitlines()) for name in ("a", "b", "prep", "reset", "setup", "clean")}
    assert lines == {"a": 5, "b": 5, "prep": 10, "reset": 4, "setup": 1, "clean": 1}
    assert "warm-up: 1 trial of each of the 2 tests, not recorded" in done.stderr
    assert {(t["test"], t["n_fixed"], t["n_random"]) for t in json.loads(done.stdout)["tests"] if t["metric"] == "wall_time"} == \
        {("a", 2, 2), ("b", 2, 2)}
    from benchsage.spec import load_spec

    spec = load_spec(str(tmp_path / "saved.toml"))
    assert [(t.shell, t.timeout, t.cpus) for t in spec.tests] == [(False, 5.0, (0,)), (False, 5.0, (0,))]
    with sqlite3.connect(tmp_path / "out" / "journal.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM trials").fetchone() == (8,)
