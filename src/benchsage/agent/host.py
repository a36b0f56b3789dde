"""The agent's host as the controller asks about it: its boot identity, its environment snapshot
and the floor of a trial's max_rss here.

The snapshot is taken by a helper process forked once per agent (SnapshotHelper): what it
imports (snapshot.py, noise.py and the standard library they use) and caches never grows the
agent, whose resident memory every trial it forks starts with.
"""

from __future__ import annotations

import json
import os

from benchsage.agent.measurement import measurement
from benchsage.agent.spawn import run_process

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
    resolved here, on this host's PATH) and of `files`, and how the agent measures here.

    Taken at a run boundary, so it must be cheap: the helper process that takes it is forked
    once per agent and keeps what cannot change while the agent runs (the modules it imports,
    the OS name, virtualisation, the hashes of unchanged files); each snapshot then costs a
    few reads of /proc and /sys. The trial's cgroups are prepared here too, off the trials'
    critical path."""
    control = measurement()
    control.prepare()
    request = json.dumps({"commands": commands, "files": files, "cwd": cwd}).encode()
    raw = _helper.ask(request)
    reply = json.loads(raw.decode() or '{"error": "the snapshot process died"}')
    if "error" in reply:
        raise RuntimeError(reply["error"])
    data = reply["snapshot"]
    rss = _own_rss()
    data["max_rss_floor_kib"] = _floor(rss)
    data["agent_pid"] = os.getpid()
    data["agent_rss_kib"] = rss
    data["measurement"] = control.describe()
    return data


_floors = {}  # type: Dict[Optional[int], Optional[int]]  # the agent's RSS (KiB) -> spawn_floor() then


def _floor(rss: Optional[int]) -> Optional[int]:
    """spawn_floor(), measured again only when the agent's resident size changed (a trial's
    floor is what the agent holds when it forks)."""
    if rss is None or rss not in _floors:
        _floors.clear()
        _floors[rss] = spawn_floor()
    return _floors[rss]


def _collect(commands: List[Tuple[str, str]], files: List[str], cwd: str) -> Dict[str, Any]:
    from benchsage.agent import snapshot  # in the snapshot helper only

    wanted = list(files)
    for command, where in commands:
        wanted.extend(snapshot.command_files(command, where))
    return snapshot.collect(sorted(set(wanted)), cwd)


_HEADER = 16  # a message's length, in decimal digits, before it on the helper's pipes


class SnapshotHelper:
    """A child of the agent, forked at the first snapshot, that takes the snapshots: what it
    imports (snapshot.py, noise.py and the standard library they use) and caches never grows
    the agent, whose resident memory every trial it forks starts with. It holds no descriptor
    of the agent's but its two pipes, and exits when its request pipe closes (the agent is
    gone, or stop()). A helper that died is forked again at the next snapshot."""

    def __init__(self) -> None:
        self.pid = 0
        self.requests = -1  # the agent writes requests here
        self.replies = -1  # and reads the replies here

    def ask(self, request: bytes) -> bytes:
        """The helper's reply to `request`, or b"" when it died (twice) before replying."""
        for _ in range(2):
            if not self.pid:
                self._start()
            try:
                _write_all(self.requests, b"%0*d" % (_HEADER, len(request)) + request)
                header = _read_exact(self.replies, _HEADER)
                if len(header) == _HEADER:
                    size = int(header)
                    body = _read_exact(self.replies, size)
                    if len(body) == size:
                        return body
            except (OSError, ValueError):
                pass
            self.stop()
        return b""

    def _start(self) -> None:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the helper serves until its request pipe closes
            code = 0
            try:
                _serve_snapshots(req_r, rep_w)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(rep_w)
        self.pid, self.requests, self.replies = pid, req_w, rep_r

    def stop(self) -> None:
        """Close the helper's pipes (it exits) and reap it."""
        if not self.pid:
            return
        for fd in (self.requests, self.replies):
            os.close(fd)
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:  # reaped already (measurement reaps exited children)
            pass
        self.pid, self.requests, self.replies = 0, -1, -1


_helper = SnapshotHelper()


def stop_helper() -> None:
    """At the agent's exit: the snapshot helper exits too."""
    _helper.stop()


def _serve_snapshots(requests: int, replies: int) -> None:  # pragma: no cover - runs in the helper
    """The helper's loop: one snapshot per request, until the request pipe closes."""
    import signal

    if hasattr(signal, "set_wakeup_fd"):
        signal.set_wakeup_fd(-1)  # the agent's SIGCHLD self-pipe is not the helper's
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    keep = {0, 1, 2, requests, replies}
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in keep:
            try:
                os.close(int(name))
            except OSError:
                pass
    while True:
        header = _read_exact(requests, _HEADER)
        if len(header) < _HEADER:
            return
        request = json.loads(_read_exact(requests, int(header)).decode())
        try:
            commands = [(c, w) for c, w in request["commands"]]
            reply = json.dumps({"snapshot": _collect(commands, request["files"], request["cwd"])}, default=str)
        except Exception as exc:
            reply = json.dumps({"error": "%s: %s" % (type(exc).__name__, exc)})
        data = reply.encode()
        _write_all(replies, b"%0*d" % (_HEADER, len(data)) + data)


def _read_exact(fd: int, size: int) -> bytes:
    """`size` bytes from `fd`, or fewer if it ends first."""
    data = b""
    while len(data) < size:
        try:
            chunk = os.read(fd, size - len(data))
        except InterruptedError:
            continue
        if not chunk:
            break
        data += chunk
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _own_rss() -> Optional[int]:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return None
