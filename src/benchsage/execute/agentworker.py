"""A worker whose trials are spawned and measured by an agent on its host (every kind of worker).

It adapts the Worker protocol to an AgentConnection: paths of the spec's folder are mapped to
the worker's `dir` on its host, results come back as ProcessResults, and a lost connection is
re-established with back-off on request (the runner decides when that is allowed).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Sequence

from benchsage.errors import BadReply, WorkerError, WorkerLost, WorkerSetupError
from benchsage.execute import replies
from benchsage.execute.connection import HELLO_TIMEOUT, AgentConnection
from benchsage.execute.replies import Expect
from benchsage.execute.transports.base import Transport
from benchsage.execute.worker import ProcessRequest, ProcessResult

REPLY_MARGIN = 60.0  # seconds past a trial's timeout before a silent agent counts as lost
BACKOFF_FIRST = 0.25
BACKOFF_MAX = 10.0


class AgentWorker:
    """Runs trials and resets through an agent reached by `transport` (the Worker protocol)."""

    def __init__(
        self,
        name: str,
        transport: Transport,
        *,
        python: Sequence[str],
        boot_id_command: str | None = None,
        folder: str | None = None,
        host_dir: str | None = None,
        reconnect_timeout: float = 60.0,
        log: str | None = None,
    ) -> None:
        self.name = name
        self.kind = transport.kind
        self.transport = transport
        self.python = list(python)
        self.boot_id_command = boot_id_command
        self.folder = folder
        self.host_dir = host_dir
        self.reconnect_timeout = reconnect_timeout
        self.log = log
        self.deployed_tree: str | None = None  # the tree id deployed to host_dir and verified (execute/deploy.py)
        self.cpu_latency: int | None = None  # [experiment] cpu_latency: held by every agent this worker starts
        self.hello: dict[str, Any] = {}
        self._conn: AgentConnection | None = None
        self._starting: AgentConnection | None = None  # a connection waiting for its hello
        # Each request's JSON line, made once: a run asks for the same few requests over and over,
        # and encoding one is a good part of what the controller does between two trials.
        self._lines: dict[int, tuple[ProcessRequest, str | None, str | None, bytes, Expect[ProcessResult]]] = {}
        self._lock = threading.Lock()

    # -- connection ----------------------------------------------------------------------

    def connect(self, timeout: float = HELLO_TIMEOUT, stop: threading.Event | None = None) -> dict[str, Any]:
        """Start the agent (if not running) and return its hello. A connection still starting
        is reachable by hang_up() from another thread; with `stop` set, none is started
        (WorkerLost)."""
        if self._conn is not None and self._conn.alive:
            return self.hello
        conn = AgentConnection(self.name, self.transport, self.python, self.log)
        with self._lock:
            if stop is not None and stop.is_set():
                raise WorkerLost(f"worker {self.name}: stopped before connecting")
            self._starting = conn
        hello: dict[str, Any] | None = None
        try:
            hello = conn.start(timeout)
        finally:
            with self._lock:  # never out of hang_up()'s reach: starting, then connected
                self._starting = None
                if hello is not None:
                    self._conn, self.hello = conn, hello
        node = getattr(self.transport, "node", None)
        if node is not None and hello.get("slurm_node") not in (None, node):
            self._conn = None
            conn.close()
            raise WorkerSetupError(f"worker {self.name}: srun ran the agent on {hello.get('slurm_node')!r}, not on node {node!r}")
        if self.cpu_latency is not None:
            self._hold_cpu_latency(conn)
        return hello

    def _hold_cpu_latency(self, conn: AgentConnection) -> None:
        """Have the agent hold the experiment's CPU latency limit for as long as it runs (every
        connection: a rebooted host forgot it). WorkerSetupError when its host refuses."""
        try:
            conn.request({"op": "cpu_latency", "us": self.cpu_latency}, timeout=HELLO_TIMEOUT, expect=replies.CPU_LATENCY)
        except (WorkerLost, BadReply):
            raise
        except WorkerError as exc:
            self._conn = None
            conn.close()
            why = str(exc).partition("could not do 'cpu_latency': ")[2] or str(exc)
            raise WorkerSetupError(f"worker {self.name}: cannot hold [experiment] cpu_latency = {self.cpu_latency} on its host "
                                   f"({why}); it takes root and a kernel with PM QoS there") from None

    def reconnect(self, within: float | None = None, stop: threading.Event | None = None) -> dict[str, Any]:
        """Connect again, retrying with back-off for `within` seconds (default reconnect_timeout).
        Raises WorkerLost naming the last reason when the host does not answer in time, or
        when `stop` is set; configuration problems (WorkerSetupError) and a reply the
        controller cannot accept (BadReply) are raised at once."""
        self.disconnect()
        limit = self.reconnect_timeout if within is None else within
        deadline = time.monotonic() + limit
        delay = BACKOFF_FIRST
        last = "no answer"
        while True:
            left = deadline - time.monotonic()
            try:
                return self.connect(timeout=max(1.0, min(HELLO_TIMEOUT, left)), stop=stop)
            except (WorkerSetupError, BadReply):
                raise
            except WorkerError as exc:
                if stop is not None and stop.is_set():
                    raise WorkerLost(f"worker {self.name}: stopped while reconnecting") from None
                last = str(exc).removeprefix(f"worker {self.name}: ")
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerLost(f"worker {self.name}: did not come back within {limit:g} s ({last})")
            if stop is not None:
                if stop.wait(min(delay, left)):
                    raise WorkerLost(f"worker {self.name}: stopped while reconnecting")
            else:
                time.sleep(min(delay, left))
            delay = min(delay * 2, BACKOFF_MAX)

    def disconnect(self) -> None:
        """Drop the connection without a goodbye (the agent exits when its stdin closes)."""
        if self._conn is not None:
            self._conn.abort()
            self._conn = None

    def hang_up(self) -> None:
        """From another thread: end the connection so that a request blocked on it returns
        (WorkerLost), or a connection being started gives up; the agent kills the trial in
        flight and exits."""
        with self._lock:
            conns = [c for c in (self._conn, self._starting) if c is not None]
        for conn in conns:
            conn.hang_up()

    def close(self) -> None:
        """Say goodbye to the agent and release the transport."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> AgentWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, message: dict[str, Any] | bytes, timeout: float | None = None, expect: Expect[Any] | None = None) -> Any:
        # Connect on first use only: a connection that died is reported (WorkerLost), never
        # silently replaced, so a host that rebooted between two trials cannot go unnoticed.
        if self._conn is None:
            self.connect()
        assert self._conn is not None
        return self._conn.request(message, timeout=timeout, expect=expect)

    def ask(self, message: dict[str, Any] | bytes, timeout: float | None = None, expect: Expect[Any] | None = None) -> Any:
        """One request to the agent (a message, or its JSON line) and its reply read by `expect`
        (execute/replies.py; default: any JSON object). WorkerError for an error reply, WorkerLost
        when the connection ends, BadReply for a reply of the wrong shape."""
        return self._request(message, timeout=timeout, expect=expect)

    # -- paths ---------------------------------------------------------------------------

    def host_path(self, path: str) -> str:
        """Where a path of the spec's folder is on the worker's host (its `dir`)."""
        if self.host_dir is None or self.folder is None:
            return path
        rel = os.path.relpath(path, self.folder)
        if rel == ".":
            return self.host_dir
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):  # outside the folder ("..data" is inside)
            return path
        return os.path.join(self.host_dir, rel)

    # -- the Worker protocol -------------------------------------------------------------

    def run(self, request: ProcessRequest) -> ProcessResult:
        """Run one command on the host and block until it ends or times out. Raises WorkerLost
        when the connection ends first (the agent then kills the command)."""
        reply_timeout = None if request.timeout is None else request.timeout + REPLY_MARGIN
        line, expect = self._line(request)
        result: ProcessResult = self._request(line, timeout=reply_timeout, expect=expect)
        return result

    def _line(self, request: ProcessRequest) -> tuple[bytes, Expect[ProcessResult]]:
        """The request's JSON line and how its reply is read (cached for the request object,
        while the dirs it maps stay)."""
        kept = self._lines.get(id(request))
        if kept is not None and kept[0] is request and kept[1] == self.host_dir and kept[2] == self.folder:
            return kept[3], kept[4]
        message = {
            "op": "run",
            "command": request.command,
            "cwd": self.host_path(request.cwd),
            "env": dict(request.env),
            "timeout": request.timeout,
            "output_limit": request.output_limit,
            "collect": list(request.collect),
            "cpus": list(request.cpus) if request.cpus else None,
            "trial": request.trial,
            **({"aslr": request.aslr} if request.aslr is not None else {}),
            **({"cwd_pad": request.cwd_pad} if request.cwd_pad else {}),
            **({"shell": False} if not request.shell else {}),
        }
        line = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        expect = replies.result(request)
        if len(self._lines) >= 4096:
            self._lines.clear()
        self._lines[id(request)] = (request, self.host_dir, self.folder, line, expect)
        return line, expect

    def snapshot(self, files: Sequence[str], cwd: str, commands: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
        """The host's environment snapshot (taken by the agent there), the sha256 of `files` and
        of what `commands` (command, cwd) execute on that host, and this worker's identity."""
        reply = self._request(
            {
                "op": "snapshot",
                "files": [self.host_path(f) for f in files],
                "cwd": self.host_path(cwd),
                "commands": [[c, self.host_path(w)] for c, w in commands],
                "boot_id": True,
                "boot_id_command": self.boot_id_command,
            },
            timeout=HELLO_TIMEOUT,
            expect=replies.SNAPSHOT,
        )
        snap: dict[str, Any] = reply["snapshot"]
        snap["worker"] = self.name
        snap["worker_kind"] = self.kind
        snap["transport"] = self.transport.describe()
        # The spec's folder on this host: the analysis compares file hashes relative to it.
        snap["dir"] = self.host_path(self.folder or cwd)
        snap["boot_id"] = reply["boot_id"] if "boot_id" in reply else self.boot_id()
        if self.deployed_tree is not None:
            snap["deployed_tree"] = self.deployed_tree
        return snap

    def boot_id(self) -> str | None:
        """The host's boot identity now (the worker's `boot_id` command, else the kernel's)."""
        boot: str | None = self._request({"op": "boot_id", "command": self.boot_id_command}, timeout=HELLO_TIMEOUT,
                                         expect=replies.BOOT_ID)
        return boot
