"""Spawning one command: how (exec or /bin/sh -c), how it is started, and run_process, which
starts, waits for and measures it.

A command without shell syntax is exec'd directly (hyperfine's -N: no shell in the
measurement). It is started as hyperfine -N starts it, by posix_spawn (vfork and exec): the
agent takes on, for the instant of the spawn, what the child must start with (the trial's
CPUs, ASLR, working directory and, on cgroup v1, its cgroup), and the trial's clock starts
just before the spawn. Where that cannot be (a v2 cgroup, which the agent could only enter
through cgroup.procs and its lock; FORK_ENV), it is forked: the child puts itself in its own
process group, joins the trial's cgroup, pins itself to its CPUs, sets ASLR, changes to its
(possibly padded) working directory and reports the monotonic time just before execve, where
the clock then starts. Either way the clock runs on the host, so the network is not measured,
and the agent sleeps until the trial ends (or writes output).
"""

from __future__ import annotations

import os
import shlex
import signal
import time

from benchsage.agent.measurement import measurement
from benchsage.agent.protocol import COLLECT_LIMIT
from benchsage.agent.wait import exit_code, exit_waiter, kill_group, prepare_exit_waits, read_all, wait_for
from benchsage.vocabulary import DEFAULT_OUTPUT_LIMIT, EXEC, SHELL

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would add ~0.7 MiB to the agent
    from typing import Any, Dict, List, Mapping, Optional, Tuple

    from benchsage.agent.protocol import RequestChannel

SHELL_PATH = "/bin/sh"

# Characters that make a command line shell syntax (expansions, globs, operators, quoting
# with escapes, comments): such a command runs under /bin/sh -c, anything else is exec'd.
_SHELL_CHARS = frozenset("$`\\|&;<>(){}*?[]!#~\n\r\t\"'")
_SHELL_WORDS = frozenset(
    {
        "cd", "exit", "export", "set", "unset", "eval", "exec", "source", ".", "alias", "ulimit", "umask",
        "trap", "wait", "read", "shift", "return", "local", "readonly", "type", "hash", "command", "builtin",
        "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "time",
        "function", "select", ":",
    }
)


def needs_shell(command: str) -> bool:
    """Whether `command` is shell syntax: a character of _SHELL_CHARS, nothing at all, a
    variable assignment first, or a shell keyword or builtin first. Anything else is a program
    and its words, which can be exec'd (or wrapped) as they are."""
    if any(c in _SHELL_CHARS for c in command):
        return True
    words = command.split()
    return not words or "=" in words[0] or words[0] in _SHELL_WORDS


def plan_spawn(command: str, env: Mapping[str, str], shell_ok: bool = True) -> Tuple[str, str, List[str]]:
    """How to start `command`: ("exec", path, argv) when it has no shell syntax and its program
    is found (no shell in the measurement), else ("shell", /bin/sh, argv). Without `shell_ok`
    (a test's shell = "none", hyperfine's -N) the words split as a shell would are exec'd,
    whatever they hold; a program that is not found is ("exec", "", argv), which fails to start."""
    shell = (SHELL, SHELL_PATH, [SHELL_PATH, "-c", command])
    if not shell_ok:
        words = shlex.split(command)
        return (EXEC, _which(words[0], env.get("PATH", os.defpath)) or "", words)
    if needs_shell(command):
        return shell
    words = command.split()
    path = _which(words[0], env.get("PATH", os.defpath))
    if path is None:
        return shell  # the shell says "not found" the way users expect
    return (EXEC, path, words)


# Programs found on $PATH, kept until forget_programs(): each trial of a test looks its program
# up again by one access() instead of a stat of every folder before it on $PATH (a dozen here:
# 10-60 us between two trials). Only absolute finds are kept (a relative one depends on the cwd).
_found = {}  # type: Dict[Tuple[str, str], str]


# Each trial's whole environment and working directory, by the line that asked for it (serve.py):
# a run asks for the same few trials over and over, and making them (the agent's environment
# copied, the test's added, $PWD, every variable checked) is a good part of the agent's work
# between two trials. Not for a padded working directory: it is made (again, if a trial or a
# reset removed it) before every trial.
_environments = {}  # type: Dict[bytes, Tuple[str, Dict[str, str]]]


