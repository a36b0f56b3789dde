"""One connection to an agent: start it through a transport, send its bundle, exchange lines.

The controller blocks in read() on the agent's stdout while a trial runs (the calling thread
sleeps in the kernel). The transport's stderr goes to the worker's log file, whose last lines
explain a failure. A connection that ends without the agent's goodbye is lost, never done. What
the agent says is read as untrusted: each line is capped before it is parsed, and each reply
read through its Expect (execute/replies.py); a bad one is BadReply and ends the connection.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import tempfile
import threading
import time
from typing import IO, Any, Mapping

from benchsage.agent.protocol import MARKER, take_line
from benchsage.errors import BadReply, WorkerError, WorkerLost, WorkerSetupError
from benchsage.execute import replies
from benchsage.execute.bundle import agent_argv, bundle_bytes
from benchsage.execute.replies import HELLO_LIMIT, Expect, Malformed
from benchsage.execute.transports.base import Failure, Transport, last_line

HELLO_TIMEOUT = 60.0  # seconds for the transport to connect and the agent to say hello
_READ = 1 << 16
_MARKER = re.compile(rb'\{\s*"' + re.escape(MARKER.encode()) + rb'"\s*:')  # opens the agent's first message
_BANNER_LIMIT = 1 << 20  # bytes a transport may print before the agent's hello
_OP = re.compile(rb'"op":\s*"([^"]{1,40})"')
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what a terminal acts on, but newlines and tabs


class _TooLong(Exception):
    """A line past its cap: the connection stops reading it."""


class AgentConnection:
    """A running agent on the far side of a transport."""

    def __init__(self, worker: str, transport: Transport, python: list[str], log: str | None = None) -> None:
        self.worker = worker
        self.transport = transport
        self.python = python
        self.log_path = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.hello: dict[str, Any] = {}
        self._buf = bytearray()
        self._log: IO[bytes] | None = None
        self._log_start = 0
        self._lock = threading.Lock()
        self._hung_up = False

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, timeout: float = HELLO_TIMEOUT) -> dict[str, Any]:
        """Start the agent and wait for its hello. Raises WorkerSetupError for configuration
        problems (retrying will not help), BadReply for a hello (or a line before it) the
        controller cannot accept, WorkerError for anything else, WorkerLost when the
        connection was hung up before the hello."""
        argv = self.transport.argv(agent_argv(self.python))
        self._open_log()
        assert self._log is not None
        with self._lock:  # hang_up() from another thread either comes first or sees the process
            if self._hung_up:
                raise WorkerLost(f"worker {self.worker}: stopped before connecting")
            try:
                self.proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=self._log,
                    start_new_session=True,  # Ctrl-C in the terminal reaches the controller only
                    bufsize=0,
                )
            except FileNotFoundError as exc:
                raise WorkerSetupError(f"worker {self.worker}: cannot start {argv[0]!r}: {exc.strerror}") from None
            except OSError as exc:
                raise WorkerError(f"worker {self.worker}: cannot start {argv[0]!r}: {exc.strerror}") from None
        try:
            # The bundle (~130 KB) is larger than a pipe holds, and a transport may read nothing
            # until it has a place to run (srun queued for a node that is down): written from a
            # thread, so that the wait for the hello below keeps its deadline.
            threading.Thread(target=_send, args=(self.proc.stdin, bundle_bytes()), daemon=True).start()
            message = self._greeting(time.monotonic() + timeout, timeout)
        except BaseException:
            self.abort()  # whatever went wrong, the transport does not outlive the attempt
            raise
        try:
            fatal = replies.fatal(message)
            if fatal is None and not isinstance(message.get("hello"), dict):
                self.abort()
                raise BadReply(f"worker {self.worker}: the agent did not say hello (got {json.dumps(message)[:200]})")
            hello = None if fatal is not None else replies.read_hello(message)
        except Malformed as exc:
            self.abort()
            raise BadReply(f"worker {self.worker}: the agent's hello {exc}") from None
        if fatal is not None:
            self.abort()
            raise WorkerSetupError(f"worker {self.worker}: {fatal}; set `python` in its [[worker]] to a newer interpreter")
        assert hello is not None
        self.hello = hello
        return self.hello

    def _greeting(self, deadline: float, timeout: float) -> dict[str, Any]:
        """The agent's first message: the first line that carries the marker. What the transport
        printed before it (a login banner, a shell's start-up output) goes to the worker's log."""
        skipped: list[bytes] = []
        size = 0
        while True:
            try:
                line = self._readline(deadline, HELLO_LIMIT)
            except _TooLong:
                raise BadReply(f"worker {self.worker}: a line of more than {HELLO_LIMIT} bytes where the agent's hello belongs, "
                               f"from {self.transport.describe()}; connection dropped") from None
            if self._hung_up:
                raise WorkerLost(f"worker {self.worker}: stopped while connecting")
            if not line:
                if line is None:
                    reason = f"no hello from the agent within {timeout:g} s on {self.transport.describe()}"
                    if skipped:
                        reason += f" (it printed {_shown(skipped[-1])})"
                    raise WorkerError(f"worker {self.worker}: {reason}")
                failure = self._failure(started=False, printed=skipped[-1] if skipped else None)
                raise (WorkerSetupError if failure.setup else WorkerError)(f"worker {self.worker}: {failure.reason}")
            found = _MARKER.search(line)
            if found is not None:
                try:
                    message = json.loads(line[found.start():])
                except (ValueError, RecursionError):
                    message = None
                if isinstance(message, dict):
                    if line[: found.start()].strip():
                        skipped.append(line[: found.start()] + b"\n")
                    self._keep_skipped(skipped)
                    return message
            skipped.append(line)
            size += len(line)
            if size > _BANNER_LIMIT:
                raise WorkerError(f"worker {self.worker}: {self.transport.describe()} printed more than "
                                  f"{_BANNER_LIMIT // 1024} KiB without starting the agent (last: {_shown(line)})")

    def _keep_skipped(self, skipped: list[bytes]) -> None:
        """Write what the transport printed before the agent's hello into the worker's log."""
        if not skipped or self._log is None:
            return
        try:
            self._log.write(b"--- printed on stdout before the agent started:\n" + b"".join(skipped))
            self._log.flush()
        except (OSError, ValueError):
            pass

    def close(self, timeout: float = 10.0) -> bool:
        """Ask the agent to exit; True when it said goodbye. The transport is reaped either way."""
        said_bye = False
        if self.proc is not None and self.proc.poll() is None:
            try:
                said_bye = self.request({"op": "bye"}, timeout=timeout, expect=replies.BYE)
            except WorkerError:
                said_bye = False
        self.abort(grace=timeout)
        return said_bye

    def abort(self, grace: float = 2.0) -> None:
        """End the connection now (from the thread that reads it): close both pipes (the agent
        kills its trial and exits), killing the transport's process group if it lingers."""
        proc = self.proc
        if proc is None:
            return
        _close(proc.stdout)
        self.hang_up(grace)
        proc.wait()
        self.proc = None
        if self._log is not None and self.log_path is None:
            self._log.close()
            self._log = None

    def hang_up(self, grace: float = 2.0) -> None:
        """Close the agent's stdin only (safe while another thread reads its stdout): the agent
        kills its trial and exits; the transport is killed if it lingers past `grace`. A
        connection still starting gives up: it raises WorkerLost instead of waiting for a hello."""
        with self._lock:
            self._hung_up = True
            proc = self.proc
        if proc is None:
            return
        if not self.hello:
            grace = min(grace, 0.2)  # no agent yet to kill a trial: a transport still connecting goes at once
        _close(proc.stdin)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            # SIGTERM first: srun withdraws a job still waiting in the queue (for a node that is
            # down), which SIGKILL would leave there to take the node when it comes back.
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- requests ------------------------------------------------------------------------

    def request(self, message: Mapping[str, Any] | bytes, timeout: float | None = None, expect: Expect[Any] | None = None) -> Any:
        """Send one request (a message, or its JSON line already encoded) and wait for its reply
        (at most `timeout` seconds, None: no limit), read by `expect` (default: any JSON object).
        Raises WorkerLost when the connection ends or the reply does not come in time,
        WorkerError for the agent's error reply, BadReply for a reply it cannot accept."""
        proc = self.proc
        if proc is None or proc.stdin is None:
            raise WorkerLost(f"worker {self.worker}: not connected")
        if not isinstance(message, bytes):
            if expect is None:
                expect = Expect(str(message.get("op")), _any_object)
            message = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        if expect is None:
            op = _OP.search(message, 0, 256)  # the op opens a request: its line (a piece of a file) is not parsed again
            expect = Expect(op.group(1).decode(errors="replace") if op else "?", _any_object)
        if self._buf:  # one request at a time: a line before the request is one the agent made up
            self.abort()
            raise BadReply(f"worker {self.worker}: the agent sent a line nobody asked for ({_shown(self._buf)}); connection dropped")
        try:
            proc.stdin.write(message)
            proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._lost() from None
        deadline = None if timeout is None else time.monotonic() + timeout
        limit = expect.limit if expect.limit is not None else replies.control_limit(len(message))
        try:
            line = self._readline(deadline, limit)
        except _TooLong:
            self.abort()
            raise BadReply(f"worker {self.worker}: the agent's reply to {expect.op!r} is longer than {limit} bytes; "
                           "connection dropped") from None
        if line is None:  # the deadline passed: a silent agent or a hung connection
            self.abort()
            raise WorkerLost(f"worker {self.worker}: no answer from the agent within {timeout:g} s; connection dropped")
        if not line:
            raise self._lost()
        try:
            reply: dict[str, Any] = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
            self.abort()
            raise BadReply(f"worker {self.worker}: {self.transport.describe()} sent {_shown(line)} where the agent's "
                           f"reply to {expect.op!r} belongs; connection dropped") from None
        if not isinstance(reply, dict):
            self.abort()
            raise BadReply(f"worker {self.worker}: the agent's reply to {expect.op!r} is not a JSON object ({_shown(line)}); "
                           "connection dropped")
        try:
            if "error" in reply:
                why = replies.words(reply["error"], "error")
                raise WorkerError(f"worker {self.worker}: the agent could not do {expect.op!r}: {why}")
            return replies.accept(self.worker, expect, reply)
        except Malformed as exc:
            self.abort()
            raise BadReply(f"worker {self.worker}: the agent's reply to {expect.op!r} {exc}") from None
        except BadReply:
            self.abort()
            raise

    def _readline(self, deadline: float | None, limit: int) -> bytes | None:
        """The next line from the agent; b"" at EOF, None past the deadline; _TooLong once
        `limit` bytes came without a newline (read in bounded pieces: no more is held)."""
        proc = self.proc
        if proc is None or proc.stdout is None:
            return b""
        fd = proc.stdout.fileno()
        searched = 0  # bytes of the buffer known to hold no newline: a long line is searched once
        while True:
            line = take_line(self._buf, searched)
            if line is not None:
                if len(line) > limit + 1:
                    raise _TooLong()
                return line
            searched = len(self._buf)
            if searched > limit:
                raise _TooLong()
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                ready, _, _ = select.select([fd], [], [], left)
                if not ready:
                    return None
            try:
                data = os.read(fd, _READ)
            except InterruptedError:
                continue
            except OSError:
                data = b""
            if not data:
                return b""
            self._buf += data

    # -- failures ------------------------------------------------------------------------

    def _lost(self) -> WorkerLost:
        failure = self._failure(started=True)
        self.abort()
        return WorkerLost(f"worker {self.worker}: {failure.reason}")

    def _failure(self, started: bool, printed: bytes | None = None) -> Failure:
        status = None
        if self.proc is not None:
            try:
                status = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                status = None
        stderr = self.log_tail()
        explained = self.transport.explain(status, stderr)
        if explained is not None:
            return explained
        what = "the connection to the agent ended" if started else "the agent did not start"
        detail = last_line(stderr) or (f"exit status {status}" if status is not None else "no output")
        if printed is not None:
            detail += f"; it printed {_shown(printed)} instead"
        return Failure(f"{what} on {self.transport.describe()} ({detail})")

    def _open_log(self) -> None:
        if self._log is None:
            if self.log_path is not None:
                os.makedirs(os.path.dirname(self.log_path) or ".", exist_ok=True)
                self._log = open(self.log_path, "a+b")  # readable too: log_tail explains failures
            else:
                self._log = tempfile.TemporaryFile()
        self._log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} connecting: {self.transport.describe()}\n".encode())
        self._log.flush()
        self._log_start = self._log.tell()

    def log_tail(self, limit: int = 4096) -> str:
        """What the transport wrote to stderr since this connection started (its last bytes),
        control characters but newlines and tabs written as escapes: its last line goes into
        messages, and what a host prints must not act on the user's terminal."""
        if self._log is None:
            return ""
        try:
            fd = self._log.fileno()
            end = os.fstat(fd).st_size
            start = max(self._log_start, end - limit)
            text = os.pread(fd, end - start, start).decode(errors="replace")
        except OSError:
            return ""
        return _CONTROL.sub(lambda c: c.group().encode("unicode_escape").decode("ascii"), text)


def _shown(line: bytes) -> str:
    """A line the transport printed, for a one-line message."""
    return repr(line.decode(errors="replace").strip()[:120])


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _send(stream: IO[bytes] | None, data: bytes) -> None:
    try:
        assert stream is not None
        view = memoryview(data)
        while view:
            view = view[stream.write(view) or 0 :]
    except (OSError, ValueError):
        pass  # the transport died, or the connection was ended: its exit status and stderr say why


def _close(stream: IO[bytes] | None) -> None:
    try:
        if stream is not None:
            stream.close()
    except OSError:
        pass


def _any_object(reply: dict[str, Any]) -> dict[str, Any]:
    return reply
