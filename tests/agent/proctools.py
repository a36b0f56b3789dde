"""Process helpers for the tests of the agent and its measurement modules."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from benchsage.agent import spawn
from benchsage.agent.spawn import run_process
from benchsage.execute.worker import ProcessResult

# Python source that makes benchsage a bare package, as the bootstrap does on a host (no
# benchsage/__init__.py, no site-packages), so that the agent's modules import as they do there.
AS_ON_A_HOST = (
    "import sys, types\n"
    "sys.modules['benchsage'] = types.ModuleType('benchsage')\n"
    f"sys.modules['benchsage'].__path__ = [{str(Path(spawn.__file__).parents[1])!r}]\n"
)


# The oldest Python the agent supports, and one too old for it, where the machine has them:
# .ci/run exports their paths; a test that needs one is skipped, saying why, without it.
PYTHON38 = os.environ.get("BENCHSAGE_TEST_PYTHON38") or None
PYTHON_TOO_OLD = os.environ.get("BENCHSAGE_TEST_PYTHON_TOO_OLD") or None
needs_python38 = pytest.mark.skipif(PYTHON38 is None, reason="BENCHSAGE_TEST_PYTHON38 is not set (the path of a Python 3.8)")


def gone(pid: int, within: float = 5.0) -> bool:
    """True once pid no longer runs (absent, or a zombie waiting for its parent or init)."""
    end = time.monotonic() + within
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.01)


def as_user(uid: int, gid: int, produce: Callable[[], bytes]) -> bytes:
    """What `produce()` returns, computed in a forked child that runs as uid/gid (needs root)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - reports through the pipe
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            os.write(w, produce())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return data


def trial(command: str, cwd: Path, **kw: Any) -> ProcessResult:
    """The agent's own capture function, in this process (the agent runs the same code)."""
    return ProcessResult(**run_process(command, str(cwd), **kw))
