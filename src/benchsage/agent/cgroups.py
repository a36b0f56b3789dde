"""A cgroup per trial: the peak memory and CPU time of the trial's whole process tree, and its leftovers.

As BenchExec does (Beyer et al., STTT 2019), the agent puts each trial in a cgroup of its own
where the host allows it (cgroup v2: a delegated subtree, or the root for root; cgroup v1:
writable memory and cpuacct hierarchies), reads what the kernel accounted to it, and kills
whatever the trial left running. Stdlib only and Python 3.8+: this module travels with the agent.

Use (the agent; a CgroupError at any step means: fall back to no cgroups, say so once):

    support = probe()                      # once, at start; support.reason for the snapshot
    cgroups = Cgroups(support)             # if support.method
    trial = cgroups.trial()                # before fork
    ...fork; in the child: trial.join(); exec...
    ...wait4 the child...
    leftovers = trial.kill_all()           # processes the trial left running, now dead
    usage = trial.read()                   # peak_memory (KiB), cpu_time (s): final
    trial.remove()
    ...
    cgroups.close()                        # at exit

What the numbers mean (precisely):

peak_memory (KiB): the largest amount of memory charged to the trial's cgroup (and any cgroup
the trial made under it) at any moment of the trial: v1 memory.max_usage_in_bytes, v2
memory.peak. Charged: anonymous memory, tmpfs/shm pages, page cache, and the kernel memory
the kernel accounts to cgroups (page tables, stacks, pipe and socket buffers, slab). Not charged:
swap (a page counts while it is resident), and pages charged before the process joined — at
fork the child shares the agent's pages, which stay charged to the agent (v1 leaves
memory.move_charge_at_immigrate at 0; v2 never moves charges) and vanish at exec. A file page
is charged to the cgroup of the process that first brings it into memory: files already in the
page cache (the shell, libc, input an earlier trial read) count for nothing, files this trial
reads or writes first count in full and stay charged after its processes exit. So
peak_memory of a trial that reads a large file depends on whether the file was cached — an order
effect worth knowing about.
It is an upper bound of what the trial's processes held, above it by less than about 1.5 MiB:
the kernel charges in per-CPU batches of up to 64 pages (an empty trial reads about 256 KiB),
and a recycled v1 cgroup (see Cgroups) starts with what earlier trials left charged to it, at
most RECYCLE_BYTES. Differences below a megabyte are noise.

cpu_time (s): user + system CPU time of every process while it was in the cgroup, including
processes that exited and were never waited for (v1 cpuacct.usage, v2 cpu.stat usage_usec),
counted until the moment of read(): read after kill_all() and the number is final.
"""

from __future__ import annotations

import errno
import os
import time
from collections import namedtuple

from benchsage.agent import cgroupfs as fs

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would grow the agent, and every trial it forks
    from typing import Dict, List, Optional, Set, Tuple, Union

V1 = "cgroup v1"
V2 = "cgroup v2"
PREFIX = fs.PREFIX
PROC_SELF_CGROUP = "/proc/self/cgroup"

_ENABLE_V1 = (
    "run the agent as root, or create a cgroup for its user in the memory and cpuacct hierarchies "
    "(cgcreate -a USER -t USER -g memory,cpuacct:benchsage) and start it there (cgexec -g memory,cpuacct:benchsage ...)"
)
_ENABLE_V2 = "start the agent with `systemd-run --user --scope -p Delegate=yes ...`, or run it as root"
_MEMORY_PEAK_KERNEL = (5, 19)  # memory.peak appeared in Linux 5.19


class CgroupError(Exception):
    """A cgroup operation failed (create, read, kill, remove): the agent falls back to measuring
    without cgroups and says so once. str() is one line; `errno` is the OS error's, if any."""

    def __init__(self, message: str, errno_: Optional[int] = None) -> None:
        super().__init__(message)
        self.errno = errno_