def forget_programs() -> None:
    """Look programs up on $PATH afresh from now on: called at every reset, snapshot and deploy
    (what a reset installs, or a deploy brings, is found by the run's first trial)."""
    _found.clear()


def _which(program: str, path_var: str) -> Optional[str]:
    """_lookup, remembered (see _found)."""
    key = (program, path_var)
    known = _found.get(key)
    if known is not None and os.access(known, os.X_OK):
        return known
    found = _lookup(program, path_var)
    if found is not None and os.path.isabs(found):
        _found[key] = found
    else:
        _found.pop(key, None)
    return found


def _lookup(program: str, path_var: str) -> Optional[str]:
    if "/" in program:
        return program if os.path.isfile(program) and os.access(program, os.X_OK) else None
    for folder in path_var.split(os.pathsep):
        candidate = os.path.join(folder or ".", program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _reset_peak_rss() -> None:
    """Lower this process's recorded peak RSS to its current RSS (Linux >= 4.0).

    Linux charges a child, at exec, the peak RSS of the address space it leaves, so a trial
    forked from a Python process would report at least the interpreter's peak as its max_rss.
    In the forked child, just before exec, only the pages copied at fork are resident.
    """
    try:
        fd = os.open("/proc/self/clear_refs", os.O_WRONLY)
        try:
            os.write(fd, b"5")
        finally:
            os.close(fd)
    except OSError:
        pass


_clear_refs = -1  # the agent's own /proc/self/clear_refs, opened once (-2: not writable here)


def _reset_own_peak_rss() -> None:
    """_reset_peak_rss for the agent itself, before each spawn: one write to its clear_refs
    kept open (the file acts on the process that opened it: never use it in a forked child)."""
    global _clear_refs
    if _clear_refs == -1:
        try:
            _clear_refs = os.open("/proc/self/clear_refs", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            _clear_refs = -2
    if _clear_refs >= 0:
        try:
            os.write(_clear_refs, b"5")
        except OSError:
            pass


def _child(path: str, argv: List[str], env: Mapping[str, str], cwd: str, fds: Tuple[int, int, int], report: int,
           cpus: Optional[List[int]] = None, join: Any = None, aslr: Optional[bool] = None) -> None:
    """In the forked child: own process group, cgroup, CPUs, ASLR, cwd, stdio, default signals,
    then exec.

    The child reports the monotonic time just before execve (the trial's clock starts at its
    exec, so the cost of forking the agent is not measured), or why it could not start. A
    cgroup it could not join is reported with a leading "!" and the trial runs without it."""
    stage = "setpgid"
    try:
        os.setpgid(0, 0)
        if join is not None:
            try:
                join()
            except OSError:
                os.write(report, b"!")
        if cpus:
            stage = "cpus"
            os.sched_setaffinity(0, cpus)
        if aslr is not None:
            stage = "aslr"
            _set_aslr(aslr)
        stage = "chdir"
        os.chdir(cwd)
        stage = "exec"
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        _reset_peak_rss()
        os.write(report, b"%r|" % time.perf_counter())
        os.execve(path, argv, env)
    except OSError as exc:
        try:
            os.write(report, ("%s:%d" % (stage, exc.errno or 0)).encode())
        except OSError:
            pass
    finally:
        os._exit(127)


ADDR_NO_RANDOMIZE = 0x0040000  # personality(2) flag: no address-space randomisation after exec
_libc: Any = None


def _personality(persona: int) -> int:
    """personality(2); 0xffffffff reads the current persona without changing it."""
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.personality.argtypes = [ctypes.c_ulong]
        _libc.personality.restype = ctypes.c_int
    result = _libc.personality(persona)
    if result == -1:
        import ctypes

        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def _set_aslr(on: bool) -> None:
    """Address-space randomisation for what this process execs next: on clears
    ADDR_NO_RANDOMIZE (which the agent may have inherited, e.g. under `setarch -R`), off sets it
    (as `setarch -R` does). The kernel's randomize_va_space still applies on top."""
    current = _personality(0xFFFFFFFF)
    wanted = current & ~ADDR_NO_RANDOMIZE if on else current | ADDR_NO_RANDOMIZE
    if wanted != current:
        _personality(wanted)


def padded_cwd(cwd: str, extra: int) -> str:
    """A real directory whose path is `extra` bytes longer than `cwd` and in which `cwd`'s
    entries are reachable by the same relative names, for a trial's working directory.

    Below `cwd`: hidden directories named by underscores (".____/____"), components at most 255
    bytes, holding a symbolic link to each entry of `cwd` (added when missing, so what a reset
    creates there is seen too). One or two extra bytes cannot be a directory of their own: the
    path is then `cwd` + "/" or "/." (the same directory, spelled longer, as $PWD shows it)."""
    cwd = cwd.rstrip("/") or "/"
    if extra <= 0:
        return cwd
    if extra <= 2:
        return cwd + "/."[:extra]
    parts = _pad_parts(extra)
    top = os.path.join(cwd, parts[0])
    path = os.path.join(cwd, *parts)
    os.makedirs(path, exist_ok=True)
    try:
        names = os.listdir(cwd)
        have = set(os.listdir(path))
    except OSError:
        return path
    for name in names:
        if name not in have and os.path.join(cwd, name) != top and not _is_pad(name):
            try:
                os.symlink(os.path.join(cwd, name), os.path.join(path, name))
            except OSError:
                pass
    return path


def _pad_parts(extra: int) -> List[str]:
    """The folder names below cwd that make its path `extra` (> 2) bytes longer."""
    parts = []
    left = extra
    while left > 0:
        size = min(left, 256)  # "/" + up to 255 bytes
        if left - size in (1, 2):  # never leave a remainder too short for a component
            size -= 3
        parts.append("_" * (size - 1))
        left -= size
    parts[0] = "." + parts[0][1:]
    return parts


def pad_folder(extra: int) -> Optional[str]:
    """The hidden folder padded_cwd(cwd, extra) makes in cwd (None: it makes none)."""
    return _pad_parts(extra)[0] if extra > 2 else None


def _is_pad(name: str) -> bool:
    return len(name) > 1 and name[0] == "." and name.strip("_") == "."



_devnull: Optional[int] = None


def _stdin_fd() -> int:
    global _devnull
    if _devnull is None:
        _devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    return _devnull


def run_process(
    command: str,
    cwd: str,
    env: Optional[Mapping[str, str]] = None,
    timeout: Optional[float] = None,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    collect: Tuple[str, ...] = (),
    channel: Optional[RequestChannel] = None,
    cpus: Optional[List[int]] = None,
    trial: bool = False,
    aslr: Optional[bool] = None,
    cwd_pad: int = 0,
    environ: Optional[Mapping[str, str]] = None,
    key: Optional[bytes] = None,
    shell: bool = True,
) -> Dict[str, Any]:
    """Run `command` in its own process group and measure it; never raises for the command.
    `shell`: False exec's the command's words with no shell (plan_spawn's shell_ok).

    Blocks in poll() on the trial's two pipes and its pidfd (no threads, no periodic wakeups).
    With `channel`, the agent's stdin is watched too: if it closes, the trial is killed and
    ControllerGone raised. `cpus`: pin the command to these CPUs. `trial`: a trial (not a reset):
    measured in a cgroup of its own and by the package energy counters where the host allows,
    and whatever it leaves running is killed (and counted) when it ends. `aslr`: address-space
    randomisation on or off for the command (None: as the agent has it). `cwd_pad`: run in a
    directory whose path is this many bytes longer than `cwd` (padded_cwd), $PWD set to it.
    `environ`: the environment `env` is added to (default: os.environ, decoded anew; the agent
    passes its own, decoded once). `key`: the request's line, under which its environment and
    working directory are kept (_environments). Returns a dict (the protocol's result, with
    bytes not yet encoded).
    """
    kept = _environments.get(key) if key is not None else None
    if kept is None:
        cwd, full_env, failure = _prepare(command, cwd, env, aslr, cwd_pad, environ)
        if failure is not None:
            return failure
        bad = [k for k, v in full_env.items() if "\0" in k or "\0" in v or "=" in k]
        if bad:
            return _failed("cannot start %r: environment variable %r is not valid (NUL byte or '=' in its name)" % (command, bad[0]),
                           time.time(), plan_spawn(command, full_env, shell)[0])
        if key is not None and not cwd_pad:
            if len(_environments) >= 256:
                _environments.clear()
            _environments[key] = (cwd, full_env)
    else:
        cwd, full_env = kept
    how, path, argv = plan_spawn(command, full_env, shell)
    started = time.time()
    if not path:
        return _failed("cannot start %r: program %r not found (no shell runs it: shell = \"none\")" % (command, argv[0]), started, how)
    control = measurement() if trial else None
    cgroup = control.trial_cgroup() if control is not None else None
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    if control is not None:
        control.before()
    prepare_exit_waits()
    if _spawns(cgroup):
        return _run_spawned(command, path, argv, full_env, cwd, (out_r, out_w, err_r, err_w), timeout, output_limit,
                            collect, channel, cpus, aslr, control, cgroup, started, how)
    return _run_forked(command, path, argv, full_env, cwd, (out_r, out_w, err_r, err_w), timeout, output_limit,
                       collect, channel, cpus, aslr, control, cgroup, started, how)


def _run_forked(command: str, path: str, argv: List[str], full_env: Mapping[str, str], cwd: str,
                pipes: Tuple[int, int, int, int], timeout: Optional[float], output_limit: int, collect: Tuple[str, ...],
                channel: Optional[RequestChannel], cpus: Optional[List[int]], aslr: Optional[bool], control: Any,
                cgroup: Any, started: float, how: str) -> Dict[str, Any]:
    """run_process by fork: the child sets itself up (_child), joins the trial's cgroup, and
    reports the time just before its exec, where the trial's clock starts."""
    out_r, out_w, err_r, err_w = pipes
    rep_r, rep_w = os.pipe()
    t0 = time.perf_counter()
    try:
        pid = os.fork()
    except OSError as exc:
        for fd in (out_r, out_w, err_r, err_w, rep_r, rep_w):
            os.close(fd)
        if cgroup is not None:
            control.finish(cgroup, 0)
        return _failed("cannot start %r: fork failed: %s" % (command, exc.strerror), started, how)
    if pid == 0:  # pragma: no cover - the child execs or exits
        _child(path, argv, full_env, cwd, (_stdin_fd(), out_w, err_w), rep_w, cpus, cgroup.join if cgroup is not None else None, aslr)
    try:
        os.setpgid(pid, pid)  # also done in the child: whichever runs first
    except OSError:
        pass
    # The agent keeps its copies of the output pipes' write ends until the trial was waited for:
    # the trial's exit then wakes it once (its pidfd), not first at the pipes' hang-up, while
    # the exiting trial still needs the CPU the woken agent would take. What the trial wrote
    # is read as it comes, and the rest after its exit without waiting for EOF (wait_for).
    os.close(rep_w)
    pidfd = -1
    finished = False
    try:
        pidfd = exit_waiter(pid)
        os.set_blocking(out_r, False)
        os.set_blocking(err_r, False)
        # The child's report (its exec time, or why it did not start) is read when its pipe
        # closes: at the exec when a deadline counts from it, else after the trial's exit, so
        # that the agent sleeps from the fork to the trial's end.
        status, usage, t_end, timed_out, tails, report = wait_for(
            pid, pidfd, out_r, err_r, t0, timeout, output_limit, channel, rep_r if timeout is not None else -1)
        finished = True
        if report is None:
            report = read_all(rep_r)
        if report.startswith(b"!"):  # the child could not join its cgroup
            report = report[1:]
            if control is not None and cgroup is not None:
                control.give_up_cgroups("the trial could not join its cgroup %s" % cgroup.dirs[0])
                cgroup = None
        exec_time, why = _read_report(report, cwd, path, cpus, aslr)
        if exec_time is None:  # whatever the child became, it is not measured
            if control is not None:
                control.finish(cgroup, pid)
            return _failed("cannot start %r: %s" % (command, why), started, how)
        t0 = exec_time
    except BaseException:
        _reap(pid)
        raise
    finally:
        for fd in (pidfd, out_r, err_r, rep_r, out_w, err_w):
            if fd >= 0:
                os.close(fd)
        if control is not None and not finished:
            control.finish(cgroup, pid)
    return _result(_measured(status, usage, t0, t_end, timed_out, tails, how), control, cgroup, pid, collect, cwd)


def _reap(pid: int) -> None:
    """A trial being given up (an error, an interrupt): its group killed, the child waited for."""
    kill_group(pid)
    try:
        os.wait4(pid, 0)
    except ChildProcessError:
        pass


def _result(result: Dict[str, Any], control: Any, cgroup: Any, pid: int, collect: Tuple[str, ...], cwd: str) -> Dict[str, Any]:
    """A measured trial's result with its cgroup's readings (the cgroup finished) and the files
    it was asked to collect."""
    if control is not None:
        result.update(control.finish(cgroup, pid))
    if collect:
        result["files"], too_large = _collect(collect, cwd)
        if too_large:  # left out, said in the result (the controller caps a result's line by COLLECT_LIMIT)
            said = "results file%s %s %s larger than %d MiB, more than the agent sends back: left out" % (
                "s" if len(too_large) > 1 else "", ", ".join(repr(n) for n in too_large), "are" if len(too_large) > 1 else "is",
                COLLECT_LIMIT >> 20)
            result["note"] = "%s; %s" % (result["note"], said) if result.get("note") else said
    return result


FORK_ENV = "BENCHSAGE_AGENT_FORK"  # set (not "" or "0"): every command forked, never posix_spawn'd (to compare)
_SIGNALS_DEFAULT = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGCHLD)
_agent_cwd = -1  # the agent's own working directory, opened once: it goes back there after a spawn


def _spawns(cgroup: Any) -> bool:
    """Whether the command is started by posix_spawn (vfork and exec, as hyperfine -N does)
    rather than by fork: where Python has it, unless FORK_ENV says otherwise, and unless the
    trial's cgroup is v2 (the agent would have to move itself through cgroup.procs, whose lock
    may wait for an RCU grace period: there the forked child joins it alone)."""
    if not hasattr(os, "posix_spawn") or os.environ.get(FORK_ENV, "") not in ("", "0"):
        return False
    return cgroup is None or cgroup.can_enter()


def _run_spawned(command: str, path: str, argv: List[str], env: Mapping[str, str], cwd: str, pipes: Tuple[int, int, int, int],
                 timeout: Optional[float], output_limit: int, collect: Tuple[str, ...], channel: Optional[RequestChannel],
                 cpus: Optional[List[int]], aslr: Optional[bool], control: Any, cgroup: Any, started: float,
                 how: str) -> Dict[str, Any]:
    """run_process by posix_spawn: the agent takes on, for the instant of the spawn, what the
    child must start with (its CPUs, ASLR, working directory, the trial's cgroup: inherited at
    clone or applied at exec) and gives it back at once. The trial's clock starts just before
    the spawn (the vfork and the exec are measured, as by hyperfine -N). No child runs agent
    code: the agent is not woken until the trial ends."""
    out_r, out_w, err_r, err_w = pipes
    pid, t0, failure, cgroup_failed = _spawn_as_child(path, argv, env, cwd, (_stdin_fd(), out_w, err_w), cpus, aslr, cgroup)
    if cgroup_failed and control is not None and cgroup is not None:
        control.give_up_cgroups("the trial could not join its cgroup %s" % cgroup.dirs[0])
        cgroup = None
    pidfd = -1
    finished = False
    try:
        if failure is not None:
            finished = True
            if control is not None:
                control.finish(cgroup, 0)
            return _failed("cannot start %r: %s" % (command, _why_not_started(failure, cwd, path, cpus, aslr)), started, how)
        pidfd = exit_waiter(pid)
        os.set_blocking(out_r, False)
        os.set_blocking(err_r, False)
        status, usage, t_end, timed_out, tails, _ = wait_for(pid, pidfd, out_r, err_r, t0, timeout, output_limit, channel)
        finished = True
    except BaseException:
        if pid:
            _reap(pid)
        raise
    finally:
        for fd in (pidfd, out_r, err_r, out_w, err_w):
            if fd >= 0:
                os.close(fd)
        if control is not None and not finished:
            control.finish(cgroup, pid)
    return _result(_measured(status, usage, t0, t_end, timed_out, tails, how), control, cgroup, pid, collect, cwd)


def _spawn_as_child(path: str, argv: List[str], env: Mapping[str, str], cwd: str, fds: Tuple[int, int, int],
                    cpus: Optional[List[int]], aslr: Optional[bool], cgroup: Any) -> Tuple[int, float, Optional[bytes], bool]:
    """posix_spawn the command in a process group of its own: (pid, perf_counter time just
    before the spawn, None, whether it could not join its cgroup), or (0, 0.0, b"stage:errno",
    ...) when it could not start."""
    global _agent_cwd
    if _agent_cwd < 0:
        _agent_cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    stage = "cpus"
    affinity = persona = None  # type: Any
    entered = cgroup_failed = moved = False
    pid, t0, failure = 0, 0.0, None  # type: int, float, Optional[bytes]
    try:
        if cpus:
            affinity = os.sched_getaffinity(0)
            os.sched_setaffinity(0, cpus)
        if aslr is not None:
            stage = "aslr"
            persona = _personality(0xFFFFFFFF)
            _set_aslr(aslr)
        stage = "chdir"
        os.chdir(cwd)
        moved = True
        if cgroup is not None:
            try:
                cgroup.enter()  # the agent itself, until the spawn: the child starts in it
                entered = True
            except OSError:
                cgroup_failed = True
        _reset_own_peak_rss()  # the agent's peak is what Linux charges the child at its exec
        stage = "exec"
        file_actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(fds)]
        t0 = time.perf_counter()
        pid = os.posix_spawn(path, argv, env, file_actions=file_actions, setpgroup=0, setsigdef=_SIGNALS_DEFAULT)
    except OSError as exc:
        failure = ("%s:%d" % (stage, exc.errno or 0)).encode()
    finally:
        if entered:
            try:
                cgroup.leave()
            except OSError:  # the agent stays in the trial's cgroup (never killed with it): give cgroups up
                cgroup_failed = True
        if moved:
            os.fchdir(_agent_cwd)
        if persona is not None:
            _personality(persona)
        if affinity is not None:
            os.sched_setaffinity(0, affinity)
    return pid, t0, failure, cgroup_failed


