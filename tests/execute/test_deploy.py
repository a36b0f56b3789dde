"""[deploy] on this machine: real git repositories in tmp dirs, the local worker's agent writing
its `dir`, real SQLite; the ssh fleet's side is tests/fleet/test_deploy_fleet.py."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from benchsage.agent.deploy import MARKER, scan, tree_id
from benchsage.analyze.identity import compare_workers
from benchsage.api import plan
from benchsage.cli import main
from benchsage.errors import SpecError, WorkerSetupError
from benchsage.execute import deploy as deploying
from benchsage.execute.deploy import deploy_host, read_source
from benchsage.execute.local import LocalWorker
from benchsage.spec import load_spec
from benchsage.store.importers.benchsage import read_experiment


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def make_repo(tmp_path: Path, deploy: str = 'source = "git"', worker_dir: str | None = None) -> Path:
    """A repository with the experiment in exp/: nested folders, an executable, a symlink, names
    that git sorts unlike a plain sort (a-b, a.b, a/)."""
    repo = tmp_path / "repo"
    (repo / "exp" / "a" / "deep").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.org")
    git(repo, "config", "user.name", "t")
    (repo / "README").write_text("top\n")
    (repo / "exp" / "data.txt").write_text("hello\n")
    (repo / "exp" / "a-b").write_text("1")
    (repo / "exp" / "a.b").write_text("2")
    (repo / "exp" / "a" / "deep" / "x").write_bytes(os.urandom(3000))
    (repo / "exp" / "run.sh").write_text("#!/bin/sh\ncat data.txt\n")
    (repo / "exp" / "run.sh").chmod(0o755)
    (repo / "exp" / "link").symlink_to("data.txt")
    where = worker_dir or str(tmp_path / "host" / "w1")
    (repo / "exp" / "spec.toml").write_text(
        f'[experiment]\nname = "dep"\nruns = 1\nseed = 1\n\n[[test]]\nname = "a"\ncommand = "./run.sh"\n\n'
        f'[deploy]\n{deploy}\n\n[[worker]]\ndir = "{where}"\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the experiment")
    return repo


def test_the_agents_tree_id_is_gits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    held = scan(str(repo), {".git"})
    assert tree_id((p, m, b) for p, (m, b, _, _) in held.items()) == git(repo, "rev-parse", "HEAD^{tree}")
    assert set(held) == set(git(repo, "ls-files").split("\n"))


def test_a_local_worker_with_a_dir_runs_the_deployed_commit(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(repo / "exp" / "spec.toml"), "-o", str(tmp_path / "out"), "--quiet"])
    assert exit_.value.code == 0
    host = tmp_path / "host" / "w1"
    assert (host / "exp" / "data.txt").read_text() == "hello\n" and os.readlink(host / "exp" / "link") == "data.txt"
    assert os.access(host / "exp" / "run.sh", os.X_OK) and (host / MARKER).exists()
    db = sqlite3.connect(tmp_path / "out" / "journal.sqlite")
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    assert db.execute("SELECT worker, tree, files, files_sent FROM deploys").fetchall() == [("local", tree, 8, 8)]
    assert tree in db.execute("SELECT value FROM meta WHERE key = 'deploy'").fetchone()[0]
    assert {r[0] for r in db.execute("SELECT stdout_tail FROM trials")} == {b"hello\n"}  # ran in the deployed copy
    snaps = db.execute("SELECT json_extract(snapshot, '$.deployed_tree') FROM attempts").fetchall()
    assert snaps and all(s == (tree,) for s in snaps)
    provenance = read_experiment(tmp_path / "out").provenance["deploy"]
    assert (provenance["commit"], provenance["tree"], [h["worker"] for h in provenance["hosts"]]) == (git(repo, "rev-parse", "HEAD"),
                                                                                                    tree, ["local"])
    with pytest.raises(SystemExit):
        main(["report", str(tmp_path / "out"), "-o", str(tmp_path / "report.html")])
    assert f"commit {git(repo, 'rev-parse', 'HEAD')} to 1 hosts, each verified" in (tmp_path / "report.html").read_text()


def test_identity_names_a_worker_that_holds_another_tree() -> None:
    identity = compare_workers({1: {"worker": "a", "deployed_tree": "t1"}, 2: {"worker": "b", "deployed_tree": "t2"}})
    assert identity is not None and not identity.identical
    assert [(d.what, dict(d.values)) for d in identity.differences] == [("deployed_tree", {"a": "t1", "b": "t2"})]


def test_a_second_deploy_sends_only_what_changed_and_repairs_a_tampered_copy(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    target = str(tmp_path / "host" / "w1")
    with LocalWorker() as worker:
        first = deploy_host(worker, read_source(load_spec(repo / "exp" / "spec.toml")), "dep", target)
        assert first.files_sent == 8
        (repo / "exp" / "data.txt").write_text("changed\n")
        (repo / "exp" / "gone").write_text("x")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "change")
        git(repo, "rm", "-q", "exp/gone")
        git(repo, "commit", "-qm", "remove")
        source = read_source(load_spec(repo / "exp" / "spec.toml"))
        second = deploy_host(worker, source, "dep", target)
        assert (second.files_sent, second.needed, second.tree) == (1, ["exp/data.txt"], git(repo, "rev-parse", "HEAD^{tree}"))
        (Path(target) / "exp" / "a-b").write_text("tampered")
        (Path(target) / "exp" / "stray").write_text("left behind")
        third = deploy_host(worker, source, "dep", target)
        assert (third.files_sent, third.tree) == (1, source.tree)
        assert not (Path(target) / "exp" / "stray").exists() and (Path(target) / "exp" / "a-b").read_text() == "1"


def test_a_copy_that_differs_from_what_was_sent_fails_verification_naming_the_worker(tmp_path: Path, monkeypatch) -> None:
    repo = make_repo(tmp_path)
    real = deploying._pieces

    def corrupted(entry, blobs):  # what a faulty disk or transport would hand the agent
        for piece, end in real(entry, blobs):
            yield (piece.replace(b"hello", b"jello") if entry.path == "exp/data.txt" else piece), end

    monkeypatch.setattr(deploying, "_pieces", corrupted)
    with LocalWorker("box") as worker, pytest.raises(WorkerSetupError, match=r"worker box: the copy in .*/w1 fails verification"):
        deploy_host(worker, read_source(load_spec(repo / "exp" / "spec.toml")), "dep", str(tmp_path / "host" / "w1"))


def test_a_dir_holding_something_else_is_refused(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    (tmp_path / "host" / "w1").mkdir(parents=True)
    (tmp_path / "host" / "w1" / "precious").write_text("mine")
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(repo / "exp" / "spec.toml"), "-o", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "worker local: refusing to deploy:" in err and "w1 holds something else" in err
    assert (tmp_path / "host" / "w1" / "precious").read_text() == "mine" and not (tmp_path / "out" / "journal.sqlite").exists()


def test_dirty_files_are_refused_by_name_or_shipped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "exp" / "data.txt").write_text("uncommitted\n")
    (repo / "untracked").write_text("not shipped, not a reason to refuse")
    with pytest.raises(SpecError, match=r"\[deploy\]: key 'dirty' = \"refuse\": uncommitted changes to exp/data.txt; commit them"):
        read_source(load_spec(repo / "exp" / "spec.toml"))
    # `plan` shows the commit and says that `run` would refuse, rather than failing itself.
    planned = plan(repo / "exp" / "spec.toml")
    assert planned["deploy"]["commit"] == git(repo, "rev-parse", "HEAD") and planned["deploy"]["dirty"] == []
    assert planned["run_checks"][-1].endswith("uncommitted changes to exp/data.txt; commit them, or set dirty = \"include\" to "
                                              "ship them: `run` refuses to start until then")
    text = (repo / "exp" / "spec.toml").read_text().replace('source = "git"', 'source = "git"\ndirty = "include"')
    (repo / "exp" / "spec.toml").write_text(text)
    source = read_source(load_spec(repo / "exp" / "spec.toml"))
    assert source.dirty == ("exp/data.txt", "exp/spec.toml") and source.tree != git(repo, "rev-parse", "HEAD^{tree}")
    with LocalWorker() as worker:
        done = deploy_host(worker, source, "dep", str(tmp_path / "host" / "w1"))
    assert done.tree == source.tree and (tmp_path / "host" / "w1" / "exp" / "data.txt").read_text() == "uncommitted\n"
    assert not (tmp_path / "host" / "w1" / "untracked").exists()


@pytest.mark.parametrize("case, message", [
    ("no-repo", r"key 'source' = \"git\": .* is not in a git repository"),
    ("rev", r"key 'rev': 'nosuchbranch' is not a commit of"),
    ("source", r"key 'source' must be \"git\" .* or \"folder\" .*, got 'svn'"),
    ("dir", r"worker 'node1' has no `dir`"),
])
def test_bad_input_is_one_line_naming_the_key_and_exit_2(tmp_path: Path, capsys, case: str, message: str) -> None:
    if case == "no-repo":
        folder = tmp_path / "plain"
        folder.mkdir()
        spec = folder / "spec.toml"
        spec.write_text('[experiment]\nname = "x"\n[[test]]\nname = "a"\ncommand = "true"\n[deploy]\nsource = "git"\n'
                        f'[[worker]]\ndir = "{tmp_path / "w"}"\n')
    else:
        deploy = {"rev": 'source = "git"\nrev = "nosuchbranch"', "source": 'source = "svn"', "dir": 'source = "folder"'}[case]
        spec = make_repo(tmp_path, deploy) / "exp" / "spec.toml"
        if case == "dir":
            spec.write_text(spec.read_text() + '\n[[worker]]\nkind = "ssh"\nhost = "node1"\n')
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(spec), "-o", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1
    assert __import__("re").search(message, err), err
    assert not (tmp_path / "out").exists() and not (tmp_path / "w").exists()


def test_a_folder_is_deployed_as_it_is_without_experiment_directories(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "exp"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "f").write_text("data")
    (folder / "spec.toml").write_text('[experiment]\nname = "dep"\nruns = 1\nseed = 1\n[[test]]\nname = "a"\ncommand = "cat sub/f"\n'
                                      f'[deploy]\nsource = "folder"\n[[worker]]\ndir = "{tmp_path / "w"}"\n')
    (folder / "results" / "old").mkdir(parents=True)
    (folder / "results" / "old" / "journal.sqlite").write_text("an earlier experiment")
    with pytest.raises(SystemExit) as exit_:
        main(["plan", str(folder / "spec.toml")])
    assert exit_.value.code == 0 and "Deploy: folder (2 files, " in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(folder / "spec.toml"), "-o", str(folder / "results" / "new"), "--quiet"])
    assert exit_.value.code == 0
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == [MARKER, "spec.toml", "sub"]
    db = sqlite3.connect(folder / "results" / "new" / "journal.sqlite")
    assert {r[0] for r in db.execute("SELECT stdout_tail FROM trials")} == {b"data"}


def test_plan_names_the_commit_and_resume_does_not_redeploy_unless_asked(tmp_path: Path, capsys) -> None:
    inits = tmp_path / "inits"
    repo = make_repo(tmp_path, f'source = "git"\n\n[init]\ncommand = "pwd >> {inits}"')
    spec = str(repo / "exp" / "spec.toml")
    with pytest.raises(SystemExit):
        main(["plan", spec])
    commit = git(repo, "rev-parse", "HEAD")
    assert f"Deploy: commit {commit[:7]} (HEAD, 8 files, " in capsys.readouterr().out
    out = str(tmp_path / "out")
    for argv in (["run", spec, "-o", out, "--quiet"], ["resume", out, "--quiet"], ["resume", out, "--quiet", "--redeploy"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 0
    db = sqlite3.connect(Path(out) / "journal.sqlite")
    assert [r[0] for r in db.execute("SELECT files_sent FROM deploys ORDER BY id")] == [8, 0]  # the redeploy found it all there
    # [init] ran after the deploy, not again on the plain resume, again with the redeploy.
    assert inits.read_text().split() == [str(tmp_path / "host" / "w1" / "exp")] * 2
    (repo / "exp" / "data.txt").write_text("moved on\n")
    git(repo, "commit", "-qam", "later work")  # resume deploys the experiment's commit, not HEAD
    with pytest.raises(SystemExit) as exit_:
        main(["resume", out, "--quiet", "--redeploy"])
    assert exit_.value.code == 0 and (tmp_path / "host" / "w1" / "exp" / "data.txt").read_text() == "hello\n"
    assert len(inits.read_text().split()) == 3


def test_resume_of_a_dirty_deploy_checks_the_files_are_as_they_were(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path, 'source = "git"\ndirty = "include"')
    (repo / "exp" / "data.txt").write_text("uncommitted\n")
    spec, out = str(repo / "exp" / "spec.toml"), str(tmp_path / "out")
    for argv in (["run", spec, "-o", out, "--quiet"], ["resume", out, "--quiet"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 0
    (repo / "exp" / "data.txt").write_text("edited since\n")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["resume", out, "--quiet"])
    assert exit_.value.code == 2 and "reads as" in capsys.readouterr().err


def test_the_agent_removes_only_a_deploy_of_the_experiment_and_the_folders_it_leaves_empty(tmp_path: Path) -> None:
    from benchsage.agent.deploy import remove, write_marker

    top = tmp_path / "bisect"
    ours, theirs, sibling = top / "s1" / "pair" / "server", top / "s2" / "pair" / "server", top / "s1" / "other"
    for d in (ours, theirs, sibling):
        (d / "sub").mkdir(parents=True)
        (d / "sub" / "f").write_text("x")
    write_marker(str(ours), "svc-bisect", None)
    write_marker(str(theirs), "another", None)
    assert remove(str(ours), "svc-bisect", str(top)) == {"removed": True}
    assert not (top / "s1" / "pair").exists() and sibling.exists()  # pair/ was left empty; s1/ still holds other/
    refused = remove(str(theirs), "svc-bisect", str(top))
    assert not refused["removed"] and str(theirs) in refused["why"] and (theirs / "sub" / "f").exists()
    assert not remove(str(sibling), "svc-bisect", str(top))["removed"] and sibling.exists()  # no marker: not a deploy
    assert remove(str(ours), "svc-bisect", str(top)) == {"removed": False, "why": "absent"}
    write_marker(str(sibling), "svc-bisect", None)
    assert remove(str(sibling), "svc-bisect", str(top)) == {"removed": True} and not (top / "s1").exists() and top.exists()
