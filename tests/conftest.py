"""How the suite shares one machine with itself.

The suite mostly waits (processes, ssh, a Slurm cluster), so pyproject.toml runs it on several
pytest-xdist workers. Three rules keep that safe and quick:

- Tests that share a module-scoped fixture run on one worker, which builds it once. A file
  every worker reads (an HTML report) is built once for the whole run (`built_once`).
- Tests marked `slow` start first: started last, one of them would keep the run going alone.
- Tests marked `timing` judge real processes by their time. They run, with all they start,
  under the round-robin real-time scheduling policy, so no other work on the machine, the rest
  of the run included, delays their trials' exec and wake-ups (at equal priority it does: a
  busy machine then turns a sleep-based order effect into noise). They run one after another,
  on one worker (two at once took each other's CPUs: one of them then decided an effect late),
  while the other workers take the rest. Their bursts are short, and the kernel keeps a share
  for the others. It needs root; otherwise nothing changes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

WORKER = os.environ.get("PYTEST_XDIST_WORKER")
# `run` and `resume` write DIR/report.html unless told not to; the suite's hundreds of
# experiments do not look at it (a report costs about 2 s), and the tests of the report that
# comes with a run set BENCHSAGE_REPORT themselves.
os.environ.setdefault("BENCHSAGE_REPORT", "0")
TIMING_SLOTS = 1  # timing tests at once, one real-time priority each (the highest is TIMING_SLOTS)
TIMING_GROUP = "timing"  # the one worker's group of timing tests
NORMAL = os.sched_param(0)
GROUPS = "xdist-groups.json"  # test id -> its group, in the run's temporary folder


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    # pyproject.toml's addopts name xdist's options; with xdist turned off (-p no:xdist) they
    # are accepted and ignored, and the suite runs in this one process.
    if pluginmanager.is_blocked("xdist"):
        parser.addoption("--numprocesses", help="ignored: xdist is turned off (-p no:xdist)")
        parser.addoption("--dist", help="ignored: xdist is turned off (-p no:xdist)")


def pytest_configure(config: pytest.Config) -> None:
    """In xdist's controlling process, before the workers start: the test modules' asserts
    rewritten once, by two processes, into pytest's own cache of rewritten modules (the
    `__pycache__` beside each, ignored by git), which the workers read. Where that cache is not
    written (PYTHONDONTWRITEBYTECODE, as on the CI machine, or a fresh clone) each of the four
    workers rewrote every module it collects: about 6 s of CPU each, 12 s of the run here."""
    workers = getattr(config.option, "numprocesses", None)
    if WORKER is None and isinstance(workers, int) and workers > 1:
        _rewrite_ahead(config, Path(__file__).resolve().parent)


def _rewrite_ahead(config: pytest.Config, tests: Path) -> None:
    """Each test module's rewritten code, written as pytest writes it, with its own functions
    (a pytest that moved them writes nothing here, and its workers rewrite as before)."""
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        if state.mode != "rewrite":
            return
        tail = rewrite.PYC_TAIL
    except (ImportError, AttributeError, KeyError):
        return
    # Only what this run collects: the command line's paths (tests/ by default) and the conftests.
    asked = [Path(config.invocation_params.dir, arg.split("::")[0]).resolve() for arg in config.args] or [tests]
    modules = [path for path in sorted(tests.rglob("test_*.py")) + sorted(tests.rglob("conftest.py"))
               if (path.name == "conftest.py" or any(path == a or a in path.parents for a in asked))
               and rewrite._read_pyc(path, Path(rewrite.get_cache_dir(path)) / (path.name[:-3] + tail)) is None]
    if not modules:
        return
    child = os.fork()
    try:
        for path in modules[child == 0 :: 2]:
            cache = Path(rewrite.get_cache_dir(path))
            cache.mkdir(parents=True, exist_ok=True)
            source_hash, code = rewrite._rewrite_test(path, config)
            rewrite._write_pyc(state, code, source_hash, cache / (path.name[:-3] + tail))
    except Exception:  # noqa: BLE001 - a module left out is rewritten by the workers, as before
        pass
    finally:
        if child == 0:
            os._exit(0)
    os.waitpid(child, 0)


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    if WORKER is None:
        return  # a run in one process keeps the files' order
    groups = {item.nodeid: "%s::%s" % (item.nodeid.split("::")[0], name)
              for item in items for name in [_module_fixture(item)] if name is not None}
    # Timing tests run one after another on one worker: never two at once (each keeps the
    # other's trials waiting for a CPU), and never a worker idle waiting for a timing slot.
    groups.update({item.nodeid: TIMING_GROUP for item in items if item.get_closest_marker("timing")})
    # The PM QoS limit is the machine's: tests that hold it or read it run one after another.
    groups.update({item.nodeid: "cpu_latency" for item in items if item.get_closest_marker("cpu_latency")})
    slow = {groups.get(item.nodeid, item.nodeid) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: groups.get(item.nodeid, item.nodeid) not in slow)  # stable: a group stays in order
    # For the scheduler in the controlling process, which collects nothing itself: every
    # worker collects the same tests, and the last to write wins.
    shared = Path(config.option.basetemp).parent
    part = shared / ("%s.%s" % (GROUPS, WORKER))
    part.write_text(json.dumps(groups))
    os.replace(part, shared / GROUPS)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # xdist's hook: absent with -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist=loadgroup, its groups being the module fixtures the workers found (xdist's own
    way to pass groups, renaming the tests, does not reach pytest 9's test ids)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByModuleFixture(LoadScopeScheduling):
        groups: Optional[Dict[str, str]] = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                written = config._tmp_path_factory.getbasetemp() / GROUPS
                self.groups = json.loads(written.read_text()) if written.exists() else {}
            return self.groups.get(nodeid, nodeid)

    return ByModuleFixture(config, log)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test of the OrderSage artifact data is skipped, saying why, where the data is not."""
    if item.get_closest_marker("artifact") is not None and not _artifact().is_dir():
        pytest.skip("the OrderSage artifact data is not here: set BENCHSAGE_TEST_ARTIFACT to its folder (.ci/run does)")


