"""The cgroup file system as the agent uses it: small raw reads and writes of cgroup files (the
agent makes them around every trial), the folders' processes and trees, and the sweep of
folders left by agents that died. Stdlib only and Python 3.8+: this module travels with the agent.
"""

from __future__ import annotations

import errno
import os
import signal
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would grow the agent, and every trial it forks
    from typing import Iterator, List, Optional, Set, Tuple

PREFIX = "benchsage-"


def read_bytes(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def write_bytes(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read_text(path: str) -> str:
    try:
        return read_bytes(path).decode()
    except OSError:
        return ""


def pids_in(folder: str) -> List[int]:
    """The processes of one cgroup; none when it is gone, or going: a cgroup removed while its
    file is read makes the read fail with ENODEV (another agent sweeping the same dead folder)."""
    try:
        fd = os.open(os.path.join(folder, "cgroup.procs"), os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = b""
            while True:  # a long list comes in pieces
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENODEV):
            return []
        raise
    return [int(x) for x in data.split()]


def tree(path: str) -> Iterator[str]:
    """`path` and the cgroups below it, children before parents. Cheap when there are none:
    a cgroup folder's link count is 2 plus its subfolders."""
    try:
        if os.stat(path).st_nlink <= 2:
            yield path
            return
        entries = list(os.scandir(path))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield from tree(entry.path)
    yield path


def kill_all_of(pids: Set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def freeze(state_file: str, frozen: bool) -> bool:
    """v1 freezer: freeze (waiting up to 1 s for FROZEN) or thaw. False if it cannot."""
    try:
        write_bytes(state_file, b"FROZEN" if frozen else b"THAWED")
        if not frozen:
            return True
        deadline = time.monotonic() + 1.0
        while read_bytes(state_file).strip() != b"FROZEN" and time.monotonic() < deadline:
            time.sleep(0.0005)
        return True
    except OSError:
        return False


def enable_memory(folder: str) -> None:
    """v2: give the memory controller to `folder`'s children, when it has it at all."""
    if "memory" in read_text(os.path.join(folder, "cgroup.controllers")).split() and \
            "memory" not in read_text(os.path.join(folder, "cgroup.subtree_control")).split():
        write_bytes(os.path.join(folder, "cgroup.subtree_control"), b"+memory")


def disable_memory(folder: str) -> None:
    try:
        if "memory" in read_text(os.path.join(folder, "cgroup.subtree_control")).split():
            write_bytes(os.path.join(folder, "cgroup.subtree_control"), b"-memory")
    except OSError:
        pass


def mkdir_unique(parent: str, name: str) -> str:
    path = os.path.join(parent, name)
    suffix = 1
    while True:
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            suffix += 1
            path = os.path.join(parent, "%s-%d" % (name, suffix))




def rmdirs(paths: List[str]) -> None:
    for path in paths:
        try:
            os.rmdir(path)
        except OSError:
            pass


def remove_tree(path: str, timeout: float = 1.0) -> Optional[str]:
    """rmdir `path` and its sub-cgroups, children first, retrying while processes finish exiting.
    None when gone, else why not."""
    deadline = time.monotonic() + timeout
    delay = 0.0001
    while True:
        failure = None
        for folder in list(tree(path)):
            try:
                os.rmdir(folder)
            except FileNotFoundError:
                pass
            except OSError as exc:
                failure = exc
        if failure is None:
            return None
        if failure.errno != errno.EBUSY or time.monotonic() > deadline:
            return "cannot remove cgroup %s: %s" % (path, failure.strerror)
        time.sleep(delay)
        delay = min(delay * 2, 0.01)


def own_name() -> str:
    """The agent's folder name: benchsage-<pid>-t<start time>-n<pid namespace>, so that another
    agent can tell whether it still runs (_sweep_stale)."""
    return "%s%d-t%d-n%d" % (PREFIX, os.getpid(), start_time(os.getpid()) or 0, pid_namespace())


def folder_owner(name: str) -> Optional[Tuple[int, int, int]]:
    """(pid, start time, pid namespace) of the agent a folder name says made it, or None for
    names that do not say (a probe's, or of an agent before they said it)."""
    if not name.startswith(PREFIX):
        return None
    words = name[len(PREFIX):].split("-")
    if len(words) < 3 or not words[0].isdigit() or words[1][:1] != "t" or words[2][:1] != "n" \
            or not words[1][1:].isdigit() or not words[2][1:].isdigit():
        return None
    return int(words[0]), int(words[1][1:]), int(words[2][1:])


def start_time(pid: int) -> Optional[int]:
    """When `pid` started, in clock ticks since boot (/proc/PID/stat, field 22); None if it
    does not run (here)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return None
    try:
        fields = stat[stat.rindex(b")") + 2:].split()  # the name in parentheses may hold anything
        return int(fields[19])  # fields 3, 4, ... of stat(5): field 22 is the 20th
    except (ValueError, IndexError):
        return None


def pid_namespace() -> int:
    """The inode of this process's PID namespace (0: unknown). A pid means a process only
    within one namespace: another agent's, on the same host, may be in another."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def sweep_stale(parent: str) -> None:
    """Remove the folders of agents that died without closing, killing what their trials left
    running. An agent is known dead only when it was in this PID namespace and its pid now runs
    no process, or one started at another time (the pid was reused). The folders of agents in
    another namespace (another container), or of names that do not say, are left alone: their
    agent may be running, and its trials with it."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    here = pid_namespace()
    for name in names:
        owner = folder_owner(name)
        if owner is None or not here or owner[2] != here:
            continue
        pid, started, _ = owner
        now = start_time(pid)
        if not started or now == started or (now is None and alive(pid)):
            continue  # running, or cannot be told apart from a process that does
        folder = os.path.join(parent, name)
        try:
            for sub in list(tree(folder)):
                kill_all_of(set(pids_in(sub)))
            remove_tree(folder)
        except OSError:
            continue  # best effort: another agent may be removing it at the same time


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
