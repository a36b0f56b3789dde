"""A deploy never follows a link it did not make and never writes outside its `dir`, whatever the
repository holds (issue #39): real git repositories, the local worker's real agent (under the
oldest Python the agent supports too, where BENCHSAGE_TEST_PYTHON38 names one). The ssh fleet's
side is tests/fleet/test_deploy_safety_fleet.py."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Union

import pytest

from benchsage.agent.deploy import MARKER, TEMP_PREFIX, blob_id, tree_id, write_marker
from benchsage.cli import main
from benchsage.errors import SpecError, WorkerSetupError
from benchsage.execute.deploy import DeploySource, Entry, deploy_host, read_source
from benchsage.execute.local import LocalWorker
from benchsage.spec import load_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent"))
from proctools import PYTHON38, needs_python38  # noqa: E402

PYTHONS = [pytest.param(None, id="python"), pytest.param(PYTHON38, id="python3.8", marks=needs_python38)]


class Link(str):
    """A symlink's target, where a file's content would be."""


Tree = Mapping[str, Union[str, Link, None]]  # path -> content, a Link, or None: removed


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, files: Tree, message: str = "change") -> str:
    """Commit `files` in `repo` (made on first use, with the spec that deploys it to host/w1 beside
    it); the commit's tree id."""
    if not (repo / ".git").exists():
        repo.mkdir(parents=True)
        git(repo, "init", "-q")
        git(repo, "config", "user.email", "t@example.org")
        git(repo, "config", "user.name", "t")
        (repo / "spec.toml").write_text('[experiment]\nname = "dep"\nruns = 1\nseed = 1\n[[test]]\nname = "a"\ncommand = "true"\n'
                                        f'[deploy]\nsource = "git"\n[[worker]]\ndir = "{repo.parent / "host" / "w1"}"\n')
    for path, content in files.items():
        target = repo / path
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        if content is None:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Link):
            target.symlink_to(content)
        else:
            target.write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD^{tree}")


def deploy(worker: LocalWorker, repo: Path) -> str:
    """Deploy the repository's HEAD to host/w1 beside it; the tree id verified there."""
    source = read_source(load_spec(repo / "spec.toml"))
    return deploy_host(worker, source, "dep", str(repo.parent / "host" / "w1")).tree


def outside(tmp_path: Path) -> Path:
    """A folder beside the worker's dir that nothing of a deploy may touch, holding one file."""
    folder = tmp_path / "host" / "outside"
    folder.mkdir(parents=True)
    (folder / "victim").write_text("precious")
    return folder


def untouched(folder: Path) -> bool:
    return sorted(p.name for p in folder.iterdir()) == ["victim"] and (folder / "victim").read_text() == "precious"


# -- finding 1: the temporary name ---------------------------------------------------------------


def test_a_commit_holding_a_link_at_the_temporary_name_is_refused_naming_it(tmp_path: Path, capsys) -> None:
    away = outside(tmp_path)
    repo = tmp_path / "repo"
    commit(repo, {f"exp/{TEMP_PREFIX}payload": Link(str(away / "victim")), "exp/payload": "written through the link\n"})
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(repo / "spec.toml"), "-o", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert untouched(away), (away / "victim").read_text()
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"exp/{TEMP_PREFIX}payload" in err and "reserved" in err, err
    assert not (tmp_path / "host" / "w1").exists() and not (tmp_path / "out" / "journal.sqlite").exists()


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("path, why", [
    (f"{TEMP_PREFIX}payload", "reserved"),
    (f"sub/{TEMP_PREFIX}x", "reserved"),
    ("/etc/benchsage-test", "absolute"),
    ("../outside/victim", "'..'"),
    ("sub/../../outside/victim", "'..'"),
    (MARKER, "the deploy's own"),
    ("sub//x", "empty"),
    ("sub/./x", "'.'"),
])
def test_the_agent_refuses_a_manifest_path_that_is_not_plainly_inside_its_dir(tmp_path: Path, python: str | None, path: str,
                                                                               why: str) -> None:
    """What a controller that did not check (or a manifest built by hand) sends: the agent itself
    refuses before it writes anything, naming the path."""
    away = outside(tmp_path)
    content = tmp_path / "content"
    content.write_text("payload\n")
    entries = (Entry("ok.txt", "100644", blob_id(b"payload\n"), 8, str(content)), Entry(path, "100644", blob_id(b"payload\n"), 8, str(content)))
    source = DeploySource("folder", str(tmp_path), "0" * 40, entries)
    with LocalWorker("box", python=[python] if python else None) as worker:
        with pytest.raises(WorkerSetupError) as err:
            deploy_host(worker, source, "dep", str(tmp_path / "host" / "w1"))
    message = str(err.value)
    assert message.startswith("worker box: refusing to deploy") and repr(path) in message and why in message, message
    assert untouched(away) and not (tmp_path / "host" / "w1" / "ok.txt").exists()


