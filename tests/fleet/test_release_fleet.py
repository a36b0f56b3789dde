"""`benchsage release DIR` on real journals of a fake fleet of sshd hosts: an experiment whose
release failed at its end leaves its hosts recorded as allocated; `release DIR` runs the
spec's release command, and a command tampered with in the journal is printed and not run
(exit 2, one line) until `--yes`."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def allocations(out: Path) -> list[dict]:
    with sqlite3.connect(out / "journal.sqlite") as conn:
        return json.loads(conn.execute("SELECT value FROM meta WHERE key = 'allocations'").fetchone()[0])


def test_release_runs_the_specs_command_and_a_tampered_one_only_with_yes(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    released, pwned = tmp_path / "released", tmp_path / "pwned"
    (tmp_path / "allocate.sh").write_text("#!/bin/sh\necho node1\necho node2\n")
    # The release fails until the file `ok` exists: the experiments end with their hosts allocated.
    (tmp_path / "release.sh").write_text(f'#!/bin/sh\ntest -e {tmp_path}/ok || exit 1\necho "$@" >> {released}\n')
    for script in ("allocate.sh", "release.sh"):
        (tmp_path / script).chmod(0o755)
    spec = tmp_path / "experiment.toml"
    spec.write_text('[experiment]\nname = "rel"\nruns = 1\nseed = 1\n[[test]]\nname = "a"\ncommand = "true"\n'
                    f'[[worker]]\nkind = "ssh"\nallocate = "./allocate.sh"\nrelease = "./release.sh"\nssh_config = "{fleet.ssh_config}"\n')
    for out in ("out", "out2"):
        failed = run(tmp_path, "run", str(spec), "-o", out, "--quiet")
        assert failed.returncode == 3 and "release failed: `./release.sh` failed" in failed.stderr, failed.stderr
        assert allocations(tmp_path / out)[0]["released"] is False
    (tmp_path / "ok").touch()
    done = run(tmp_path, "release", "out")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "released hosts (node1, node2)\n" and released.read_text() == "node1 node2\n"
    assert allocations(tmp_path / "out")[0]["released"] is True
    # Someone changes out2's journal: its release command is now theirs.
    with sqlite3.connect(tmp_path / "out2" / "journal.sqlite") as conn:
        record = allocations(tmp_path / "out2")
        record[0]["release"] = f"touch {pwned}"
        conn.execute("UPDATE meta SET value = ? WHERE key = 'allocations'", (json.dumps(record),))
    refused = run(tmp_path, "release", "out2")
    assert refused.returncode == 2, refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert line == (f"benchsage: error: out2/journal.sqlite records the release command `touch {pwned}` for hosts node1 node2 in {tmp_path} "
                    f"({spec} releases those hosts with `./release.sh`); nothing was run: read it, then "
                    "`benchsage release out2 --yes` runs it (or release the hosts yourself)")
    assert refused.stdout == "" and not pwned.exists() and released.read_text() == "node1 node2\n"
    assert allocations(tmp_path / "out2")[0]["released"] is False
    confirmed = run(tmp_path, "release", "out2", "--yes")
    assert confirmed.returncode == 0, confirmed.stderr
    assert pwned.exists() and released.read_text() == "node1 node2\n"
    assert allocations(tmp_path / "out2")[0]["released"] is True