def _artifact() -> Path:
    return Path(os.environ.get("BENCHSAGE_TEST_ARTIFACT") or "/nonexistent")


def _module_fixture(item: pytest.Item) -> Optional[str]:
    """The module-scoped fixture the test's others of that scope are built on (the first by
    name if several), or None: tests sharing it share a worker."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    module = {name for name, defs in info.name2fixturedefs.items() if defs and defs[-1].scope == "module"}
    roots = [name for name in module if not module & set(info.name2fixturedefs[name][-1].argnames)]
    return min(roots) if roots else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Optional[pytest.Item]) -> Iterator[None]:
    # Set before the test's fixtures, module-scoped ones included; what it starts inherits it.
    if item.get_closest_marker("timing") is None or os.geteuid() != 0:
        yield
        return
    with _timing_slot(item.config) as priority:
        try:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(priority))
        except OSError:  # a container or cgroup without real-time runtime: as it is
            yield
            return
        try:
            yield
        finally:
            os.sched_setscheduler(0, os.SCHED_OTHER, NORMAL)


@contextlib.contextmanager
def _timing_slot(config: pytest.Config) -> Iterator[int]:
    """Wait for a free slot among the workers' timing tests; its real-time priority."""
    basetemp = getattr(config.option, "basetemp", None)
    if WORKER is None or not basetemp:
        yield TIMING_SLOTS  # one test at a time anyway
        return
    shared = Path(basetemp).parent  # xdist gives each worker a folder in the run's own
    while True:
        for slot in range(TIMING_SLOTS):
            fd = os.open(shared / f"timing-slot-{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                yield TIMING_SLOTS - slot
            finally:
                os.close(fd)
            return
        time.sleep(0.05)


@pytest.fixture(scope="session")
def built_once(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Callable[[Path], None]], Path]:
    """built_once(name, build): the file `name`, written by build(path) once for the whole run.
    The first worker to ask builds it; the others wait for it and read the same file."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if WORKER is not None else base) / "built-once"
    folder.mkdir(exist_ok=True)

    def get(name: str, build: Callable[[Path], None]) -> Path:
        path = folder / name
        fd = os.open(folder / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not path.exists():
                part = folder / f"{name}.part"
                build(part)
                os.replace(part, path)
        finally:
            os.close(fd)
        return path

    return get