class Support(namedtuple("Support", "method reason parents")):
    """Which cgroup method the host allows: `method` is "cgroup v2", "cgroup v1" or None;
    `reason` one line (the method and where, and why not v2 when v1 is used; or why none and
    what would enable it); `parents` the (controller, directory) pairs under which Cgroups
    makes its own folder ("unified" for v2; "memory", "cpuacct", optional "freezer" for v1)."""

    __slots__ = ()

    @property
    def available(self) -> bool:
        return self.method is not None


class Usage(namedtuple("Usage", "peak_memory cpu_time")):
    """What a trial cgroup accounted: peak_memory in KiB (None without a memory controller) and
    cpu_time in seconds. See the module docstring for exactly what each counts."""

    __slots__ = ()


# --------------------------------------------------------------------------------------------
# Probing


def own_cgroups(text: str) -> Dict[str, str]:
    """/proc/self/cgroup as {controller: path}; the v2 hierarchy's line ("0::/path") under ""."""
    out = {}  # type: Dict[str, str]
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(","):
            out[controller] = parts[2]
    return out


def probe(root: str = "/sys/fs/cgroup", proc_cgroup: str = PROC_SELF_CGROUP) -> Support:
    """Which method this process can use to put trials in cgroups of their own, tried for real.

    cgroup v2 first: the unified hierarchy at `root` (pure v2) or `root`/unified (hybrid), with
    the memory controller and memory.peak (Linux 5.19+). Delegation is respected: the agent's own
    cgroup's subtree when it is writable and the agent is alone in it (it then moves into a leaf
    of it, because v2 lets no cgroup with processes give controllers to its children), else the
    hierarchy's root when running as root. Then v1: the agent's own cgroups in the memory and
    cpuacct hierarchies under `root` (root/memory, root/cpuacct, as mounted by systemd and
    cgroupfs-mount), plus freezer when writable (kills without fork races). Each candidate is
    tested by making and removing a cgroup in it. Never raises.
    """
    try:
        with open(proc_cgroup) as f:
            own = own_cgroups(f.read())
    except OSError as exc:
        return Support(None, "no cgroups: cannot read %s: %s" % (proc_cgroup, exc.strerror), ())
    unified = _unified_mount(root)
    not_v2 = "no cgroup v2 hierarchy at %s" % root
    if unified is not None:
        found = _probe_v2(unified, own.get(""))
        if isinstance(found, Support):
            return found
        not_v2 = found
    found_v1 = _probe_v1(root, own)
    if isinstance(found_v1, Support):
        return Support(found_v1.method, "%s (not v2: %s)" % (found_v1.reason, not_v2), found_v1.parents)
    # Advise on the host's own kind: v1 where a v1 memory hierarchy is mounted, else v2.
    advice = _ENABLE_V1 if os.path.isdir(os.path.join(root, "memory")) else _ENABLE_V2
    if unified is None:
        return Support(None, "no cgroups: %s; to enable: %s" % (found_v1, advice), ())
    return Support(None, "no cgroups: v2: %s; v1: %s; to enable: %s" % (not_v2, found_v1, advice), ())


def _unified_mount(root: str) -> Optional[str]:
    for candidate in (root, os.path.join(root, "unified")):
        if os.path.exists(os.path.join(candidate, "cgroup.controllers")):
            return candidate
    return None


