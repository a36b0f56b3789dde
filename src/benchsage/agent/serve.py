"""The agent's main loop: hello, then one request at a time until goodbye or the controller goes.

It exits, killing the trial in flight, as soon as its stdin closes (the controller, or the
connection to it, is gone). `python -m benchsage.agent.serve` serves on stdin/stdout.
"""

from __future__ import annotations

import json
import os
import signal
import time

from benchsage.agent import measurement, protocol
from benchsage.agent.cpus import CPU_LATENCY_DEVICE, hold_cpu_latency
from benchsage.agent.host import boot_id, stop_helper, take_snapshot
from benchsage.agent.protocol import ControllerGone, RequestChannel
from benchsage.agent.spawn import forget_programs, run_process
from benchsage.agent.wait import prepare_exit_waits
from benchsage.vocabulary import DEFAULT_OUTPUT_LIMIT

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would add ~0.7 MiB to the agent
    from typing import Any, Dict, Mapping, Optional, Tuple


class Agent:
    """Serves requests from `channel`, writing one reply line each to `out_fd`."""

    def __init__(self, channel: RequestChannel, out_fd: int) -> None:
        self.channel = channel
        self.out_fd = out_fd
        self.window = None  # type: Any  # collectors.Window, made at the first window
        self.deployer = None  # type: Any  # deploy.Deployer, made at the first deploy request
        # The environment trials start from, decoded once (os.environ decodes every variable
        # each time it is copied: ~25 us between two trials); the agent never changes its own.
        self.environ = dict(os.environ)
        # Trials' requests by their line, decoded once: a run sends the same few over and over
        # (read only; spawn.py keeps each one's environment under the same line).
        self.trials = {}  # type: Dict[bytes, Any]

    def handle(self, request: Mapping[str, Any], line: Optional[bytes] = None) -> Tuple[Dict[str, Any], bool]:
        """(reply, keep serving); `line`: the request as it came (a trial's is kept, see serve())."""
        op = request.get("op")
        if op in ("snapshot", "deploy") or (op == "run" and not request.get("trial")):
            forget_programs()  # a reset, a run boundary, a deploy: programs may have come or gone
        if op == "run":
            result = run_process(
                request["command"],
                request["cwd"],
                request.get("env") or {},
                request.get("timeout"),
                int(request.get("output_limit", DEFAULT_OUTPUT_LIMIT)),
                tuple(request.get("collect") or ()),
                channel=self.channel,
                cpus=request.get("cpus"),
                trial=bool(request.get("trial")),
                aslr=request.get("aslr"),
                cwd_pad=int(request.get("cwd_pad") or 0),
                shell=request.get("shell", True) is not False,
                environ=self.environ,
                key=line if request.get("trial") else None,
            )
            return {"result": protocol.encode_result(result)}, True
        if op == "boot_id":
            return {"boot_id": boot_id(request.get("command"))}, True
        if op == "snapshot":
            commands = [(c, w) for c, w in request.get("commands") or ()]
            reply = {"snapshot": take_snapshot(commands, list(request.get("files") or ()), request.get("cwd") or "/")}
            if request.get("boot_id"):  # the boot identity with it: one round trip per run, not two
                reply["boot_id"] = boot_id(request.get("boot_id_command"))
            return reply, True
        if op == "window":  # a trial's window on this host: its collectors read at the open and the close
            if self.window is None:
                from benchsage.agent.collectors import Window  # only on hosts with collectors

                self.window = Window()
            collectors = list(request.get("collectors") or ())
            return (self.window.open(collectors) if request.get("phase") == "open" else self.window.close(collectors)), True
        if op == "deploy":  # the experiment's files into the worker's dir (execute/deploy.py)
            if self.deployer is None:
                from benchsage.agent.deploy import Deployer  # only on hosts that are deployed to

                self.deployer = Deployer()
            return self.deployer.handle(request), True
        if op == "cpu_latency":  # held for as long as this agent runs (the experiment's [experiment] cpu_latency)
            try:
                hold_cpu_latency(int(request["us"]))
            except OSError as exc:
                return protocol.error("%s: %s" % (exc.filename or CPU_LATENCY_DEVICE, exc.strerror)), True
            return {"cpu_latency": int(request["us"])}, True
        if op == "ping":
            return {"pong": time.time()}, True
        if op == "bye":
            return protocol.GOODBYE, False
        return protocol.error("unknown request %r" % (op,)), True

    def serve(self) -> None:
        protocol.send(self.out_fd, protocol.hello(boot_id(), measurement.measurement().describe()))
        while True:
            line = self.channel.readline()
            if line is None:
                return  # the controller is gone
            request = self.trials.get(line)
            if request is None:
                try:
                    request = json.loads(line)
                except ValueError:
                    protocol.send(self.out_fd, protocol.error("not a JSON request: %r" % line[:200]))
                    continue
                if isinstance(request, dict) and request.get("op") == "run" and request.get("trial"):
                    if len(self.trials) >= 256:
                        self.trials.clear()
                    self.trials[line] = request
            try:
                reply, more = self.handle(request, line)
            except ControllerGone:
                return
            except Exception as exc:  # a bug or a bad request: say so, keep serving
                reply, more = protocol.error("%s: %s" % (type(exc).__name__, exc)), True
            protocol.send(self.out_fd, reply)
            if not more:
                return
            measurement.measurement().idle()  # the cgroup work between trials, while the controller journals


def main() -> None:
    """Serve on stdin/stdout. The protocol fd is moved off 1 so stray prints cannot corrupt it."""
    out_fd = os.dup(1)
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the controller decides when to stop
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    prepare_exit_waits()  # before the agent has any child: no child's exit can go unheard
    try:
        Agent(RequestChannel(0), out_fd).serve()
    finally:
        stop_helper()
        measurement.close()


if __name__ == "__main__":  # pragma: no cover - `python -m benchsage.agent.serve` serves on stdin/stdout
    main()
