"""Fixtures for fleet tests: real OpenSSH servers on 127.0.0.1 (examples/fleet/fakefleet.py).

Without sshd the tests skip, except under CI (CI=true), where .ci/run installs it and its
absence is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "examples" / "fleet"


def _fakefleet():
    spec = importlib.util.spec_from_file_location("fakefleet", FLEET / "fakefleet.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fakefleet = _fakefleet()


@pytest.fixture
def fake_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    if not (os.path.exists(fakefleet.SSHD) and shutil.which("ssh") and shutil.which("ssh-keygen")):
        if os.environ.get("CI") == "true":
            pytest.fail("openssh-server/openssh-client are not installed (.ci/run installs them)")
        pytest.skip("OpenSSH server not installed")
    started: list = []

    def make(hosts: int = 2):
        fleet = fakefleet.start(tmp_path_factory.mktemp("fleet"), hosts)
        started.append(fleet)
        return fleet

    yield make
    for fleet in started:
        fleet.stop()
        assert not fleet.processes(), "processes of the fake fleet outlived it"
