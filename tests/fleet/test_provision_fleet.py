"""[init] and `allocate`/`release` commands on a fake fleet of real sshd hosts: init once per
worker (not per run), a failing init loses its worker alone, resume skips a done init; the
hosts an `allocate` command prints become one worker each and are given to `release` at the end."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from journalcheck import rows


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def fleet_spec(tmp_path: Path, fleet, init: str, workers: str | None = None, runs: int = 2) -> Path:
    text = (f'[experiment]\nname = "prov"\nruns = {runs}\nseed = 1\n[init]\ncommand = \'{init}\'\n'
            '[[test]]\nname = "a"\ncommand = "echo $BENCHSAGE_FAKE_HOST"\n')
    text += workers if workers is not None else "".join(
        f'[[worker]]\nkind = "ssh"\nhost = "{h}"\nssh_config = "{fleet.ssh_config}"\n' for h in fleet.hosts)
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return path


def test_init_once_per_worker_a_failure_loses_that_worker_and_resume_skips_done_inits(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    log = tmp_path / "inits"
    # node2's init fails the first time only (a file it leaves tells the second time).
    init = (f'echo $BENCHSAGE_FAKE_HOST >> {log}; if [ $BENCHSAGE_FAKE_HOST = node2 ] && [ ! -e {tmp_path}/again ]; '
            f'then touch {tmp_path}/again; echo no disk >&2; exit 4; fi')
    spec = fleet_spec(tmp_path, fleet, init)
    first = run(tmp_path, "run", str(spec), "-o", "out", "--quiet")
    assert first.returncode == 3, first.stderr
    error = first.stderr.strip().splitlines()[-1]
    assert error.startswith("benchsage: error: 1 of 2 workers lost (node2: worker node2: [init] `")
    assert "failed before its first run (exit status 4: no disk)" in error and "the other 1 finished" in error
    out = tmp_path / "out"
    assert dict(rows(out, "SELECT worker, COUNT(*) FROM runs WHERE status = 'done' GROUP BY worker")) == {"node1": 4}
    assert sorted(rows(out, "SELECT worker, status, exit_status, stderr FROM inits")) == [
        ("node1", "ok", 0, b""), ("node2", "failed", 4, b"no disk\n")]
    again = run(tmp_path, "resume", "out", "--quiet")
    assert again.returncode == 0, again.stderr
    # node1's init is done: not run again; node2's runs again and passes; once per worker, not per run.
    assert sorted(log.read_text().split()) == ["node1", "node2", "node2"]
    assert dict(rows(out, "SELECT worker, COUNT(*) FROM runs WHERE status = 'done' GROUP BY worker")) == {"node1": 4, "node2": 4}


def test_allocate_command_hosts_become_workers_and_release_gets_them(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    released = tmp_path / "released"
    (tmp_path / "allocate.sh").write_text("#!/bin/sh\necho node1\necho node2\n")
    (tmp_path / "release.sh").write_text(f'#!/bin/sh\necho "$@" >> {released}\n')
    for script in ("allocate.sh", "release.sh"):
        (tmp_path / script).chmod(0o755)
    workers = f'[[worker]]\nkind = "ssh"\nallocate = "./allocate.sh"\nrelease = "./release.sh"\nssh_config = "{fleet.ssh_config}"\n'
    spec = fleet_spec(tmp_path, fleet, "true", workers)
    done = run(tmp_path, "run", str(spec), "-o", "out", "--quiet")
    assert done.returncode == 0, done.stderr
    assert released.read_text() == "node1 node2\n"
    out = tmp_path / "out"
    assert sorted(rows(out, "SELECT DISTINCT worker, stdout_tail FROM trials")) == [("node1", b"node1\n"), ("node2", b"node2\n")]
    with sqlite3.connect(out / "journal.sqlite") as conn:
        (record,) = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'allocations'").fetchone()[0])
    assert record["hosts"] == ["node1", "node2"] and record["released"] is True
    # A failing release is said, exit 3, naming the hosts to free.
    (tmp_path / "release.sh").write_text("#!/bin/sh\necho quota service down >&2\nexit 1\n")
    failed = run(tmp_path, "run", str(spec), "-o", "out2", "--quiet")
    assert failed.returncode == 3, failed.stderr
    (line,) = [x for x in failed.stderr.splitlines() if x.startswith("benchsage: error:")]
    assert "release failed: `./release.sh` failed (exit status 1: quota service down); hosts node1 node2 may stay allocated" in line
