"""`benchsage bisect` on ssh workers of real OpenSSH servers on 127.0.0.1: builds stay here,
each batch ships the worktrees it measures (build products included) to every worker, the
right commit is found, a search killed in a probe resumes without building again, and a
worker whose dir cannot take the deploy stops the search with one line."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bisect" / "make_repo.py"


def make_repo(repo: Path) -> dict[str, str]:
    """5 commits; commit 3 makes the program 40 % slower; no noise added; 12 runs per probe (at 8,
    one run reversed by a load spike keeps the good-bad check's two-sided p, 2 x 2/256, above its
    level: the search ends "no-change")."""
    spec = importlib.util.spec_from_file_location("benchsage_example_bisect", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_repo(str(repo), commits=5, change=3, slowdown=40.0, noise=0.0, work=8.0, runs=12)


def on_fleet(repo: Path, fleet, hosts: Path) -> None:
    """The spec in the user's checkout (not committed: bisect reads it from there) measures on
    the fleet's hosts, each with its `dir` under `hosts`."""
    spec = repo / "experiment.toml"
    spec.write_text(spec.read_text() + "".join(
        f'\n[[worker]]\nkind = "ssh"\nhost = "{h}"\nssh_config = "{fleet.ssh_config}"\ndir = "{hosts}/{{worker}}"\n'
        for h in fleet.hosts))


def bisect(repo: Path, hashes: dict[str, str], out: Path, *extra: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "benchsage", "bisect", "experiment.toml", "--good", hashes["good"], "--bad", "main",
            "--build", "make", "--seed", "3", "-o", str(out), "--json", "--quiet", *extra]
    return subprocess.Popen(argv, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                            start_new_session=True)


def finished(proc: subprocess.Popen) -> tuple[int, str, str]:
    stdout, stderr = proc.communicate(timeout=300)
    return proc.returncode, stdout, stderr