def _prepare(command: str, cwd: str, env: Optional[Mapping[str, str]], aslr: Optional[bool],
             cwd_pad: int, environ: Optional[Mapping[str, str]] = None) -> Tuple[str, Dict[str, str], Optional[Dict[str, Any]]]:
    """The command's working directory and whole environment, or why it cannot start."""
    full_env = dict(os.environ if environ is None else environ)
    if env:
        full_env.update(env)
    if cwd_pad:
        try:
            cwd = padded_cwd(cwd, cwd_pad)
        except OSError as exc:
            return cwd, full_env, _failed("cannot start %r: cannot create a working directory %d bytes longer than %r: %s"
                                          % (command, cwd_pad, cwd, exc.strerror), time.time(), EXEC)
    # $PWD names the trial's working directory, as a shell's cd would leave it (a program
    # exec'd without a shell would otherwise see the agent's).
    full_env["PWD"] = cwd if os.path.isabs(cwd) else os.path.abspath(cwd)
    if aslr is not None and _libc is None:
        try:
            _personality(0xFFFFFFFF)  # loads libc here rather than in the forked child; reads only
        except (OSError, AttributeError) as exc:
            return cwd, full_env, _failed("cannot start %r: cannot turn address-space randomisation %s: %s"
                                          % (command, "on" if aslr else "off", exc), time.time(), EXEC)
    return cwd, full_env, None


