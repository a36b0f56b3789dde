"""Processes of a fake fleet or cluster: find them in /proc, freeze them, kill them, and start
daemons that belong to nobody here. Shared by fakefleet.py and slurmcluster.py; stdlib only,
Linux only, Python 3.8+.

Zombies count as gone everywhere: a daemon re-parented to an init that does not reap (as in
many containers) stays a zombie, holding no port, no file and no memory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Callable, Dict, Iterable, List, Optional, Set

SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class FleetError(Exception):
    """Something about a fake fleet or cluster went wrong; the message says what to do."""


class Process:
    """What /proc says about one live process. `cmdline` has its NULs turned into spaces and
    a space at each end (daemons that set a process title have spaces there anyway), so
    " -f /x/sshd_config " matches a whole argument either way."""

    __slots__ = ("pid", "ppid", "comm", "cmdline", "environ")

    def __init__(self, pid: int, ppid: int, comm: bytes, cmdline: bytes, environ: Set[bytes]) -> None:
        self.pid, self.ppid, self.comm, self.cmdline, self.environ = pid, ppid, comm, cmdline, environ

    def open_files(self) -> List[str]:
        """The paths of the files the process holds open (sockets and pipes are not paths)."""
        paths = []
        try:
            for fd in os.listdir("/proc/%d/fd" % self.pid):
                try:
                    paths.append(os.readlink("/proc/%d/fd/%s" % (self.pid, fd)))
                except OSError:
                    pass
        except OSError:
            pass
        return paths


def env_entry(var: str, value: str) -> bytes:
    """One entry of /proc/PID/environ, to test membership in Process.environ."""
    return ("%s=%s" % (var, value)).encode()


def process_table() -> Dict[int, Process]:
    """Every process that is not a zombie."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as f:
                stat = f.read()
            fields = stat[stat.rindex(b")") + 2:].split()
            if fields[0] in (b"Z", b"X"):
                continue
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmdline = f.read()
            with open("/proc/%s/environ" % entry, "rb") as f:
                environ = f.read()
        except (OSError, ValueError, IndexError):
            continue
        pid = int(entry)
        table[pid] = Process(pid, int(fields[1]), stat[stat.index(b"(") + 1:stat.rindex(b")")],
                             b" " + cmdline.replace(b"\0", b" ") + b" ", set(environ.split(b"\0")))
    return table


def select(match: Callable[[Process], bool], climb: Optional[bytes] = None) -> Set[int]:
    """Live processes that `match`, with (if `climb` is given) their ancestors whose command
    name starts with `climb`, and all descendants of both; never this process, its ancestors,
    or init."""
    table = process_table()
    found = {pid for pid, p in table.items() if match(p)}
    if climb is not None:
        for pid in list(found):
            parent = table[pid].ppid
            while parent in table and table[parent].comm.startswith(climb) and parent not in found:
                found.add(parent)
                parent = table[parent].ppid
    children: Dict[int, List[int]] = {}
    for pid, p in table.items():
        children.setdefault(p.ppid, []).append(pid)
    todo = list(found)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    pid = os.getpid()
    while pid > 1:  # whoever asks (and what started it) is never part of what it stops
        found.discard(pid)
        pid = table[pid].ppid if pid in table else 0
    found.discard(1)
    return found


def alive(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:][:1] not in (b"Z", b"X")


def send(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def wait_gone(pids: Iterable[int], timeout: float) -> Set[int]:
    """Wait until none of `pids` is alive; return those still alive at the timeout."""
    left = set(pids)
    deadline = time.monotonic() + timeout
    while True:
        left = {pid for pid in left if alive(pid)}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.005)


def kill_all(find: Callable[[], Set[int]], grace: float = 0.0) -> None:
    """Kill every process `find()` returns until it returns none. Each round first freezes
    them (SIGSTOP) until a scan finds no new one, so nothing can fork its way out; then
    SIGTERM with `grace` seconds to exit (the first round, if grace > 0) or SIGKILL."""
    deadline = time.monotonic() + 20
    while True:
        frozen: Set[int] = set()
        found = find()
        while found - frozen:
            for pid in found - frozen:
                send(pid, signal.SIGSTOP)
            frozen |= found
            found = find()
        if not frozen:
            return
        if grace > 0:
            for pid in frozen:
                send(pid, signal.SIGTERM)
            for pid in frozen:
                send(pid, signal.SIGCONT)
            wait_gone(frozen, grace)
            grace = 0.0
            continue
        for pid in frozen:
            send(pid, signal.SIGKILL)
        left = wait_gone(frozen, 5.0)
        if left or time.monotonic() > deadline:
            raise FleetError("processes %s survived SIGKILL" % sorted(left or frozen))


_SPAWN = r"""
import json, os, subprocess, sys
pids = []
for job in json.loads(sys.argv[1]):
    with open(job["log"], "ab") as log:
        pids.append(subprocess.Popen(job["argv"], env=job["env"], cwd=job.get("cwd") or "/",
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     start_new_session=True).pid)
print(json.dumps(pids))
"""


def spawn_detached(jobs: List[dict]) -> List[int]:
    """Start each job ({"argv", "env", "log", optional "cwd"}) in its own session as a
    grandchild: its parent exits at once, so it is nobody's child here and outlives whatever
    started it (a test, a command line, an ssh session about to be killed)."""
    done = subprocess.run([sys.executable, "-c", _SPAWN, json.dumps(jobs)], env={"PATH": SAFE_PATH},
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise FleetError("could not start %s: %s" % (", ".join(j["argv"][0] for j in jobs), done.stderr.strip()))
    return json.loads(done.stdout)


def write_atomic(path: "os.PathLike[str] | str", text: str) -> None:
    tmp = "%s.tmp" % os.fspath(path)
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def read_json(path: "os.PathLike[str] | str") -> dict:
    with open(path) as f:
        return json.load(f)