def _probe_v2(unified: str, own_path: Optional[str], need: Tuple[str, ...] = ("memory",)) -> Union[Support, str]:
    """A Support for v2 under `unified`, or a one-line reason (str) why not. `need`: the
    controllers required (tests on hosts whose memory controller sits in v1 pass ())."""
    available = set(fs.read_text(os.path.join(unified, "cgroup.controllers")).split())
    missing = [c for c in need if c not in available]
    if missing:
        return "no %s controller in %s: it is bound to a v1 hierarchy, or disabled" % ("/".join(missing), unified)
    if "memory" in need and not _kernel_at_least(_MEMORY_PEAK_KERNEL):
        return "Linux %s has no memory.peak (5.19 or newer has)" % os.uname().release
    problems = []
    if own_path is None:
        problems.append("the agent's v2 cgroup is unknown (no 0:: line in /proc/self/cgroup)")
    elif own_path.startswith("/.."):
        problems.append("the agent's cgroup %s is outside the mounted hierarchy (a cgroup namespace?)" % own_path)
    elif own_path != "/":
        own_dir = unified + own_path
        controllers = set(fs.read_text(os.path.join(own_dir, "cgroup.controllers")).split())
        others = sorted(set(fs.pids_in(own_dir)) - {os.getpid()})
        if any(c not in controllers for c in need):
            problems.append("%s is not delegated the memory controller" % own_dir)
        elif others:
            problems.append("the agent's cgroup %s holds other processes (%s)" % (own_dir, ", ".join(map(str, others[:5]))))
        else:
            failed = _try_mkdir(own_dir)
            if failed is None:
                return Support(V2, "cgroup v2: in the agent's own subtree %s (the agent moves into a leaf of it)" % own_dir,
                               (("unified", own_dir),))
            problems.append(failed)
    if os.geteuid() == 0 or own_path == "/":
        failed = _try_mkdir(unified)
        if failed is None:
            return Support(V2, "cgroup v2: under the hierarchy's root %s" % unified, (("unified", unified),))
        problems.append(failed)
    elif not problems:
        problems.append("not root")
    return "; ".join(problems)


def _probe_v1(root: str, own: Dict[str, str]) -> Union[Support, str]:
    """A Support for v1 under `root`, or a one-line reason (str) why not."""
    parents = []  # type: List[Tuple[str, str]]
    for controller, marker in (("memory", "memory.max_usage_in_bytes"), ("cpuacct", "cpuacct.usage"), ("freezer", "freezer.state")):
        mount = os.path.realpath(os.path.join(root, controller))  # cpuacct -> cpu,cpuacct
        path = own.get(controller)
        required = controller != "freezer"
        if not os.path.isdir(mount) or path is None:
            if required:
                return "no v1 %s hierarchy at %s" % (controller, mount)
            continue
        if path.startswith("/.."):
            if required:
                return "the agent's %s cgroup %s is outside %s (a cgroup namespace?)" % (controller, path, mount)
            continue
        parent = mount + path.rstrip("/")
        if not os.path.isdir(parent):
            if required:
                return "the agent's %s cgroup %s is not under %s (a container without its own cgroup namespace?)" % (
                    controller, path, mount)
            continue
        failed = _try_mkdir(parent, marker)
        if failed is not None:
            if required:
                return failed
            continue
        parents.append((controller, parent))
    where = ", ".join("%s in %s" % pair for pair in parents)
    return Support(V1, "cgroup v1: " + where, tuple(parents))


def _try_mkdir(parent: str, marker: Optional[str] = None) -> Optional[str]:
    """None when a cgroup can be made (and removed) under `parent` and has `marker`, else why not."""
    path = os.path.join(parent, "%sprobe-%d" % (PREFIX, os.getpid()))
    try:
        os.mkdir(path)
    except FileExistsError:
        pass
    except OSError as exc:
        why = "read-only" if exc.errno == errno.EROFS else exc.strerror
        return "cannot make a cgroup in %s: %s" % (parent, why)
    try:
        if marker and not os.path.exists(os.path.join(path, marker)):
            return "%s is not a cgroup with %s" % (parent, marker)
    finally:
        try:
            os.rmdir(path)
        except OSError:
            pass
    return None


def _kernel_at_least(version: Tuple[int, int]) -> bool:
    numbers = []
    for part in os.uname().release.split(".")[:2]:
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        numbers.append(int(digits or 0))
    return tuple(numbers) >= version


# --------------------------------------------------------------------------------------------
# The agent's cgroups and the trials'