_STAGES = ("setpgid", "cpus", "aslr", "chdir", "exec")


def _read_report(report: bytes, cwd: str, path: str, cpus: Optional[List[int]],
                 aslr: Optional[bool]) -> Tuple[Optional[float], str]:
    """What the forked child reported: (the perf_counter time just before its exec, ""), or
    (None, why it did not start) — also when the report cannot be read."""
    stamp, bar, failure = report.partition(b"|")
    if not bar:  # failed before the exec time was written
        stamp, failure = b"", report
    if not failure and stamp:
        try:
            return float(stamp), ""
        except ValueError:
            pass
    elif failure:
        return None, _why_not_started(failure, cwd, path, cpus, aslr)
    if not report:
        return None, "its forked child ended before it could say why"
    return None, "its forked child's report cannot be read: %r" % report[:100]


def _why_not_started(failure: bytes, cwd: str, path: str, cpus: Optional[List[int]], aslr: Optional[bool]) -> str:
    """What the child reported ("stage:errno") as a reason: what it could not use, and why."""
    stage, colon, code = failure.decode("ascii", "replace").partition(":")
    if not colon or stage not in _STAGES or not code.isdigit():
        return "its forked child's report cannot be read: %r" % failure[:100]
    reason = os.strerror(int(code))
    where = {"setpgid": "a process group of its own (setpgid)", "chdir": "working directory %r" % cwd,
             "cpus": "CPUs %s" % cpus,
             "aslr": "address-space randomisation %s (personality)" % ("on" if aslr else "off")}.get(stage, repr(path))
    return "%s: %s" % (where, reason)


