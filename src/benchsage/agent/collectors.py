"""Collectors: what the agent measures on its host during a trial's window, for a trial that
runs on another host (a server's energy while a client drives load at it).

The controller opens the window on the collectors' host right before the test's host spawns
the trial and closes it right after the trial exits. Each collector reads its host at the
open and at the close: `energy` (J of the CPU packages, RAPL, close - open), `cpu` (s of CPU
time the whole host spent, all CPUs, from /proc/stat, close - open) and `command` (the last
number a command prints, at the close, or close - open with `delta`). The window's times are
this host's clock. Stdlib only, Python 3.8+: this module travels with the agent.
"""

from __future__ import annotations

import os
import re
import time

from benchsage.agent import energy
from benchsage.agent.measurement import POWERCAP_ENV
from benchsage.agent.spawn import run_process
from benchsage.agent.sysfs import PROC_STAT, host_cpu_seconds

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would grow the agent
    from typing import Any, Dict, List, Mapping, Optional, Tuple

_NUMBER = re.compile(rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class Unreadable(Exception):
    """A collector could not read its value: one line saying why."""


def last_number(command: str, cwd: str, env: Mapping[str, str], timeout: float) -> float:
    """The last number `command` prints on stdout; Unreadable naming what it printed else."""
    result = run_process(command, cwd, env, timeout, 65536)
    out = result["stdout"]
    if result.get("error"):
        raise Unreadable("command `%s` could not start: %s" % (command, result["error"]))
    if result["timed_out"]:
        raise Unreadable("command `%s` did not finish within %g s" % (command, timeout))
    if result["exit_status"] != 0:
        err = result["stderr"].decode(errors="replace").strip().splitlines()
        raise Unreadable("command `%s` exited with status %s%s" % (command, result["exit_status"], ": " + err[-1][:200] if err else ""))
    numbers = _NUMBER.findall(out)
    if not numbers:
        lines = out.decode(errors="replace").strip().splitlines()
        shown = repr(lines[-1][:80]) if lines else "nothing"
        raise Unreadable("command `%s` printed no number (its last line: %s)" % (command, shown))
    return float(numbers[-1])


class Window:
    """The collectors of one host, read at a window's open and close."""

    def __init__(self) -> None:
        self._rapl = None  # type: Optional[energy.Rapl]
        self._open = {}  # type: Dict[str, Any]  # collector -> its reading at the open
        self._problems = {}  # type: Dict[str, str]

    def _energy(self) -> Tuple[int, ...]:
        if self._rapl is None:
            self._rapl = energy.Rapl(os.environ.get(POWERCAP_ENV) or energy.POWERCAP)
        try:
            return self._rapl.read()
        except energy.EnergyError as exc:
            raise Unreadable(str(exc)) from None

    def _read(self, c: Mapping[str, Any]) -> Any:
        kind = c["kind"]
        if kind == "energy":
            return self._energy()
        if kind == "cpu":
            try:
                return host_cpu_seconds()
            except (OSError, ValueError) as exc:
                raise Unreadable("cannot read %s: %s" % (PROC_STAT, exc)) from None
        if kind == "command":
            return last_number(c["command"], c.get("cwd") or "/", c.get("env") or {}, float(c.get("timeout") or 10))
        raise Unreadable("unknown collector kind %r" % (kind,))

    def open(self, collectors: List[Mapping[str, Any]]) -> Dict[str, Any]:
        """Read every collector that needs a reading at the open; the open's time (this host's
        clock) is taken after the readings, the nearest moment to the trial's spawn."""
        self._open, self._problems = {}, {}
        for c in collectors:
            if c["kind"] == "command" and not c.get("delta"):
                continue
            try:
                self._open[c["name"]] = self._read(c)
            except Unreadable as exc:
                self._problems[c["name"]] = str(exc)
        return {"time": time.time()}

    def close(self, collectors: List[Mapping[str, Any]]) -> Dict[str, Any]:
        """The window's values (name -> number) and the collectors that have none (name ->
        why); the close's time is taken before the readings."""
        now = time.time()
        values, problems = {}, dict(self._problems)  # type: Dict[str, float], Dict[str, str]
        for c in collectors:
            name = c["name"]
            if name in problems:
                continue
            try:
                reading = self._read(c)
            except Unreadable as exc:
                problems[name] = str(exc)
                continue
            if c["kind"] == "energy":
                assert self._rapl is not None
                value = self._rapl.joules(self._open[name], reading)
            elif c["kind"] == "cpu" or c.get("delta"):
                value = reading - self._open[name]
            else:
                value = reading
            if value - value == 0:
                values[name] = value
            else:  # printed as 1e999: the controller takes finite numbers only
                problems[name] = "the value is not a finite number (%r)" % (value,)
        self._open = {}
        return {"time": now, "values": values, "problems": problems}
