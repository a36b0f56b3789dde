"""How the suite shares one machine with itself.

The suite mostly waits (processes, ssh, a Slurm cluster), so pyproject.toml runs it on several
pytest-xdist workers. Three rules keep that safe and quick:

- Tests that share a module-scoped fixture run on one worker, which builds it once.
- Tests marked `slow` start first: started last, one of them would keep the run going alone.
- Tests marked `timing` judge real processes by their time. They run, with all they start, at a
  higher scheduling priority (10 nice levels), so the rest of the run, or other work on the machine,
  takes the CPU from them less. It needs root; otherwise nothing changes.
"""

from __future__ import annotations

import os
from typing import Iterator, List, Optional

import pytest

WORKER = os.environ.get("PYTEST_XDIST_WORKER")
NICE = os.getpriority(os.PRIO_PROCESS, 0)  # what the run was started with
TIMING_NICE = max(NICE - 10, -20)  # the scheduler weighs a process 9.3 times one 10 nice levels lower


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    # pyproject.toml's addopts name xdist's options; with xdist turned off (-p no:xdist) they
    # are accepted and ignored, and the suite runs in this one process.
    if pluginmanager.is_blocked("xdist"):
        parser.addoption("--numprocesses", help="ignored: xdist is turned off (-p no:xdist)")
        parser.addoption("--dist", help="ignored: xdist is turned off (-p no:xdist)")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    if not config.pluginmanager.has_plugin("xdist"):
        return
    for item in items:
        fixtures = getattr(item, "_fixtureinfo", None)
        defs = fixtures.name2fixturedefs.values() if fixtures is not None else ()
        if any(d[-1].scope == "module" for d in defs if d):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if WORKER is None:
        return  # a serial run keeps the files' order
    group = {item: _group(item) for item in items}
    slow = {group[item] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: group[item] not in slow)  # stable: a group stays in order


def _group(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    return str(mark.args[0]) if mark is not None and mark.args else item.nodeid


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Optional[pytest.Item]) -> Iterator[None]:
    # Set before the test's fixtures, module-scoped ones included; what it starts inherits it.
    if os.geteuid() == 0:
        os.setpriority(os.PRIO_PROCESS, 0, TIMING_NICE if item.get_closest_marker("timing") else NICE)
    yield
