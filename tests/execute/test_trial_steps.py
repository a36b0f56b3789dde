"""What runs around trials, as hyperfine's options ask: a test's `prepare` before each of its
trials (untimed; a failing one fails the trial), `warmup` trials before the first run (not
recorded), `[teardown]` once after everything whatever ended it, and `shell = "none"` (the
command's words executed with no shell). Real processes, real journals."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

SPEC = """
[experiment]
name = "steps"
runs = {runs}
seed = 2
warmup = {warmup}

[teardown]
command = "echo down >> teardown.log"

[[test]]
name = "prepared"
command = "sh count.sh trials.log"
prepare = "{prepare}"

[[test]]
name = "words"
command = 'printf "%s|" "a b" c'
shell = "none"
"""
COUNT = 'n=$(cat "$1" 2>/dev/null || echo 0); echo $((n + 1)) > "$1"\n'


def _setup(tmp_path: Path, runs: int = 3, warmup: int = 0, prepare: str = "sh count.sh prepare.log") -> None:
    (tmp_path / "count.sh").write_text(COUNT)
    (tmp_path / "spec.toml").write_text(SPEC.format(runs=runs, warmup=warmup, prepare=prepare))


def _bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=tmp_path, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300, env=os.environ)


def _count(path: Path) -> int:
    return int(path.read_text()) if path.exists() else 0


def test_prepare_warmup_teardown_and_no_shell(tmp_path: Path) -> None:
    _setup(tmp_path, runs=3, warmup=2)
    done = _bench(tmp_path, "run", "spec.toml", "-o", "out", "--json")
    assert done.returncode == 0, done.stderr
    assert "warm-up: 2 trials of each of the 2 tests, not recorded" in done.stderr
    # 2 warm-up trials and 6 recorded trials ran, each after its prepare; only the 6 are in the journal.
    assert _count(tmp_path / "trials.log") == 8 and _count(tmp_path / "prepare.log") == 8
    doc = json.loads(done.stdout)
    assert {t["test"]: t["n_fixed"] + t["n_random"] for t in doc["tests"] if t["primary"]} == {"prepared": 6, "words": 6}
    assert (tmp_path / "teardown.log").read_text() == "down\n"
    with sqlite3.connect(tmp_path / "out" / "journal.sqlite") as db:
        words = db.execute("SELECT spawn, stdout_tail FROM trials JOIN tests ON tests.id = trials.test_id WHERE tests.name = 'words'").fetchall()
    assert words and all(spawn == "exec" and bytes(out) == b"a b|c|" for spawn, out in words)  # no shell, "a b" one word


def test_a_failing_prepare_fails_its_trial_and_the_teardown_still_runs(tmp_path: Path) -> None:
    _setup(tmp_path, runs=5, prepare="echo not ready >&2; exit 3")
    done = _bench(tmp_path, "run", "spec.toml", "-o", "out", "--json")
    assert done.returncode == 4
    (failed,) = json.loads(done.stdout)["failed_tests"]
    assert failed["test"] == "prepared" and failed["reason"].startswith("prepare `echo not ready >&2; exit 3` exit status 3")
    assert failed["output_tail"] == "not ready"
    assert _count(tmp_path / "trials.log") == 0  # the trial never ran
    assert (tmp_path / "teardown.log").read_text() == "down\n"  # stopped by the failing test: torn down all the same


def test_ctrl_c_then_teardown(tmp_path: Path) -> None:
    _setup(tmp_path, runs=3, prepare="sh count.sh prepare.log; [ $(cat prepare.log) -lt 3 ] || { : > started; sleep 30; }")
    proc = subprocess.Popen([sys.executable, "-m", "benchsage", "run", "spec.toml", "-o", "out"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3 and "interrupted" in err
    assert (tmp_path / "teardown.log").read_text() == "down\n"  # connected again after Ctrl-C for it


def test_bad_keys_name_themselves(tmp_path: Path) -> None:
    for spec, message in (('[experiment]\nname = "x"\nwarmup = -1\n[[test]]\ncommand = "true"\n', "warmup"),
                          ('[experiment]\nname = "x"\n[[test]]\ncommand = "true"\nshell = "bash"\n', "key 'shell' must be \"sh\" or \"none\""),
                          ('[experiment]\nname = "x"\n[[test]]\ncommand = "echo \'open"\nshell = "none"\n', "cannot be split into words"),
                          ('[experiment]\nname = "x"\n[teardown]\ntimeout = 3\n[[test]]\ncommand = "true"\n', "[teardown]")):
        (tmp_path / "bad.toml").write_text(spec)
        done = _bench(tmp_path, "plan", "bad.toml")
        assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
