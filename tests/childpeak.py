"""Children whose peak RSS is their own.

wait4's ru_maxrss of a child started from a test (fork, or vfork then exec) begins at the peak of
the process it was started from: exec carries the old address space's high-water mark over,
and a pytest worker reaches several hundred MiB. A memory bound checked that way fails when
the worker has grown, and holds trivially when it compares two children. `measured()` starts
the command from a small launcher instead: the launcher forks it (a fresh process accounting,
starting from the launcher's few MiB), waits for it alone and records its exit status and peak.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

LAUNCHER = """
import os, resource, signal, sys
usage, seconds, file_limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pid = os.fork()
if pid == 0:
    if file_limit:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
    if seconds:
        signal.alarm(seconds)  # kept across exec: SIGALRM ends the command after that long
    os.execvp(sys.argv[4], sys.argv[4:])
_, status, rusage = os.wait4(pid, 0)
with open(usage, "w") as f:
    f.write(f"{status} {rusage.ru_maxrss}")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def measured(command: list[str], usage: Path, seconds: int = 0, file_limit: int = 0) -> list[str]:
    """The command line that runs `command` so that its own peak RSS is recorded in `usage`
    (read it with `outcome`); `seconds` ends it with SIGALRM, `file_limit` bounds every file
    it writes (RLIMIT_FSIZE)."""
    return [sys.executable, "-c", LAUNCHER, str(usage), str(seconds), str(file_limit), *command]


def outcome(usage: Path) -> tuple[int, int]:
    """(the command's return code as subprocess gives it, its peak RSS in KiB)."""
    status, peak = (int(v) for v in usage.read_text().split())
    return os.waitstatus_to_exitcode(status), peak
