"""A worker made of several hosts in named roles: a service's server and the client that drives
load at it, say. Each role's host has its own transport and agent (an AgentWorker named
"pair1/server"); the group is the unit of the plan, one worker of the fleet.

A request runs on its role's host (the tests' role by default; EVERY_ROLE: on each host in
declared order, as a reset or a factor's setup without a role does). A trial is bracketed by
its collectors' windows: the collectors' agents open the window right before the test's agent
spawns the trial and close it right after the trial exits, one round trip each way, off the
trial's own clock (its wall time is measured by the test's agent alone). Each run measures the
clock offset of every role's host against the tests' host, as NTP's clock filter does: several
request/response round trips, the one with the smallest delay kept.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any, Callable, Sequence

from benchsage.errors import WorkerError
from benchsage.execute.agentworker import AgentWorker
from benchsage.execute.connection import HELLO_TIMEOUT
from benchsage.execute.replies import PONG
from benchsage.execute.replies import window as windows
from benchsage.execute.worker import EVERY_ROLE, ProcessRequest, ProcessResult
from benchsage.spec import CollectorSpec, Spec

CLOCK_SAMPLES = 8  # round trips per host and run; the one with the smallest delay is kept


class GroupWorker:
    """The Worker protocol over the hosts of a group, one AgentWorker per role."""

    def __init__(self, name: str, members: Sequence[tuple[str, AgentWorker]], spec: Spec) -> None:
        self.name = name
        self.kind = "group"
        self.members = dict(members)
        self.roles = tuple(role for role, _ in members)
        used = [t.role for t in spec.tests if t.role is not None]
        self.test_role = used[0] if used else self.roles[0]
        self.reconnect_timeout = max(m.reconnect_timeout for m in self.members.values())
        self._collectors = {role: [_collector(c, self.members[role]) for c in spec.collectors if c.role == role]
                            for role in self.roles}
        self._window_timeout = HELLO_TIMEOUT + sum(2 * c.timeout for c in spec.collectors)
        self._commands = _role_commands(spec, self.roles, self.test_role)
        self._boots: dict[str, str | None] = {}

    @property
    def hello(self) -> dict[str, Any]:
        """The hello of the tests' host (its CPUs are the ones a test may be pinned to)."""
        return self.members[self.test_role].hello

    def member(self, role: str | None) -> AgentWorker:
        return self.members[role or self.test_role]

    # -- connection: every host of the group ---------------------------------------------

    def connect(self, timeout: float = HELLO_TIMEOUT, stop: threading.Event | None = None) -> dict[str, Any]:
        _each(self.members.values(), lambda m: m.connect(timeout, stop))
        return self.hello

    def reconnect(self, within: float | None = None, stop: threading.Event | None = None) -> dict[str, Any]:
        _each(self.members.values(), lambda m: m.reconnect(within, stop))
        return self.hello

    def disconnect(self) -> None:
        for m in self.members.values():
            m.disconnect()

    def hang_up(self) -> None:
        _each(self.members.values(), lambda m: m.hang_up())

    def close(self) -> None:
        errors = []
        for m in self.members.values():
            try:
                m.close()
            except WorkerError as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    # -- the Worker protocol -------------------------------------------------------------

    def run(self, request: ProcessRequest) -> ProcessResult:
        if request.role == EVERY_ROLE:
            result = None
            for role in self.roles:
                result = self.members[role].run(request)
                if not result.ok:
                    break
            assert result is not None
            return result
        role = request.role or self.test_role
        if not request.trial:
            return self.member(role).run(request)
        opened = self._windows("open")
        result = self.member(role).run(request)
        closed = self._windows("close")
        collected: dict[str, float] = {}
        uncollected: dict[str, str] = {}
        hosts: dict[str, Any] = {}
        for r in self.roles:
            host: dict[str, Any] = {"boot_id": self._boots.get(r)}
            if r == role:
                host.update(started=result.started, ended=result.ended)
            if r in opened:
                host.update(open=opened[r]["time"], close=closed[r]["time"])
                collected.update(closed[r].get("values") or {})
                uncollected.update(closed[r].get("problems") or {})
            hosts[r] = host
        return dataclasses.replace(result, collected=collected, uncollected=uncollected, hosts=hosts)

    def _windows(self, phase: str) -> dict[str, dict[str, Any]]:
        """Open or close the window on every host with collectors (at once when there are
        several): each host's reply, by role."""
        roles = [r for r in self.roles if self._collectors[r]]
        replies: dict[str, dict[str, Any]] = {}

        def one(role: str) -> None:
            collectors = self._collectors[role]
            replies[role] = self.members[role]._request({"op": "window", "phase": phase, "collectors": collectors},
                                                        timeout=self._window_timeout,
                                                        expect=windows(phase, [c["name"] for c in collectors]))

        _each(roles, one)
        return replies

    def snapshot(self, files: Sequence[str], cwd: str, commands: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
        """The snapshot of every role's host (each with the sha256 of what runs there: its
        tests, reset steps, factor setups and collector commands); the group's is the tests'
        host's, with every role's under "roles" and the measured clock offsets under "clocks"."""
        snaps: dict[str, dict[str, Any]] = {}
        for role in self.roles:
            snaps[role] = self.members[role].snapshot(files, cwd, self._commands[role])
            snaps[role]["role"] = role
            self._boots[role] = snaps[role].get("boot_id")
        group = dict(snaps[self.test_role])
        group.update(worker=self.name, worker_kind=self.kind, roles=snaps, clocks=self.clocks())
        return group

    def boot_id(self) -> str | None:
        return self.member(None).boot_id()

    def clocks(self) -> dict[str, dict[str, float]]:
        """Each role's host's clock minus the tests' host's clock (s), and the bound of the
        error (s): half the round trips' delays of the best samples, summed."""
        best = {role: _clock(self.members[role]) for role in self.roles}
        ref_offset, ref_bound = best[self.test_role]
        return {role: {"offset": offset - ref_offset, "bound": bound + ref_bound}
                for role, (offset, bound) in best.items() if role != self.test_role}


def _clock(member: AgentWorker) -> tuple[float, float]:
    """(offset of the host's clock against this one, half the round trip): the sample with the
    smallest delay of CLOCK_SAMPLES ping round trips."""
    samples = []
    for _ in range(CLOCK_SAMPLES):
        t0 = time.time()
        pong: float = member._request({"op": "ping"}, timeout=HELLO_TIMEOUT, expect=PONG)
        t1 = time.time()
        samples.append((t1 - t0, pong - (t0 + t1) / 2))
    delay, offset = min(samples)
    return offset, delay / 2


def _collector(c: CollectorSpec, member: AgentWorker) -> dict[str, Any]:
    """A collector as its host's agent reads it (paths mapped to that host's `dir`)."""
    return {"name": c.name, "kind": c.kind, "command": c.command, "delta": c.delta, "cwd": member.host_path(c.cwd),
            "env": dict(c.env), "timeout": c.timeout}


def _role_commands(spec: Spec, roles: Sequence[str], test_role: str) -> dict[str, list[tuple[str, str]]]:
    """What runs on each role's host, for its snapshot to hash the files it executes."""
    out: dict[str, list[tuple[str, str]]] = {role: [] for role in roles}
    for t in spec.tests:
        out[t.role or test_role].append((t.command, t.cwd))
    for step in spec.reset.steps if spec.reset else ():
        if step.kind == "command":
            for role in ([step.role] if step.role else roles):
                out[role].append((step.command, step.cwd))
    for c in spec.collectors:
        if c.command:
            out[c.role].append((c.command, c.cwd))
    return out


def _each(items: Any, action: Callable[[Any], Any]) -> None:
    """`action` on every item, in parallel threads when there are several; the first error
    (in the items' order) is raised once all are done."""
    items = list(items)
    if len(items) == 1:
        action(items[0])
        return
    errors: dict[int, BaseException] = {}

    def run(i: int, item: Any) -> None:
        try:
            action(item)
        except BaseException as exc:  # noqa: BLE001 - raised below, in the caller's thread
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i, item), daemon=True) for i, item in enumerate(items)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[min(errors)]
