"""Run one command the way a measurement harness must, and say what happened.

The controller blocks in poll() on the command's two pipes and a pidfd while the trial runs:
no threads, no periodic wakeups, so benchsage adds no noise of its own to what it measures.
Wall time is taken by the harness; CPU time and peak RSS come from wait4's rusage.

Known limit of max_rss: Linux records, when the spawned shell execs, the peak RSS of the
address space it came from, i.e. this controller's (vfork shares it, fork copies it). So a
trial's max_rss is never below the controller's own peak RSS at spawn time; values at that
floor mean "at most this much", not a measurement.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import subprocess
import time
from typing import Any, Mapping

from benchsage.errors import WorkerError
from benchsage.execute.worker import ProcessRequest, ProcessResult

_SHELL = "/bin/sh"
_CHUNK = 1 << 16  # the default pipe capacity: one read empties a full pipe
# After the shell exits, a background grandchild may still hold the pipes and keep writing;
# read what is already there, but never more than this many chunks per stream.
_DRAIN_CHUNKS = 64
_POLLIN = select.POLLIN | select.POLLPRI
_POLLEND = select.POLLHUP | select.POLLERR | select.POLLNVAL

_devnull: int | None = None  # opened once: the trial's stdin, shared by every trial


def _stdin_fd() -> int:
    global _devnull
    if _devnull is None:
        _devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    return _devnull


class _Tail:
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
        if len(self.buf) > 2 * self.limit + _CHUNK:
            del self.buf[: len(self.buf) - self.limit]

    def result(self) -> tuple[bytes, int]:
        kept = bytes(self.buf[-self.limit :]) if self.limit else b""
        return kept, self.total - len(kept)


def _read_into(fd: int, tail: _Tail, chunks: int) -> bool:
    """Read up to `chunks` chunks without blocking; False when the stream has ended."""
    for _ in range(chunks):
        try:
            data = os.read(fd, _CHUNK)
        except BlockingIOError:
            return True
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            return False
        if not data:
            return False
        tail.add(data)
        if len(data) < _CHUNK:
            return True  # the pipe is empty for now
    return True


def _collect(files: tuple[str, ...], cwd: str) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for name in files:
        try:
            with open(os.path.join(cwd, name), "rb") as f:
                out[name] = f.read()
        except OSError:
            out[name] = None
    return out


def _failed(message: str, started: float) -> ProcessResult:
    return ProcessResult(
        exit_status=None,
        timed_out=False,
        wall_time=0.0,
        user_time=0.0,
        sys_time=0.0,
        max_rss=0,
        started=started,
        ended=time.time(),
        stdout=b"",
        stderr=b"",
        error=message,
    )


def _environment(extra: Mapping[str, str]) -> Mapping[str, str] | None:
    if not extra:
        return None  # inherit this process's environment as is
    env = dict(os.environ)
    env.update(extra)
    return env


def run_process(request: ProcessRequest) -> ProcessResult:
    """Run request.command with /bin/sh -c in its own process group and measure it.

    Never raises for a command that fails or cannot start (ProcessResult.error says why);
    re-raises KeyboardInterrupt/SystemExit only after killing and reaping the trial.
    """
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    started = time.time()
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            [_SHELL, "-c", request.command],
            cwd=request.cwd,
            env=_environment(request.env),
            stdin=_stdin_fd(),
            stdout=out_w,
            stderr=err_w,
            process_group=0,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        return _failed(f"cannot start {request.command!r} in {request.cwd!r}: {exc}", started)
    pid = proc.pid
    pidfd = -1
    try:
        os.close(out_w)
        os.close(err_w)
        pidfd = os.pidfd_open(pid)
        os.set_blocking(out_r, False)
        os.set_blocking(err_r, False)
        status, usage, t_end, timed_out, tails = _wait(request, pid, pidfd, out_r, err_r, t0)
    except BaseException as exc:
        # Interrupted (Ctrl-C, SystemExit from a signal handler) or unable to wait: never
        # leave the trial running behind us.
        _kill_group(pid)
        try:
            os.wait4(pid, 0)
        except ChildProcessError:
            pass
        proc.returncode = -signal.SIGKILL
        if isinstance(exc, OSError):  # pidfd_open needs Linux >= 5.3; poll cannot fail otherwise
            raise WorkerError(f"the local worker cannot wait for a trial: {exc}") from exc
        raise
    finally:
        for fd in (pidfd, out_r, err_r):
            if fd >= 0:
                os.close(fd)
    exit_status = os.waitstatus_to_exitcode(status)
    # Popen would otherwise try to reap this pid again later, maybe someone else's by then.
    proc.returncode = exit_status
    ended = time.time()
    stdout, out_dropped = tails[0].result()
    stderr, err_dropped = tails[1].result()
    return ProcessResult(
        exit_status=exit_status,
        timed_out=timed_out,
        wall_time=t_end - t0,
        user_time=usage.ru_utime,
        sys_time=usage.ru_stime,
        max_rss=usage.ru_maxrss,
        started=started,
        ended=ended,
        stdout=stdout,
        stderr=stderr,
        stdout_dropped=out_dropped,
        stderr_dropped=err_dropped,
        files=_collect(request.collect, request.cwd) if request.collect else {},
    )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait(
    request: ProcessRequest, pid: int, pidfd: int, out_r: int, err_r: int, t0: float
) -> tuple[int, Any, float, bool, tuple[_Tail, _Tail]]:
    """Block until the shell exits or the deadline passes; returns (status, rusage, ...)."""
    tails = {out_r: _Tail(request.output_limit), err_r: _Tail(request.output_limit)}
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(out_r, _POLLIN)
    poller.register(err_r, _POLLIN)
    open_fds = {out_r, err_r}
    deadline = None if request.timeout is None else t0 + request.timeout
    timeout_ms: int | None = None
    timed_out = False
    while True:
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 0:
                timed_out = True
                break
            timeout_ms = int(left * 1000.0) + 1  # round up: never wake before the deadline
        events = poller.poll(timeout_ms)
        now = time.perf_counter()
        exited = False
        for fd, ev in events:
            if fd == pidfd:
                exited = True
            elif ev & _POLLIN:
                if not _read_into(fd, tails[fd], 1):
                    poller.unregister(fd)
                    open_fds.discard(fd)
            elif ev & _POLLEND:
                # Writer gone and nothing left to read.
                poller.unregister(fd)
                open_fds.discard(fd)
        if exited:
            t_end = now
            break
    if timed_out:
        _kill_group(pid)
        _, status, usage = os.wait4(pid, 0)
        t_end = time.perf_counter()
    else:
        _, status, usage = os.wait4(pid, 0)
    # Whatever the shell (or a grandchild) wrote before it exited, without waiting for EOF.
    for fd in open_fds:
        _read_into(fd, tails[fd], _DRAIN_CHUNKS)
    return status, usage, t_end, timed_out, (tails[out_r], tails[err_r])