def _measured(status: int, usage: Any, t0: float, t_end: float, timed_out: bool, tails: Any, how: str) -> Dict[str, Any]:
    """The result of a command that ran: what wait4 and the clock say, and its output's tails.
    Its start and end on the wall clock are the trial clock's own (t0, t_end: perf_counter at
    the exec and at the exit), not when the agent began to prepare it or finished reading it:
    the time between one trial's end and the next one's start is all the harness's."""
    stdout, out_dropped = tails[0].result()
    stderr, err_dropped = tails[1].result()
    wall_now, now = time.time(), time.perf_counter()
    return {
        "exit_status": exit_code(status),
        "timed_out": timed_out,
        "wall_time": t_end - t0,
        "user_time": usage.ru_utime,
        "sys_time": usage.ru_stime,
        "max_rss": usage.ru_maxrss,
        "started": wall_now - (now - t0),
        "ended": wall_now - (now - t_end),
        "stdout": stdout,
        "stderr": stderr,
        "stdout_dropped": out_dropped,
        "stderr_dropped": err_dropped,
        "files": {},
        "error": None,
        "spawn": how,
    }


def _failed(message: str, started: float, how: str) -> Dict[str, Any]:
    return {
        "exit_status": None,
        "timed_out": False,
        "wall_time": 0.0,
        "user_time": 0.0,
        "sys_time": 0.0,
        "max_rss": 0,
        "started": started,
        "ended": time.time(),
        "stdout": b"",
        "stderr": b"",
        "stdout_dropped": 0,
        "stderr_dropped": 0,
        "files": {},
        "error": message,
        "spawn": how,
    }


def _collect(files: Tuple[str, ...], cwd: str) -> Tuple[Dict[str, Optional[bytes]], List[str]]:
    """Each file's content (None when it cannot be read, or is larger than COLLECT_LIMIT), and
    the names of those too large."""
    out = {}  # type: Dict[str, Optional[bytes]]
    too_large = []  # type: List[str]
    for name in files:
        try:
            with open(os.path.join(cwd, name), "rb") as f:
                data = f.read(COLLECT_LIMIT + 1)
        except OSError:
            data = None
        if data is not None and len(data) > COLLECT_LIMIT:
            data = None
            too_large.append(name)
        out[name] = data
    return out, too_large