class Cgroups:
    """The agent's folder, benchsage-<pid>-... (cgroupfs.own_name), under each of `support.parents`, and
    the trial cgroups (trial-1, trial-2, ...) made in it. Nothing happens until the first trial().

    On v1 a trial's cgroup is recycled for the next trial when the trial left it empty, with no
    cgroups of its own and almost nothing charged (RECYCLE_BYTES): a fresh set of cgroups makes
    the kernel build a new css_set for the trial's first process and slows its fork, exec and
    exit (benchmarks/cgroup_lifecycle.py: 0.45 ms per trial fresh, 0.27 ms recycled, on Linux
    6.18 with two CPUs). On v2 every trial gets a fresh cgroup (memory.peak cannot be reset
    before Linux 6.12).

    On v2 in the agent's own subtree, the first trial() moves the agent into a leaf
    (benchsage-<pid>-.../agent) and gives the memory controller to the subtree; close() undoes it.
    """

    def __init__(self, support: Support) -> None:
        if not support.method:
            raise CgroupError("no cgroups: " + support.reason)
        self.support = support
        self.v2 = support.method == V2
        self.bases = []  # type: List[Tuple[str, str]]  # (controller, benchsage-<pid>-... folder)
        self._count = 0
        self._live = {}  # type: Dict[int, TrialCgroup]  # id() -> trial, handed out and not removed
        self._spare = []  # type: List[TrialCgroup]  # v1: emptied cgroups ready for another trial
        self._moved_from = None  # type: Optional[str]  # v2: the agent's cgroup before it moved
        self._home = [os.path.join(path, "tasks") for path in sorted({p for _, p in support.parents})]
        self._home_fds = None  # type: Optional[List[int]]  # opened by the first leave()
        self._pid = os.getpid()  # the agent's (a system call each time asked)

    def trial(self) -> TrialCgroup:
        """An empty cgroup for one trial, its counters taken as the trial's zero.
        Raises CgroupError (nothing is left behind)."""
        if self._spare:
            trial = self._spare.pop()
            try:
                trial._start(fresh=False)
            except OSError as exc:
                _remove_trial(trial)
                raise CgroupError("cannot reuse cgroup %s: %s" % (trial.dirs[0], exc.strerror), exc.errno) from None
            self._live[id(trial)] = trial
            return trial
        if not self.bases:
            self._setup()
        while True:
            self._count += 1
            name = "trial-%d" % self._count
            made = {}  # type: Dict[str, str]  # base -> its trial folder
            try:
                for _, base in self.bases:
                    if base not in made:
                        made[base] = os.path.join(base, name)
                        os.mkdir(made[base])
            except FileExistsError:  # left by an earlier agent with our pid: take the next number
                fs.rmdirs(list(made.values())[:-1])
                continue
            except OSError as exc:
                fs.rmdirs(list(made.values())[:-1])
                raise CgroupError("cannot create cgroup %s: %s" % (list(made.values())[-1], exc.strerror), exc.errno) from None
            trial = TrialCgroup([(controller, made[base]) for controller, base in self.bases], self.v2, self)
            trial._start(fresh=True)
            self._live[id(trial)] = trial
            return trial

    def prepare(self) -> None:
        """Make the agent's folders now rather than at the first trial(). Raises CgroupError."""
        if not self.bases:
            self._setup()

    def _setup(self) -> None:
        own_dir = None  # type: Optional[str]
        if self.v2:
            parent = self.support.parents[0][1]
            with open(PROC_SELF_CGROUP) as f:
                own_path = own_cgroups(f.read()).get("")
            if own_path not in (None, "/") and parent.rstrip("/").endswith(own_path.rstrip("/")):
                own_dir = parent
        made = {}  # type: Dict[str, str]  # parent -> benchsage-<pid>-...; co-mounted v1 controllers share one
        try:
            for controller, parent in self.support.parents:
                if parent not in made:
                    fs.sweep_stale(parent)
                    made[parent] = fs.mkdir_unique(parent, fs.own_name())
                self.bases.append((controller, made[parent]))
            if self.v2:
                parent, base = next(iter(made.items()))
                if own_dir is not None:  # v2 forbids processes in a cgroup that delegates controllers
                    os.mkdir(os.path.join(base, "agent"))
                    fs.write_bytes(os.path.join(base, "agent", "cgroup.procs"), b"0")
                    self._moved_from = own_dir
                fs.enable_memory(parent)
                fs.enable_memory(base)
        except OSError as exc:
            where = exc.filename or self.support.parents[0][1]
            try:
                self.close()
            except CgroupError:
                pass
            raise CgroupError("cannot prepare cgroups in %s: %s" % (where, exc.strerror), exc.errno) from None

    def _done(self, trial: TrialCgroup) -> Optional[str]:
        """A trial's remove(): keep its emptied cgroup for the next trial, or remove it."""
        self._live.pop(id(trial), None)
        if trial._recyclable() and not self._spare and self.bases:
            self._spare.append(trial)
            return None
        return _remove_trial(trial)

    def close(self) -> int:
        """Kill what is left in live trial cgroups and remove them, the spare ones and the
        agent's folders. Returns the number of processes killed. Raises CgroupError if
        something stays."""
        killed = 0
        problems = []
        for trial in list(self._live.values()):
            try:
                killed += trial.kill_all()
            except CgroupError as exc:
                problems.append(str(exc))
            self._live.pop(id(trial), None)
            problems.append(_remove_trial(trial) or "")
        for trial in self._spare:
            problems.append(_remove_trial(trial) or "")
        self._spare = []
        for base in sorted({base for _, base in self.bases}):
            if self.v2:
                fs.disable_memory(base)
                if self._moved_from is not None:
                    fs.disable_memory(self._moved_from)
                    try:
                        fs.write_bytes(os.path.join(self._moved_from, "cgroup.procs"), b"0")
                    except OSError as exc:
                        problems.append("cannot move the agent back to %s: %s" % (self._moved_from, exc.strerror))
                    self._moved_from = None
            problems.append(fs.remove_tree(base) or "")
        self.bases = []
        for fd in self._home_fds or []:
            os.close(fd)
        self._home_fds = None
        problems = [p for p in problems if p]
        if problems:
            raise CgroupError("; ".join(problems))
        return killed