def deploys(batch: Path) -> list[tuple[str, int, int]]:
    db = sqlite3.connect(f"file:{batch / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        return sorted(db.execute("SELECT worker, files_sent, bytes_sent FROM deploys"))
    finally:
        db.close()


def test_finds_the_commit_on_two_ssh_workers_shipping_each_worktree_once(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    repo, hosts, out = tmp_path / "repo", tmp_path / "hosts", tmp_path / "search"
    hashes = make_repo(repo)
    on_fleet(repo, fleet, hosts)
    status, stdout, stderr = finished(bisect(repo, hashes, out, "--keep-dirs"))
    assert status == 0, stderr
    b = json.loads(stdout)["bisect"]
    assert b["first_bad"] == hashes["change"]
    # Every run of every batch ran on both hosts, from the copies shipped there
    batches = sorted((out / "probes").glob("*/look-*"))
    for batch in batches:
        db = sqlite3.connect(f"file:{batch / 'journal.sqlite'}?mode=ro", uri=True)
        assert sorted(w for w, in db.execute("SELECT DISTINCT worker FROM trials WHERE status = 'ok'")) == ["node1", "node2"]
        db.close()
    # good and bad travel with the first batch, each probe's worktree with its first look, nothing with a later look
    def files(commit: str) -> int:  # the worktree's files but its .git link: tracked, and the binary built
        return sum(1 for p in (out / "worktrees" / commit[:12]).iterdir() if p.name != ".git")

    check = deploys(out / "probes" / "check" / "look-0")
    assert check == [(h, files(hashes["good"]) + files(hashes["bad"]), check[0][2]) for h in ("node1", "node2")]
    for batch in batches:
        if batch.parent.name != "check":
            first = batch.name == "look-0"
            probe = batch.parent.name.split("-")[1]
            assert [n for _, n, _ in deploys(batch)] == [files(probe) if first else 0] * 2, batch
    # The build product (ignored by git) was shipped: each host holds good's, bad's and the last probe's worktree, built
    # (kept after the search: --keep-dirs)
    last = b["probes"][-1]["commit"][:12]
    for host in fleet.hosts:
        held = sorted(p.name for p in (hosts / f"{host}-bisect").iterdir() if not p.name.startswith("."))
        assert held == sorted({hashes["good"][:12], hashes["bad"][:12], last})
        assert os.access(hosts / f"{host}-bisect" / last / "checksum", os.X_OK)
        assert not (hosts / f"{host}-bisect" / last / ".git").exists()
    assert b["builds"] == 2 + len(b["probes"]) and not (repo / "checksum").exists()


def test_a_search_killed_in_a_probe_resumes_without_building_again(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    repo, hosts, out = tmp_path / "repo", tmp_path / "hosts", tmp_path / "search"
    hashes = make_repo(repo)
    on_fleet(repo, fleet, hosts)
    proc = bisect(repo, hashes, out)
    while not list((out / "probes").glob("0*/look-0/journal.sqlite")) and proc.poll() is None:  # the first probe's batch began
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    built = {p: p.stat().st_mtime_ns for p in (out / "builds").glob("*.log")}
    assert len(built) >= 3  # good, bad, the first probe
    assert all((hosts / f"{h}-bisect" / hashes["good"][:12] / "checksum.c").exists() for h in fleet.hosts)  # kept for the resume
    done = subprocess.run([sys.executable, "-m", "benchsage", "resume", str(out), "--json", "--quiet"], cwd=repo, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["bisect"]["first_bad"] == hashes["change"]
    assert {p: p.stat().st_mtime_ns for p in built} == built  # nothing built again
    assert hosts.exists() and not any((hosts / f"{h}-bisect").exists() for h in fleet.hosts)  # removed at the answer


def test_a_worker_dir_that_refuses_the_deploy_stops_the_search_with_one_line(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    repo, hosts, out = tmp_path / "repo", tmp_path / "hosts", tmp_path / "search"
    hashes = make_repo(repo)
    on_fleet(repo, fleet, hosts)
    (hosts / "node2-bisect").mkdir(parents=True)
    (hosts / "node2-bisect" / "precious").write_text("the user's")
    status, stdout, stderr = finished(bisect(repo, hashes, out))
    assert status == 2, stderr
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr and lines[-1].startswith("benchsage: error: "), stderr
    assert "worker node2" in lines[-1] and "node2-bisect" in lines[-1] and "refusing to deploy" in lines[-1], lines[-1]
    assert (hosts / "node2-bisect" / "precious").read_text() == "the user's"
    assert not list((out / "probes").glob("*/look-*/journal.sqlite"))  # nothing was measured


def test_hosts_from_an_allocate_command_are_allocated_once_for_the_search_and_released(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    repo, out, log = tmp_path / "repo", tmp_path / "search", tmp_path / "log"
    hashes = make_repo(repo)
    spec = repo / "experiment.toml"
    spec.write_text(spec.read_text() + f"""
[[worker]]
kind = "ssh"
allocate = "echo allocate >> {log}; echo node1; echo node2"
release = "echo release >> {log}"  # the hosts come as arguments
ssh_config = "{fleet.ssh_config}"
dir = "{tmp_path}/hosts/{{worker}}"
""")
    status, stdout, stderr = finished(bisect(repo, hashes, out))
    assert status == 0, stderr
    b = json.loads(stdout)["bisect"]
    assert b["first_bad"] == hashes["change"] and len(b["probes"]) >= 2
    assert log.read_text() == "allocate\nrelease node1 node2\n"  # once for the whole search, whatever its batches
    for batch in (out / "probes").glob("*/look-*"):
        db = sqlite3.connect(f"file:{batch / 'journal.sqlite'}?mode=ro", uri=True)
        assert sorted(w for w, in db.execute("SELECT DISTINCT worker FROM trials WHERE status = 'ok'")) == ["node1", "node2"]
        db.close()
    assert [a["released"] for a in json.loads((out / "workers" / "allocations.json").read_text())] == [True]
    deployed = {d for batch in (out / "probes").glob("*/look-*") for _, d in sqlite3.connect(
        f"file:{batch / 'journal.sqlite'}?mode=ro", uri=True).execute("SELECT worker, dir FROM deploys")}
    assert deployed == {str(tmp_path / "hosts" / f"node{k}-bisect") for k in (1, 2)}
    assert not any(os.path.exists(d) for d in deployed)  # removed at the answer, before the hosts were released
