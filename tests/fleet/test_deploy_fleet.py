"""[deploy] to ssh workers of real OpenSSH servers on 127.0.0.1: the content travels over each
worker's own connection, trials see it, role hosts get it too, and a connection that drops in
the middle of a deploy is re-established and the deploy finished and verified."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from benchsage.cli import main
from benchsage.errors import WorkerLost
from benchsage.execute import deploy as deploying
from benchsage.execute.agentworker import AgentWorker
from benchsage.execute.deploy import deploy_host, read_source
from benchsage.execute.transports import SshTransport
from benchsage.spec import load_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))
from test_deploy import git, make_repo  # noqa: E402


def ssh_workers(fleet, tmp_path: Path, roles: bool = False) -> str:
    if roles:
        return "[[worker]]\nname = \"pair\"\n" + "".join(
            f'[worker.roles.{role}]\nkind = "ssh"\nhost = "{host}"\nssh_config = "{fleet.ssh_config}"\ndir = "{tmp_path / host}"\n'
            for role, host in (("server", "node1"), ("client", "node2")))
    return "".join(f'[[worker]]\nkind = "ssh"\nhost = "{h}"\nssh_config = "{fleet.ssh_config}"\ndir = "{tmp_path / h}"\n'
                   for h in fleet.hosts)


def repo_with(tmp_path: Path, workers: str, tests: str = "") -> Path:
    repo = make_repo(tmp_path)
    spec = repo / "exp" / "spec.toml"
    text = spec.read_text().split("[[worker]]")[0].replace('command = "./run.sh"', 'command = "./run.sh; echo $BENCHSAGE_FAKE_HOST"')
    spec.write_text(text + tests + workers)
    git(repo, "commit", "-qam", "on the fleet")
    return spec


def test_two_ssh_workers_get_the_commit_and_their_trials_see_it(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    spec = repo_with(tmp_path, ssh_workers(fleet, tmp_path))
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(spec), "-o", str(out), "--quiet"])
    assert exit_.value.code == 0
    db = sqlite3.connect(out / "journal.sqlite")
    tree = git(spec.parent.parent, "rev-parse", "HEAD^{tree}")
    assert sorted(db.execute("SELECT worker, tree, files_sent FROM deploys")) == [("node1", tree, 8), ("node2", tree, 8)]
    assert sorted(db.execute("SELECT worker, stdout_tail FROM trials GROUP BY worker")) == [("node1", b"hello\nnode1\n"),
                                                                                          ("node2", b"hello\nnode2\n")]
    assert (tmp_path / "node2" / "exp" / "a" / "deep" / "x").read_bytes() == (spec.parent / "a" / "deep" / "x").read_bytes()


def test_every_role_host_is_deployed_to(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    tests = '\n[[test]]\nname = "b"\ncommand = "cat data.txt"\nrole = "server"\n'
    spec = repo_with(tmp_path, ssh_workers(fleet, tmp_path, roles=True), tests)
    spec.write_text(spec.read_text().replace('name = "a"\n', 'name = "a"\nrole = "client"\n'))
    git(spec.parent.parent, "commit", "-qam", "roles")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(spec), "-o", str(out), "--quiet"])
    assert exit_.value.code == 0
    db = sqlite3.connect(out / "journal.sqlite")
    assert sorted(w for w, in db.execute("SELECT worker FROM deploys")) == ["pair/client", "pair/server"]
    assert (tmp_path / "node1" / "exp" / "run.sh").exists() and (tmp_path / "node2" / "exp" / "run.sh").exists()


def test_a_connection_dropped_mid_deploy_is_reconnected_and_the_rest_sent_and_verified(fake_fleet, tmp_path: Path,
                                                                                        monkeypatch) -> None:
    monkeypatch.setattr(deploying, "CHUNK", 1000)  # a request per file, and a file of 3000 bytes in three
    fleet = fake_fleet(1)
    source = read_source(load_spec(make_repo(tmp_path) / "exp" / "spec.toml"))
    worker = AgentWorker("node1", SshTransport("node1", fleet.ssh_config, "python3"), python=["python3"], reconnect_timeout=10)
    puts, ask = [], worker.ask

    def dropping(message, timeout=None, expect=None):  # the ssh client killed at the 4th request: the connection is gone
        if isinstance(message, bytes):  # a put, encoded
            puts.append(message)
            if len(puts) == 4 and drops:
                drops.pop()
                worker._conn.proc.kill()
        return ask(message, timeout, expect)

    worker.ask = dropping
    drops = [1]
    with worker:
        worker.connect()
        done = deploy_host(worker, source, "dep", str(tmp_path / "node1"))
    assert done.attempts == 2 and done.tree == source.tree and 0 < len(done.needed) < len(source.entries)
    assert not list((tmp_path / "node1").rglob(".benchsage-tmp-*"))
    drops = [1, 1]  # a connection that drops on every attempt: the worker is named
    puts.clear()
    (tmp_path / "node1" / "exp" / "data.txt").write_text("x")
    (tmp_path / "node1" / "exp" / "a.b").write_text("x")
    (tmp_path / "node1" / "exp" / "a-b").write_text("x")
    (tmp_path / "node1" / "README").write_text("x")

    def always(message, timeout=None, expect=None):
        if isinstance(message, bytes):
            worker._conn.proc.kill()
        return ask(message, timeout, expect)

    worker.ask = always
    with worker, pytest.raises(WorkerLost, match=r"worker node1: the connection dropped twice while deploying to .*node1"):
        worker.connect()
        deploy_host(worker, source, "dep", str(tmp_path / "node1"))
