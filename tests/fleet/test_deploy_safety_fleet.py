"""A deploy over ssh never writes outside its `dir` (issue #39), on real OpenSSH servers on
127.0.0.1: a link a commit left where the next one has a folder, a manifest path that leaves the
dir, and bisect's default dirs under the shared /tmp/benchsage-bisect, each level of which must
be the agent's user's and private, before a deploy and before a removal."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from benchsage.agent.deploy import blob_id, write_marker
from benchsage.errors import WorkerSetupError
from benchsage.execute.agentworker import AgentWorker
from benchsage.execute.bisect.ship import DEFAULT_ROOT, search_id
from benchsage.execute.deploy import DeploySource, Entry, deploy_host, read_source
from benchsage.execute.transports import SshTransport
from benchsage.spec import load_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))
from test_bisect_fleet import bisect, finished, make_repo  # noqa: E402
from test_deploy_safety import Link, commit, outside, untouched  # noqa: E402


def ssh_worker(fleet, host: str = "node1") -> AgentWorker:
    return AgentWorker(host, SshTransport(host, fleet.ssh_config, "python3"), python=["python3"])


def test_over_ssh_a_link_that_becomes_a_folder_and_a_path_that_leaves_the_dir_write_nothing_outside(fake_fleet,
                                                                                                    tmp_path: Path) -> None:
    fleet = fake_fleet(1)
    away = outside(tmp_path)
    repo, host = tmp_path / "repo", tmp_path / "host" / "w1"
    with ssh_worker(fleet) as worker:
        first = commit(repo, {"exp/data": Link("../../outside"), "exp/run.sh": "true\n"})
        assert deploy_host(worker, read_source(load_spec(repo / "spec.toml")), "dep", str(host)).tree == first
        second = commit(repo, {"exp/data": None, "exp/data/x.txt": "into the tree\n"})
        assert deploy_host(worker, read_source(load_spec(repo / "spec.toml")), "dep", str(host)).tree == second
        content = tmp_path / "content"
        content.write_text("payload\n")
        bad = DeploySource("folder", str(tmp_path), "0" * 40, (Entry("exp/../../outside/victim", "100644", blob_id(b"payload\n"), 8,
                                                                      str(content)),))
        with pytest.raises(WorkerSetupError, match=r"worker node1: refusing to deploy: 'exp/\.\./\.\./outside/victim' has a '\.\.' "
                                                   r"part: it would leave the dir"):
            deploy_host(worker, bad, "dep", str(host))
    assert untouched(away) and (host / "exp" / "data" / "x.txt").read_text() == "into the tree\n"


def on_fleet_without_dirs(repo: Path, fleet) -> None:
    """The spec measures on the fleet's hosts, which have no `dir`: bisect's default dirs."""
    spec = repo / "experiment.toml"
    spec.write_text(spec.read_text() + "".join(f'\n[[worker]]\nkind = "ssh"\nhost = "{h}"\nssh_config = "{fleet.ssh_config}"\n'
                                               for h in fleet.hosts))


@pytest.fixture
def search_top(tmp_path: Path):
    """The search's folder under the shared /tmp/benchsage-bisect (the search's id is that of
    tmp_path/search and seed 3); removed at teardown, whoever owns it."""
    top = Path(DEFAULT_ROOT) / search_id(str(tmp_path / "search"), 3)
    yield top
    if top.is_symlink():
        top.unlink()
    shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("case", ["owned by another user", "a symlink"])
def test_a_bisect_dir_another_user_could_swap_is_refused_naming_it(fake_fleet, tmp_path: Path, search_top: Path, case: str) -> None:
    fleet = fake_fleet(1)
    repo, out, elsewhere = tmp_path / "repo", tmp_path / "search", tmp_path / "elsewhere"
    hashes = make_repo(repo)
    on_fleet_without_dirs(repo, fleet)
    elsewhere.mkdir()
    if case == "owned by another user":
        search_top.mkdir(parents=True)
        os.chown(search_top, 65534, 65534)
        said = f"{search_top} is owned by uid 65534, not by this agent's user (uid {os.geteuid()})"
    else:
        search_top.mkdir(parents=True, mode=0o700)
        (search_top / "node1").symlink_to(elsewhere)
        said = f"{search_top / 'node1'} is a symlink: a deploy never follows one"
    status, _, stderr = finished(bisect(repo, hashes, out))
    lines = stderr.strip().splitlines()
    assert status == 2 and "Traceback" not in stderr, stderr
    assert lines[-1].startswith("benchsage: error: worker node1: refusing to deploy: ") and said in lines[-1], lines[-1]
    assert not list(elsewhere.iterdir())  # nothing was written through the link
    assert not list((out / "probes").glob("*/look-*/journal.sqlite"))  # nothing was measured


def test_over_ssh_removal_never_follows_a_link_swapped_in_for_a_bisect_dir(fake_fleet, tmp_path: Path, search_top: Path) -> None:
    fleet = fake_fleet(1)
    away = outside(tmp_path)
    write_marker(str(away), "dep", None)  # it looks like the search's deploy
    search_top.mkdir(parents=True, mode=0o700)
    (search_top / "node1").symlink_to(away)
    with ssh_worker(fleet) as worker:
        reply = worker.ask({"op": "deploy", "step": "remove", "dir": str(search_top / "node1"), "experiment": "dep",
                            "private_below": DEFAULT_ROOT})
        assert not reply["removed"] and f"{search_top / 'node1'} is a symlink" in reply["why"], reply
        (search_top / "node1").unlink()
        (search_top / "node1").mkdir(mode=0o700)
        write_marker(str(search_top / "node1"), "dep", None)
        (search_top / "node1" / "escape").symlink_to(away)
        reply = worker.ask({"op": "deploy", "step": "remove", "dir": str(search_top / "node1"), "experiment": "dep",
                            "private_below": DEFAULT_ROOT})
        assert reply == {"removed": True} and not search_top.exists() and Path(DEFAULT_ROOT).is_dir()
    (away / ".benchsage-deploy").unlink()
    assert untouched(away)