# A v1 trial cgroup is recycled when, emptied, it holds at most this much memory charged by the
# trials it served (unused per-CPU precharges, file pages they brought in, kernel objects; 100
# to 700 KiB after typical trials): the next trial's peak_memory includes it.
RECYCLE_BYTES = 1 << 20


class TrialCgroup:
    """One trial's cgroup (one folder per v1 hierarchy, or one v2 folder). Made by Cgroups.trial()."""

    __slots__ = ("dirs", "_v2", "_owner", "_procs", "_memory", "_usage", "_cpu", "_freezer", "_cpu0", "_clean", "_files", "_entries")

    def __init__(self, dirs: List[Tuple[str, str]], v2: bool, owner: Cgroups) -> None:
        self.dirs = []  # type: List[str]  # one per hierarchy: co-mounted v1 controllers share one
        for _, path in dirs:
            if path not in self.dirs:
                self.dirs.append(path)
        self._v2 = v2
        self._owner = owner
        by = dict(dirs)
        # The child joins by writing "0" (itself) to v1's `tasks`, which moves one thread — all of
        # a child just forked — without cgroup.procs' global lock: taking that lock first waits for
        # an RCU grace period (5-20 ms) whenever no process has changed cgroup for a while, i.e.
        # on the first trial after every reset. v2 has no such file for domain cgroups.
        self._procs = [os.path.join(path, "cgroup.procs" if v2 else "tasks").encode() for path in self.dirs]
        if v2:
            path = by["unified"]
            peak = os.path.join(path, "memory.peak")
            self._memory = peak if os.path.exists(peak) else None  # type: Optional[str]
            self._usage = None  # type: Optional[str]
            self._cpu = os.path.join(path, "cpu.stat")
            self._freezer = None  # type: Optional[str]
        else:
            self._memory = os.path.join(by["memory"], "memory.max_usage_in_bytes")
            self._usage = os.path.join(by["memory"], "memory.usage_in_bytes")
            self._cpu = os.path.join(by["cpuacct"], "cpuacct.usage")
            self._freezer = os.path.join(by["freezer"], "freezer.state") if "freezer" in by else None
        self._cpu0 = 0.0
        self._clean = False  # kill_all() found it empty, with no cgroups made under it
        # Files read after every trial, opened once for as long as the cgroup serves (a
        # recycled one, many trials) and read with pread: an open and a close fewer each.
        self._files = {}  # type: Dict[str, int]
        self._entries = None  # type: Optional[List[int]]  # its `tasks` files, opened by the agent's first enter()

    def _start(self, fresh: bool) -> None:
        """Start the counters for this trial: a fresh cgroup's are zero; a recycled one's memory
        watermark restarts at what is charged now (at most RECYCLE_BYTES), its CPU time is
        counted from now."""
        self._clean = False
        if fresh:
            self._cpu0 = 0.0
            return
        assert self._memory is not None  # recycling is v1 only
        fs.write_bytes(self._memory, b"0")  # v1: "0" resets the watermark to the current usage
        self._cpu0 = self._cpu_now()

    def _recyclable(self) -> bool:
        if self._v2:
            return False
        try:
            if not self._clean and (self.pids() or any(os.stat(d).st_nlink > 2 for d in self.dirs)):
                return False  # processes, or cgroups the trial made (removing is simpler)
            return int(self._read(self._usage)) <= RECYCLE_BYTES
        except (OSError, ValueError):
            return False

    def join(self) -> None:
        """Move the calling process into this cgroup: call it in the forked child before exec.

        A few open/write/close system calls on paths prepared by the parent: no allocation to
        speak of, no locks, nothing a forked child cannot do. The child must have one thread (a
        child of fork() does, whatever its parent had): on v1 only the calling thread moves.
        Raises OSError (the kernel's) if the kernel refuses; a child should then report it and
        exit, and the parent fall back.
        """
        for path in self._procs:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, b"0")  # "0": the writing process itself
            finally:
                os.close(fd)

    def can_enter(self) -> bool:
        """Whether the agent may step in around a spawn (enter, leave): v1 (`tasks`, no global lock)."""
        return not self._v2

    def enter(self) -> None:
        """join() for the agent itself, just before it spawns the trial: through the `tasks`
        files kept open for as long as the cgroup serves (an open and a close fewer per
        hierarchy between two trials; a write needs no more). Raises OSError."""
        if self._entries is None:
            self._entries = _open_all(self._procs)
        for fd in self._entries:
            os.write(fd, b"0")

    def leave(self) -> None:
        """After enter(): back to the agent's own cgroups (their `tasks` files, kept open too). Raises OSError."""
        owner = self._owner
        if owner._home_fds is None:
            owner._home_fds = _open_all(owner._home)
        for fd in owner._home_fds:
            os.write(fd, b"0")

    def read(self) -> Usage:
        """The trial's peak memory (KiB) and CPU time (s) so far. Raises CgroupError."""
        try:
            peak = None if self._memory is None else int(self._read(self._memory)) // 1024
            cpu = self._cpu_now() - self._cpu0
        except (OSError, ValueError) as exc:
            raise CgroupError("cannot read cgroup %s: %s" % (self.dirs[0], getattr(exc, "strerror", None) or exc)) from None
        return Usage(peak, cpu)

    def oom_kills(self) -> int:
        """Processes of this cgroup the kernel's OOM killer killed (v1 memory.oom_control, v2
        memory.events), counted since the cgroup was made."""
        for folder in self.dirs:
            for name in ("memory.oom_control", "memory.events"):
                try:
                    data = self._read(os.path.join(folder, name))
                except OSError:
                    continue
                for line in data.splitlines():
                    key, _, value = line.partition(b" ")
                    if key == b"oom_kill":
                        return int(value)
        return 0

    def _read(self, path: str) -> bytes:
        """A cgroup file's content, through a descriptor kept open (see _files). Raises OSError."""
        fd = self._files.get(path)
        if fd is None:
            fd = self._files[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        return os.pread(fd, 4096, 0)  # counters and short key-value lists

    def close_files(self) -> None:
        for fd in list(self._files.values()) + (self._entries or []):
            try:
                os.close(fd)
            except OSError:
                pass
        self._files = {}
        self._entries = None

    def _cpu_now(self) -> float:
        if not self._v2:
            return int(self._read(self._cpu)) / 1e9
        for line in self._read(self._cpu).splitlines():
            key, _, value = line.partition(b" ")
            if key == b"usage_usec":
                return int(value) / 1e6
        return 0.0

    def pids(self) -> Set[int]:
        """The processes in this cgroup and any cgroup made under it, now."""
        found = set()  # type: Set[int]
        self._clean = True
        for path in self.dirs:
            # Opened anew each time: a v1 cgroup.procs kept open lists the pids of its first read
            # for up to a second (the kernel's cached pid list).
            found.update(fs.pids_in(path))
            try:
                nested = os.stat(path).st_nlink > 2  # a cgroup folder's links: 2 + its subfolders
            except FileNotFoundError:
                continue
            if nested:
                self._clean = False
                for folder in fs.tree(path):
                    found.update(fs.pids_in(folder))
        found.discard(self._owner._pid)  # the agent, if it could not leave (TrialCgroup.enter)
        if found:
            self._clean = False
        return found

    def kill_all(self, timeout: float = 10.0) -> int:
        """SIGKILL every process still in the cgroup, until it is empty; returns how many there were.

        Call it after the trial's main process was waited for (wait4): what is left are its
        leftovers (daemons, setsid children, background jobs). Forks racing the kill are
        stopped by cgroup.kill (v2, Linux 5.14+) or by freezing the cgroup first (v1 freezer);
        without either, the kill repeats until nothing is left. Killed processes whose parent
        is the agent (a child subreaper) become its zombies: they leave the cgroup at once, the
        agent reaps them. Raises CgroupError if processes survive `timeout` seconds.
        """
        seen = self.pids()
        if not seen:
            return 0
        left = seen
        kill_file = os.path.join(self.dirs[0], "cgroup.kill") if self._v2 else None
        if kill_file is not None and os.path.exists(kill_file):
            try:
                fs.write_bytes(kill_file, b"1")
            except OSError:
                pass
        elif self._freezer is not None and fs.freeze(self._freezer, True):
            try:
                left = self.pids()  # frozen: nothing forks or exits now
                seen |= left
                fs.kill_all_of(left)
            finally:
                fs.freeze(self._freezer, False)
        deadline = time.monotonic() + timeout
        delay = 0.0001
        while True:
            # Only pids read from the cgroup just now: a pid seen before may already belong to
            # someone else.
            fs.kill_all_of(left)
            time.sleep(delay)
            left = self.pids()
            if not left:
                return len(seen)
            seen |= left
            if time.monotonic() > deadline:
                raise CgroupError("processes %s in cgroup %s survive SIGKILL after %.0f s (uninterruptible sleep?)" % (
                    ", ".join(map(str, sorted(left)[:5])), self.dirs[0], timeout))
            delay = min(delay * 2, 0.01)

    def remove(self) -> None:
        """Done with this trial: its cgroup is removed (and any the trial made under it), or
        kept empty for the next trial (v1, see Cgroups). Call after kill_all(); do not use the
        object afterwards. Raises CgroupError when a folder cannot be removed."""
        problem = self._owner._done(self)
        if problem:
            raise CgroupError(problem)


def _open_all(paths: List[Union[str, bytes]]) -> List[int]:
    """Each path opened for writing, or none (OSError raised, those opened closed)."""
    fds = []  # type: List[int]
    try:
        for path in paths:
            fds.append(os.open(path, os.O_WRONLY | os.O_CLOEXEC))
    except OSError:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def _remove_trial(trial: TrialCgroup) -> Optional[str]:
    trial.close_files()
    problems = [p for p in (fs.remove_tree(path) for path in trial.dirs) if p]
    return "; ".join(problems) or None
