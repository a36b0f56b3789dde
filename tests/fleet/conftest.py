"""Fixtures for fleet tests: a fake fleet of real OpenSSH servers on 127.0.0.1
(examples/fleet/fakefleet.py) and a real Slurm cluster on this machine
(examples/fleet/slurmcluster.py). Everything they start is stopped by pid at teardown, and
teardown fails if anything of it is still alive.

Without the binaries the tests skip, except under CI (CI=true), where .ci/run installs them
and their absence is a failure.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

FLEET = Path(__file__).resolve().parents[2] / "examples" / "fleet"
for folder in (FLEET, Path(__file__).resolve().parent):  # the fleet scripts; journalcheck
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import fakefleet  # noqa: E402
import slurmcluster  # noqa: E402


def require(tools: List[str], packages: str, root: bool = False) -> None:
    """Skip unless `tools` are installed (a failure under CI, which installs them)."""
    missing = [t for t in tools if not (os.path.exists(t) if "/" in t else shutil.which(t))]
    problem = ("%s missing (Debian: apt-get install %s)" % (", ".join(missing), packages) if missing
               else "needs root" if root and os.geteuid() != 0 else None)
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(problem + "; .ci/run installs them")
        pytest.skip(problem)


@pytest.fixture
def fake_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., fakefleet.Fleet]]:
    """A factory: fake_fleet(hosts=2) starts hosts node1..nodeN and returns a fakefleet.Fleet
    (.dir, .ssh_config, .known_hosts, .hosts, .reboot, .boot_id_command, .boot_id(h),
    .crash(h), .boot(h), .set_reboot(h, ...), .ssh(h, cmd), .processes()). All are stopped at
    teardown, which fails if any process of them outlived it."""
    require([fakefleet.SSHD, "ssh", "ssh-keygen"], "openssh-server openssh-client")
    started: List[fakefleet.Fleet] = []

    def make(hosts: int = 2) -> fakefleet.Fleet:
        fleet = fakefleet.start(tmp_path_factory.mktemp("fleet"), hosts)
        started.append(fleet)
        return fleet

    yield make
    for fleet in started:
        fleet.stop()
    for fleet in started:
        assert not fleet.processes() | fleet.reboot_processes(), "processes of the fake fleet outlived it"


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slurmcluster.Cluster]:
    """A two-node Slurm cluster (nodes c1, c2; partition "bench") for the tests of one module:
    a slurmcluster.Cluster with .conf (for SLURM_CONF), .nodes, .env(), .run(argv),
    .node_states(), .crash(node), .boot(node), .processes(). A test that crashes a node boots
    it again. Stopped at teardown, which fails if any process of it outlived it."""
    require([slurmcluster.MUNGED, slurmcluster.SLURMCTLD, slurmcluster.SLURMD, "srun", "sinfo"],
            "slurmctld slurmd slurm-client munge", root=True)
    cluster = slurmcluster.start(tmp_path_factory.mktemp("slurm"), nodes=2)
    yield cluster
    cluster.stop()
    assert not cluster.processes(), "processes of the Slurm cluster outlived it"
