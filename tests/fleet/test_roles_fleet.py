"""Workers with roles over real ssh: two client/server pairs of fake hosts (real OpenSSH servers
on 127.0.0.1) in parallel, each role host rebooted and verified before every run, a server's
collector, the identity diagnostic per role, a server host lost mid-run and resume."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from journalcheck import rows

PAIRS = {"pair1": ("node1", "node2"), "pair2": ("node3", "node4")}


def write_spec(tmp_path: Path, fleet, reset: str, hold: str = "") -> Path:
    """hold: a host whose trials, once they touched their mark, wait for the file marks/go."""
    workers = ""
    for pair, (server, client) in PAIRS.items():
        workers += f'[[worker]]\nname = "{pair}"\n'
        for role, host in (("server", server), ("client", client)):
            workers += (f'[worker.roles.{role}]\nkind = "ssh"\nhost = "{host}"\nssh_config = "{fleet.ssh_config}"\n'
                        f"boot_id = '{fleet.boot_id_command}'\nreconnect_timeout = 2\n")
            if role == "server":  # each server keeps the experiment's files in a folder of its own
                workers += f'dir = "{tmp_path / ("srv-" + pair)}"\n'
    marks = tmp_path / "marks"
    wait = f"[ $BENCHSAGE_FAKE_HOST != {hold} ] || while [ ! -e {marks}/go ]; do sleep 0.01; done; " if hold else ""
    text = f"""
[experiment]
name = "pairs"
runs = 2
seed = 5

{reset}

{workers}

[[test]]
name = "load"
role = "client"
command = "sh -c 'touch {marks}/$BENCHSAGE_FAKE_HOST; {wait}sleep 0.05; echo served 7'"

[[collector]]
name = "server_host"
role = "server"
kind = "command"
command = "sh -c 'echo ${{BENCHSAGE_FAKE_HOST#node}}'"
"""
    marks.mkdir(exist_ok=True)
    for pair in PAIRS:
        folder = tmp_path / f"srv-{pair}"
        folder.mkdir(exist_ok=True)
        (folder / "server.sh").write_text("#!/bin/sh\necho started " + ("v2" if pair == "pair2" else "v1") + "\n")
        (folder / "server.sh").chmod(0o755)
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return path


def cli(*args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_pairs_reboot_every_role_host_and_compare_servers_with_servers(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(4)
    reset = f'[reset]\nkind = "reboot"\ncommand = "BENCHSAGE_FAKE_DOWN=0.2 {fleet.reboot}"\ntimeout = 30\n' \
            '[[collector]]\nname = "started"\nrole = "server"\nkind = "command"\ncommand = "./server.sh | tr -d v"\n'
    spec = write_spec(tmp_path, fleet, reset)
    done = cli("run", str(spec), "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert Counter(w for (w,) in rows(out, "SELECT worker FROM runs WHERE status = 'done'")) == {"pair1": 4, "pair2": 4}
    # every role host rebooted before every run, each verified by its new boot id
    resets = rows(out, "SELECT reset_status, reset_stdout FROM attempts")
    assert all(status == "ok" for status, _ in resets)
    assert all(out.count(b"rebooted and verified") == 2 for _, out in resets)
    boots: dict[str, set] = {}
    for worker, hosts in rows(out, "SELECT worker, hosts FROM trials"):
        for role, host in json.loads(hosts).items():
            boots.setdefault(f"{worker}/{role}", set()).add(host["boot_id"])
    assert {name: len(ids) for name, ids in boots.items()} == {f"{p}/{r}": 4 for p in PAIRS for r in ("server", "client")}
    # the collector ran on each pair's server host; the test on its client
    served = rows(out, "SELECT t.worker, v.value FROM trials t JOIN trial_values v ON v.trial_id = t.id WHERE v.metric = 'server_host'")
    assert {(w, v) for w, v in served} == {("pair1", 1.0), ("pair2", 3.0)}
    assert set(p.name for p in (tmp_path / "marks").iterdir()) == {"node2", "node4"}
    started = rows(out, "SELECT t.worker, v.value FROM trials t JOIN trial_values v ON v.trial_id = t.id WHERE v.metric = 'started'")
    assert {(w, v) for w, v in started} == {("pair1", 1.0), ("pair2", 2.0)}
    # identity: pair2's server runs another server.sh; the servers are compared with each other, never with a client
    identity = json.loads(done.stdout)["diagnostics"]["identity"]
    assert identity["workers"] == ["pair1/client", "pair1/server", "pair2/client", "pair2/server"]
    files = [d for d in identity["differences"] if d["what"].startswith("file ")]
    assert [d["what"] for d in files] == ["file server.sh"]
    assert set(files[0]["values"]) == {"pair1/server", "pair2/server"}
    assert not identity["identical"]


@pytest.mark.slow
def test_a_lost_server_host_loses_its_pair_and_resume_continues(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(4)
    spec = write_spec(tmp_path, fleet, '[reset]\ncommand = "true"\n', hold="node4")
    run = subprocess.Popen([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out", "--quiet"], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    mark = tmp_path / "marks" / "node4"
    deadline = time.monotonic() + 120
    while not mark.exists():  # pair2's client has started a trial (held until the server is down)
        assert time.monotonic() < deadline and run.poll() is None, run.communicate()
        time.sleep(0.01)
    fleet.crash("node3")  # pair2's server: the window it opened cannot be closed
    (tmp_path / "marks" / "go").touch()  # pair2's trial, held until now, ends
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 3, stderr
    error = stderr.strip().splitlines()[-1]
    assert "1 of 2 workers lost (pair2: " in error and "pair2/server" in error and "benchsage resume" in error
    out = tmp_path / "out"
    assert rows(out, "SELECT worker, COUNT(*) FROM runs WHERE status = 'done' GROUP BY worker") == [("pair1", 4)]
    fleet.boot("node3")
    again = cli("resume", "out", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert rows(out, "SELECT worker, COUNT(*) FROM runs WHERE status = 'done' GROUP BY worker") == [("pair1", 4), ("pair2", 4)]
    assert rows(out, "SELECT COUNT(*) FROM attempts WHERE worker = 'pair1'") == [(4,)]  # nothing of pair1 redone
