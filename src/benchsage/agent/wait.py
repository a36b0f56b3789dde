"""Waiting for a trial: wait4 on its exit, its two pipes read into bounded tails, its deadline.

The agent blocks in poll() on the trial's pipes, an fd that becomes readable when the trial
exits (a pidfd, or a SIGCHLD self-pipe where os.pidfd_open is missing or the kernel predates
pidfds) and its own stdin: no threads, no periodic wakeups. A trial past its deadline is killed
with its whole process group.

The self-pipe's handler is installed by prepare_exit_waits(), which the agent calls at start
and run_process before every fork: it is in place before any child can exist, so no child's
SIGCHLD goes unheard.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import time

from benchsage.agent.protocol import CHUNK, ControllerGone

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would add ~0.7 MiB to the agent
    from typing import Any, Optional, Tuple

    from benchsage.agent.protocol import RequestChannel

# After the trial exits, a background grandchild may still hold its pipes and keep writing;
# read what is already there, but never more than this many chunks per stream.
_DRAIN_CHUNKS = 64
_POLLIN = select.POLLIN | select.POLLPRI
_POLLEND = select.POLLHUP | select.POLLERR | select.POLLNVAL

# Set (to anything but "" or "0") in the agent's environment, this makes the agent wait for its
# children through the SIGCHLD self-pipe even where pidfds work: the path that Python 3.8 and
# kernels before 5.3 take, so that it can be tested on any host.
NO_PIDFD_ENV = "BENCHSAGE_AGENT_NO_PIDFD"

_pidfds: Optional[bool] = None  # whether exits are waited for through pidfds; decided once
_chld_wakeup: Optional[int] = None  # the SIGCHLD self-pipe's read end, where pidfds are not used


class Tail:
    """The last `limit` bytes of a stream, in memory bounded by about twice that."""

    __slots__ = ("limit", "buf", "total")

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.buf = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        if not self.limit:
            return
        self.buf += data
        # Trim only once the buffer has doubled, so trimming costs O(1) amortised per byte.
        if len(self.buf) > 2 * self.limit + CHUNK:
            del self.buf[: len(self.buf) - self.limit]

    def result(self) -> Tuple[bytes, int]:
        kept = bytes(self.buf[-self.limit :]) if self.limit else b""
        return kept, self.total - len(kept)


def uses_pidfds() -> bool:
    """Whether this agent waits for its children through pidfds: os.pidfd_open exists (Python
    3.9+), the kernel has it (Linux 5.3+) and NO_PIDFD_ENV does not turn it off."""
    global _pidfds
    if _pidfds is None:
        _pidfds = False
        if hasattr(os, "pidfd_open") and os.environ.get(NO_PIDFD_ENV, "") in ("", "0"):
            try:
                os.close(os.pidfd_open(os.getpid()))
                _pidfds = True
            except OSError:
                pass
    return _pidfds


def prepare_exit_waits() -> None:
    """Before a child can exist: where pidfds are not used, install the SIGCHLD handler and
    its self-pipe (once), and empty the pipe of what exits before this one wrote, so that a
    wake-up means some child exited since."""
    if uses_pidfds():
        return
    if _chld_wakeup is None:
        _install_chld_wakeup()
    else:
        _read_all_nonblocking(_chld_wakeup)


def _install_chld_wakeup() -> None:
    global _chld_wakeup
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    # A full pipe already says "a child exited": the bytes that do not fit are not needed.
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    _chld_wakeup = r


def exit_waiter(pid: int) -> int:
    """An fd that becomes readable when `pid` exits: a pidfd, else -1 and the SIGCHLD
    self-pipe (prepare_exit_waits, before the fork) is what wait_for watches."""
    if uses_pidfds():
        try:
            return os.pidfd_open(pid)
        except OSError:
            pass
    if _chld_wakeup is None:
        _install_chld_wakeup()  # no pidfd for this child after all: the handler comes late
    return -1


def wait_for(
    pid: int,
    pidfd: int,
    out_r: int,
    err_r: int,
    t0: float,
    timeout: Optional[float],
    output_limit: int,
    channel: Optional[RequestChannel],
    report: int = -1,
) -> Tuple[int, Any, float, bool, Tuple[Tail, Tail], Optional[bytes]]:
    """Block until the trial exits or its deadline passes; returns (status, rusage, the
    perf_counter time of its end, whether it timed out, the tails of stdout and stderr, the
    child's report or None). Raises ControllerGone, the trial still running, when `channel`
    closes.

    `report`: the child's report pipe (spawn.py), watched for its hang-up only (the child's
    exec closes it): what it says is read then, and a deadline counts from the exec time it
    gives rather than from `t0`. The output pipes' hang-ups end nothing: the trial's exit does."""
    tails = {out_r: Tail(output_limit), err_r: Tail(output_limit)}
    poller = select.poll()
    exit_fd = pidfd if pidfd >= 0 else _chld_wakeup
    assert exit_fd is not None
    poller.register(exit_fd, select.POLLIN)
    poller.register(out_r, _POLLIN)
    poller.register(err_r, _POLLIN)
    if channel is not None and not channel.closed:
        poller.register(channel.fd, _POLLIN)
    said = None  # type: Optional[bytes]
    if report >= 0:
        poller.register(report, 0)  # POLLHUP and POLLERR only: the child's write does not wake the agent
    open_fds = {out_r, err_r}
    deadline = None if timeout is None else t0 + timeout
    timeout_ms = None  # type: Optional[int]
    timed_out = exited = False
    status, usage, t_end = 0, None, 0.0
    if pidfd < 0:
        # A trial gone before the poll starts has already written its wake-up; it is reaped
        # here all the same, so that a handler installed late (pidfd_open failing for this
        # one child) cannot miss it either.
        got, status, usage = os.wait4(pid, os.WNOHANG)
        exited, t_end = got == pid, time.perf_counter()
    while not exited:
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 0:
                timed_out = True
                break
            timeout_ms = int(left * 1000.0) + 1  # round up: never wake before the deadline
        events = poller.poll(timeout_ms)
        now = time.perf_counter()
        for fd, ev in events:
            if fd == exit_fd:
                if pidfd >= 0:
                    exited = True
                else:
                    _read_all_nonblocking(exit_fd)
                    got, status, usage = os.wait4(pid, os.WNOHANG)
                    exited = got == pid
            elif fd == report:
                poller.unregister(fd)
                said = read_all(fd)
                stamp, bar, _ = said.lstrip(b"!").partition(b"|")
                if bar and deadline is not None:
                    try:
                        deadline = float(stamp) + (timeout or 0.0)
                    except ValueError:
                        pass
            elif channel is not None and fd == channel.fd:
                channel.fill()
                if channel.closed:
                    poller.unregister(fd)
                    raise ControllerGone()
            elif ev & _POLLIN:
                if not _read_into(fd, tails[fd], 1):
                    poller.unregister(fd)
                    open_fds.discard(fd)
            elif ev & _POLLEND:
                poller.unregister(fd)
                open_fds.discard(fd)
        if exited:
            t_end = now
    if timed_out:
        kill_group(pid)
        _, status, usage = os.wait4(pid, 0)
        t_end = time.perf_counter()
    elif pidfd >= 0:
        _, status, usage = os.wait4(pid, 0)
    # Whatever the trial (or a grandchild) wrote before it exited, without waiting for EOF.
    for fd in open_fds:
        _read_into(fd, tails[fd], _DRAIN_CHUNKS)
    return status, usage, t_end, timed_out, (tails[out_r], tails[err_r]), said


def exit_code(status: int) -> int:
    """A wait status as the journal records it: the exit code, or minus the killing signal."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def kill_group(pid: int) -> None:
    """SIGKILL the process group `pid` leads, if it still exists."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def read_all(fd: int) -> bytes:
    """Everything `fd` gives until EOF (a blocking read)."""
    data = b""
    while True:
        try:
            chunk = os.read(fd, 512)
        except InterruptedError:
            continue
        if not chunk:
            return data
        data += chunk


def _read_into(fd: int, tail: Tail, chunks: int) -> bool:
    """Read up to `chunks` chunks without blocking; False when the stream has ended."""
    for _ in range(chunks):
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            return True
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            return False
        if not data:
            return False
        tail.add(data)
        if len(data) < CHUNK:
            return True  # the pipe is empty for now
    return True


def _read_all_nonblocking(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except OSError:
        pass