def test_a_leftover_link_at_a_temporary_name_is_never_written_through(tmp_path: Path) -> None:
    """A `.benchsage-tmp-*` link already in the dir (an older deploy's, or planted): the agent's
    temporary files are made anew (O_EXCL|O_NOFOLLOW) and the leftover goes at the finish."""
    away = outside(tmp_path)
    repo = tmp_path / "repo"
    tree = commit(repo, {"exp/payload": "mine\n", "exp/other": "x\n"})
    host = tmp_path / "host" / "w1"
    with LocalWorker() as worker:
        assert deploy(worker, repo) == tree
        for name in ("payload", "other", MARKER):
            (host / "exp" / f"{TEMP_PREFIX}{name}").symlink_to(away / "victim")
            (host / f"{TEMP_PREFIX}{name}").symlink_to(away / "victim")
        (host / "exp" / "payload").unlink()  # sent again
        tree = commit(repo, {"exp/other": "y\n"})
        assert deploy(worker, repo) == tree
    assert untouched(away) and not list(host.rglob(f"{TEMP_PREFIX}*"))


# -- finding 2 and 9: what a path is changes between commits ------------------------------------------


@pytest.mark.parametrize("python", PYTHONS)
def test_a_link_that_becomes_a_directory_is_replaced_before_anything_is_written_into_it(tmp_path: Path, python: str | None) -> None:
    away = outside(tmp_path)
    repo = tmp_path / "repo"
    host = tmp_path / "host" / "w1"
    with LocalWorker(python=[python] if python else None) as worker:
        first = commit(repo, {"exp/run.sh": "true\n", "exp/data": Link("../../outside")})
        assert deploy(worker, repo) == first and os.readlink(host / "exp" / "data") == "../../outside"
        second = commit(repo, {"exp/data": None, "exp/data/x.txt": "into the tree\n", "exp/data/deeper/y.txt": "and deeper\n"})
        assert deploy(worker, repo) == second
    assert untouched(away)
    assert not (host / "exp" / "data").is_symlink() and (host / "exp" / "data" / "x.txt").read_text() == "into the tree\n"


@pytest.mark.parametrize("python", PYTHONS)
def test_a_file_that_becomes_a_directory_and_back_deploys_every_time(tmp_path: Path, python: str | None) -> None:
    away = outside(tmp_path)
    repo = tmp_path / "repo"
    host = tmp_path / "host" / "w1"
    changes: list[Tree] = [{"exp/thing": "a file\n", "exp/keep": "k\n"},
                           {"exp/thing": None, "exp/thing/inner.txt": "now a folder\n", "exp/thing/out": Link(str(away))},
                           {"exp/thing": "a file again\n"},
                           {"exp/thing": Link(str(away))},
                           {"exp/thing": None, "exp/thing/again/deep.txt": "a folder again\n"}]
    with LocalWorker(python=[python] if python else None) as worker:
        for k, change in enumerate(changes):
            tree = commit(repo, change)
            assert deploy(worker, repo) == tree, k
    assert untouched(away) and (host / "exp" / "thing" / "again" / "deep.txt").read_text() == "a folder again\n"


# -- finding 8: modes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("python", PYTHONS)
def test_a_folder_deploy_keeps_each_files_mode(tmp_path: Path, python: str | None) -> None:
    folder = tmp_path / "exp"
    folder.mkdir()
    modes = {"secret": 0o600, "group": 0o640, "tool": 0o700, "run.sh": 0o755, "plain": 0o644, "odd": 0o604}
    for name, mode in modes.items():
        (folder / name).write_text(name)
        (folder / name).chmod(mode)
    (folder / "spec.toml").write_text('[experiment]\nname = "dep"\n[[test]]\nname = "a"\ncommand = "true"\n'
                                      f'[deploy]\nsource = "folder"\n[[worker]]\ndir = "{tmp_path / "w"}"\n')
    source = read_source(load_spec(folder / "spec.toml"))
    with LocalWorker(python=[python] if python else None) as worker:
        deploy_host(worker, source, "dep", str(tmp_path / "w"))
        assert {n: stat.S_IMODE((tmp_path / "w" / n).stat().st_mode) for n in modes} == modes
        (folder / "group").chmod(0o600)  # a mode changed, the content not: the copy follows
        deploy_host(worker, read_source(load_spec(folder / "spec.toml")), "dep", str(tmp_path / "w"))
    assert stat.S_IMODE((tmp_path / "w" / "group").stat().st_mode) == 0o600


