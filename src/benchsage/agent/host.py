"""The agent's host as the controller asks about it: its boot identity, its environment snapshot
and the floor of a trial's max_rss here.

The snapshot is taken in a forked child: what it imports (snapshot.py, noise.py and the
standard library they use) and reads never grows the agent, whose resident memory every trial
it forks starts with.
"""

from __future__ import annotations

import json
import os

from benchsage.agent.measurement import measurement
from benchsage.agent.spawn import run_process
from benchsage.agent.wait import read_all

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would add ~0.7 MiB to the agent
    from typing import Any, Dict, List, Optional, Tuple

BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"


def boot_id(command: Optional[str] = None) -> Optional[str]:
    """The host's boot identity: `command`'s output when given, else the kernel's boot_id."""
    if command:
        result = run_process(command, "/", timeout=30, output_limit=4096)
        text = result["stdout"].decode(errors="replace").strip()
        return text if result["exit_status"] == 0 and text else None
    try:
        with open(BOOT_ID_FILE) as f:
            return f.read().strip() or None
    except OSError:
        return None


def spawn_floor() -> Optional[int]:
    """max_rss (KiB) this agent gives a trial that does nothing: the floor of the metric."""
    for candidate in ("/bin/true", "/usr/bin/true"):
        if os.path.exists(candidate):
            result = run_process(candidate, "/", timeout=10, output_limit=0)
            return int(result["max_rss"]) if result["exit_status"] == 0 else None
    return None


def take_snapshot(commands: List[Tuple[str, str]], files: List[str], cwd: str) -> Dict[str, Any]:
    """The environment snapshot of this host, with sha256 of the files `commands` execute (as
    resolved here, on this host's PATH) and of `files`, and how the agent measures here."""
    def produce() -> bytes:
        try:
            return json.dumps({"snapshot": _collect(commands, files, cwd)}, default=str).encode()
        except Exception as exc:
            return json.dumps({"error": "%s: %s" % (type(exc).__name__, exc)}).encode()

    raw = _in_child(produce)
    reply = json.loads(raw.decode() or '{"error": "the snapshot process died"}')
    if "error" in reply:
        raise RuntimeError(reply["error"])
    data = reply["snapshot"]
    data["max_rss_floor_kib"] = spawn_floor()
    data["agent_pid"] = os.getpid()
    data["agent_rss_kib"] = _own_rss()
    data["measurement"] = measurement().describe()
    return data


def _collect(commands: List[Tuple[str, str]], files: List[str], cwd: str) -> Dict[str, Any]:
    from benchsage.agent import snapshot  # in the snapshot's child only

    wanted = list(files)
    for command, where in commands:
        wanted.extend(snapshot.command_files(command, where))
    return snapshot.collect(sorted(set(wanted)), cwd)


def _in_child(produce: Any) -> bytes:
    """What `produce()` returns (bytes), computed in a forked child so that whatever it imports
    or allocates never grows the agent; b"" if the child died first."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 0
        try:
            os.close(r)
            view = memoryview(produce())
            while view:
                view = view[os.write(w, view) :]
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    try:
        return read_all(r)
    finally:
        os.close(r)
        os.waitpid(pid, 0)


def _own_rss() -> Optional[int]:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return None
