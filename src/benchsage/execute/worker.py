"""The worker interface: where trials and resets execute.

The runner hands a worker a ProcessRequest and gets a ProcessResult back; it never touches
processes itself. Every worker kind is an AgentWorker (execute/agentworker.py): an agent on
the worker's host spawns and measures the trial, and collects its result files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from benchsage.vocabulary import DEFAULT_OUTPUT_LIMIT

EVERY_ROLE = "*"  # ProcessRequest.role: run on every role's host, in declared order


@dataclass(frozen=True)
class ProcessRequest:
    """One command to run: a trial or a reset."""

    command: str  # exec'd directly when it has no shell syntax, else run by /bin/sh -c as written
    cwd: str
    env: Mapping[str, str] = field(default_factory=dict)  # added to the worker's environment
    timeout: float | None = None  # seconds; the whole process group is killed past it
    output_limit: int = DEFAULT_OUTPUT_LIMIT  # bytes of each stream's tail to keep
    collect: tuple[str, ...] = ()  # files to read back after the process ends (results files)
    cpus: tuple[int, ...] | None = None  # pin the command to these CPUs (sched_setaffinity before exec)
    trial: bool = False  # a trial, not a reset: its own cgroup and energy where the host allows; leftovers killed
    aslr: bool | None = None  # address-space randomisation on/off for the command (personality); None: unchanged
    cwd_pad: int = 0  # run in a real directory whose path is this many bytes longer than cwd (agent/spawn.py: padded_cwd)
    role: str | None = None  # a worker with roles: the role whose host runs it (EVERY_ROLE: each in turn); None: the tests' role
    shell: bool = True  # False: exec the command's words split as a shell would, never a shell (the test's shell = "none")


@dataclass(frozen=True)
class ProcessResult:
    """What happened. exit_status is the shell's status, or -signal when killed by a signal."""

    exit_status: int | None
    timed_out: bool
    wall_time: float  # seconds, monotonic clock, measured by the harness
    user_time: float  # seconds, from wait4
    sys_time: float  # seconds, from wait4
    max_rss: int  # KiB, from wait4
    started: float  # epoch seconds
    ended: float  # epoch seconds
    stdout: bytes  # the last output_limit bytes
    stderr: bytes
    stdout_dropped: int = 0  # bytes not kept because the stream exceeded output_limit
    stderr_dropped: int = 0
    files: Mapping[str, bytes | None] = field(default_factory=dict)  # collected files; None if missing
    error: str | None = None  # the process could not be started at all
    spawn: str = ""  # "exec" (run directly, no shell in the measurement) or "shell" (/bin/sh -c)
    peak_memory: int | None = None  # KiB: the whole process tree's peak (its cgroup); None without one
    cpu_time: float | None = None  # s: user + system CPU of the whole tree, waited for or not (its cgroup)
    energy: float | None = None  # J: the CPU packages' energy during the trial (RAPL), where readable
    leftovers: int | None = None  # processes the trial left running, killed when it ended; None: not known
    oom_kills: int = 0  # processes of the trial the kernel's OOM killer killed (known with a cgroup)
    note: str | None = None  # the agent changed how it measures (said once), e.g. cgroups given up
    collected: Mapping[str, float] = field(default_factory=dict)  # collectors' values during the trial's window
    uncollected: Mapping[str, str] = field(default_factory=dict)  # collectors without a value, and why
    hosts: Mapping[str, Any] | None = None  # a worker with roles: each role's host, its boot id and window (its clock)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.exit_status == 0


def last_line(data: bytes) -> str:
    """The last line a command printed (at most 200 characters), for messages."""
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[-1][:200] if lines else ""


def failure_reason(result: ProcessResult, timeout: float | None, *, verb: str = "finish") -> str:
    """Why a command that is not ok failed, for messages: its start error, its timeout ("did not
    finish within 60 s") or its exit status, then the last line it printed, if any."""
    why = result.error or (f"did not {verb} within {timeout:g} s" if result.timed_out else f"exit status {result.exit_status}")
    last = last_line(result.stderr) or last_line(result.stdout)
    return f"{why}: {last}" if last else why


class Worker(Protocol):
    """Runs processes somewhere and describes that place."""

    name: str

    def run(self, request: ProcessRequest) -> ProcessResult:
        """Run one command, blocking until it ends or times out. Never raises for a failing
        command; raises WorkerError only when the worker itself is unusable."""
        ...

    def snapshot(self, files: Sequence[str], cwd: str) -> dict[str, Any]:
        """The environment snapshot (agent/snapshot.py) plus sha256 of the given files."""
        ...

    def close(self) -> None:
        ...