def test_a_git_deploy_never_opens_a_file_wider_than_the_checkout_holds_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    commit(repo, {"exp/secret": "token\n", "exp/run.sh": "#!/bin/sh\n", "exp/plain": "p\n", "exp/tool": "#!/bin/sh\n"})
    (repo / "exp" / "run.sh").chmod(0o755)
    (repo / "exp" / "tool").chmod(0o700)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "executables")
    (repo / "exp" / "secret").chmod(0o600)  # git records 100644 all the same: the checkout's mode is what is kept
    with LocalWorker() as worker:
        deploy(worker, repo)
    host = tmp_path / "host" / "w1" / "exp"
    assert {n: stat.S_IMODE((host / n).stat().st_mode) for n in ("secret", "run.sh", "plain", "tool")} == {
        "secret": 0o600, "run.sh": 0o755, "plain": 0o644, "tool": 0o700}


# -- the dir itself (finding 5) ------------------------------------------------------------------------


def test_a_new_dir_is_private_and_a_dir_others_can_swap_is_refused_naming_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    tree = commit(repo, {"exp/f": "x\n"})
    host = tmp_path / "host" / "w1"
    with LocalWorker("box") as worker:
        assert deploy(worker, repo) == tree
        assert stat.S_IMODE(host.stat().st_mode) == 0o700
        again = deploy_host(worker, read_source(load_spec(repo / "spec.toml")), "dep", f"{host}/./")  # the same dir, written loosely
        assert (again.tree, again.files_sent) == (tree, 0)
        with pytest.raises(WorkerSetupError, match=r"'/srv/\.\./etc' is not a plain absolute path"):
            deploy_host(worker, read_source(load_spec(repo / "spec.toml")), "dep", "/srv/../etc")
        host.chmod(0o777)
        with pytest.raises(WorkerSetupError, match=rf"worker box: refusing to deploy: {host} is writable by group or others"):
            deploy(worker, repo)
        host.chmod(0o700)
        os.chown(host, 65534, 65534)
        with pytest.raises(WorkerSetupError, match=rf"worker box: refusing to deploy: {host} is owned by uid 65534"):
            deploy(worker, repo)
        os.chown(host, 0, 0)
        host.rename(tmp_path / "host" / "real")
        host.symlink_to(tmp_path / "host" / "real")
        with pytest.raises(WorkerSetupError, match=rf"worker box: refusing to deploy: {host} is a symlink"):
            deploy(worker, repo)
    assert (tmp_path / "host" / "real" / "exp" / "f").read_text() == "x\n"


def ask_remove(worker: LocalWorker, directory: Path, private_below: Path | None = None) -> dict:
    return worker.ask({"op": "deploy", "step": "remove", "dir": str(directory), "experiment": "dep",
                       "private_below": None if private_below is None else str(private_below)})


@pytest.mark.parametrize("python", PYTHONS)
def test_removal_never_follows_a_link_swapped_in_for_the_dir_or_inside_it(tmp_path: Path, python: str | None) -> None:
    away = outside(tmp_path)
    write_marker(str(away), "dep", None)  # a folder that looks like a deploy of the experiment
    top = tmp_path / "bisect"
    swapped = top / "search" / "w1"
    swapped.parent.mkdir(parents=True)
    swapped.symlink_to(away)
    with LocalWorker(python=[python] if python else None) as worker:
        reply = ask_remove(worker, swapped, top)
        assert not reply["removed"] and str(swapped) in reply["why"] and "symlink" in reply["why"], reply
        swapped.unlink()
        (swapped / "sub").mkdir(parents=True, mode=0o700)
        swapped.chmod(0o700)
        swapped.parent.chmod(0o700)
        write_marker(str(swapped), "dep", None)
        (swapped / "sub" / "escape").symlink_to(away)
        (swapped / "escape").symlink_to(away)
        assert ask_remove(worker, swapped, top) == {"removed": True}
        assert not (top / "search").exists() and top.exists()  # the levels left empty go, up to the shared top
        mine = top / "search2" / "w1"
        mine.mkdir(parents=True, mode=0o700)
        (top / "search2").chmod(0o700)
        write_marker(str(mine), "dep", None)
        os.chown(mine, 65534, 65534)
        reply = ask_remove(worker, mine, top)
        assert not reply["removed"] and f"{mine} is owned by uid 65534" in reply["why"], reply
        assert (mine / MARKER).exists()
    os.unlink(away / MARKER)
    assert untouched(away)


