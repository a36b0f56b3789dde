"""How the suite shares one machine with itself.

The suite mostly waits (processes, ssh, a Slurm cluster), so pyproject.toml runs it on several
pytest-xdist workers. Three rules keep that safe and quick:

- Tests that share a module-scoped fixture run on one worker, which builds it once.
- Tests marked `slow` start first: started last, one of them would keep the run going alone.
- Tests marked `timing` judge real processes by their time. They run, with all they start,
  under the round-robin real-time scheduling policy at its lowest priority, so no other work on
  the machine, the rest of the run included, delays their trials' exec and wake-ups (at equal
  priority it does: a busy machine then turns a sleep-based order effect into noise). Their
  bursts of CPU are short, and the kernel keeps a share for the others. It needs root;
  otherwise nothing changes.
"""

from __future__ import annotations

import os
from typing import Iterator, List, Optional

import pytest

WORKER = os.environ.get("PYTEST_XDIST_WORKER")
REALTIME = os.sched_param(1)  # the lowest real-time priority: above every normal process
NORMAL = os.sched_param(0)


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
    realtime = item.get_closest_marker("timing") is not None and os.geteuid() == 0
    if realtime:
        try:
            os.sched_setscheduler(0, os.SCHED_RR, REALTIME)
        except OSError:  # a container or cgroup without real-time runtime: as it is
            realtime = False
    try:
        yield
    finally:
        if realtime:
            os.sched_setscheduler(0, os.SCHED_OTHER, NORMAL)