def test_every_level_below_the_shared_top_is_made_private_and_checked(tmp_path: Path) -> None:
    content = tmp_path / "content"
    content.write_text("x\n")
    entries = (Entry("f", "100644", blob_id(b"x\n"), 2, str(content)),)
    top = tmp_path / "shared"
    source = DeploySource("folder", str(tmp_path), tree_id([("f", "100644", blob_id(b"x\n"))]), entries, private_below=str(top))
    target = top / "search" / "pair" / "client"
    with LocalWorker("box") as worker:
        deploy_host(worker, source, "dep", str(target))
        assert stat.S_IMODE(top.stat().st_mode) == 0o1777  # like /tmp: every user makes their own search there
        for level in (top / "search", top / "search" / "pair", target):
            assert stat.S_IMODE(level.stat().st_mode) == 0o700, level
        os.chown(top / "search", 65534, 65534)
        with pytest.raises(WorkerSetupError, match=rf"{top / 'search'} is owned by uid 65534"):
            deploy_host(worker, source, "dep", str(target))
        os.chown(top / "search", 0, 0)
        (top / "search" / "pair").chmod(0o770)
        with pytest.raises(WorkerSetupError, match=rf"{top / 'search' / 'pair'} is writable by group or others"):
            deploy_host(worker, source, "dep", str(target))
        (top / "search" / "pair").chmod(0o700)
        (top / "search").rename(tmp_path / "elsewhere")
        (top / "search").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(WorkerSetupError, match=rf"{top / 'search'} is a symlink"):
            deploy_host(worker, source, "dep", str(target))
    assert (tmp_path / "elsewhere" / "pair" / "client" / "f").read_text() == "x\n"


def test_a_commit_holding_the_markers_name_is_refused_naming_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    commit(repo, {f"{MARKER}": "a marker of my own\n"})
    with pytest.raises(SpecError, match=rf"{MARKER}"):
        read_source(load_spec(repo / "spec.toml"))


@pytest.mark.parametrize("entries, said", [
    (["100644 blob {b}\t.."], "'..' has a '..' part: it would leave the dir"),
    (["040000 tree {dotdot}\texp"], "'exp/..' has a '..' part"),
    (["100644 blob {b}\ta", "040000 tree {inner}\ta"], "holds 'a' both as a file and as a folder"),
])
def test_a_crafted_commit_no_checkout_could_hold_is_refused_naming_the_path(tmp_path: Path, capsys, entries: list[str],
                                                                              said: str) -> None:
    """git itself lets such trees be made (git mktree) and committed; the repository is not trusted."""
    repo = tmp_path / "repo"
    commit(repo, {"README": "r\n"})

    def mktree(lines: list[str]) -> str:
        return subprocess.run(["git", "-C", str(repo), "mktree"], input="".join(line + "\n" for line in lines), check=True,
                              capture_output=True, text=True).stdout.strip()

    blob = subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input="payload\n", check=True,
                          capture_output=True, text=True).stdout.strip()
    names = {"b": blob, "dotdot": mktree([f"100644 blob {blob}\t.."]), "inner": mktree([f"100644 blob {blob}\tb"])}
    crafted = subprocess.run(["git", "-C", str(repo), "commit-tree", mktree([line.format(**names) for line in entries]), "-m",
                              "crafted"], check=True, capture_output=True, text=True).stdout.strip()
    git(repo, "update-ref", "refs/heads/crafted", crafted)  # git would not check it out: the spec deploys it as its rev
    (repo / "spec.toml").write_text((repo / "spec.toml").read_text().replace('source = "git"', 'source = "git"\nrev = "crafted"'))
    git(repo, "commit", "-qam", "deploy the crafted commit")
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(repo / "spec.toml"), "-o", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1 and said in err, err
    assert f"commit {crafted[:12]} cannot be deployed" in err and not (tmp_path / "host").exists()
