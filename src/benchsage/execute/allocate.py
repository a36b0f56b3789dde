"""Allocated workers: hosts asked from Slurm (`salloc --no-shell -N N`, agents started with
`srun --jobid`) or from the user's `allocate` command, one worker per host, released at the
end whatever happens (success, error, Ctrl-C/SIGTERM, a lost worker): `scancel`, or the
user's `release` command given the hosts.

The journal's meta "allocations" records each allocation (job id, hosts, the worker name each
host carries, released or not) when the experiment is created, so that after a crash of the
controller `benchsage release DIR` frees it (execute/release.py: only with commands it can
trust), and `resume` re-uses it if Slurm still shows it, else allocates the same number of
hosts anew and gives them the recorded worker names in order. A Slurm job is cancelled only
when its recorded id is a number and squeue does not show it as another user's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pwd
import re
import secrets
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from benchsage.errors import BenchsageError, ExperimentError, WorkerSetupError
from benchsage.spec import Spec, WorkerSpec
from benchsage.spec.provision import with_hosts
from benchsage.store.journal import Journal
from benchsage.store.modes import make_file, make_folder

PENDING_RECORD = os.path.join("workers", "allocations.json")  # until the journal exists: what a crash in between leaves
SLURM_TIMEOUT = 60.0  # seconds squeue, scontrol and scancel may take
# Reasons of a pending job that waiting cannot cure: the request exceeds what the partition has or allows.
_NEVER = {"PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints", "InvalidAccount", "InvalidQOS",
          "QOSMaxNodePerJobLimit", "AssocMaxNodesPerJob"}


@dataclass(frozen=True)
class Allocation:
    """The hosts one allocated [[worker]] got, and the worker name each carries."""

    kind: str  # "slurm" | "command"
    hosts: tuple[str, ...]
    names: tuple[str, ...]
    job: str | None = None  # slurm
    release: str | None = None  # command: the user's release command
    cwd: str = "/"  # where the user's commands run: the spec's folder
    released: bool = False
    request: str | None = None  # slurm: the job name asked for, unique: finds the job should salloc outlive the record
    spec: str | None = None  # the spec's path: `benchsage release` runs `release` only as that file still says it

    @classmethod
    def asking(cls, request: str) -> "Allocation":
        """What is recorded while salloc waits: a job that is not known by its id yet."""
        return cls("slurm", (), (), request=request)

    def record(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"hosts": list(self.hosts), "names": list(self.names)}

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> "Allocation":
        return cls(r["kind"], tuple(r["hosts"]), tuple(r["names"]), r.get("job"), r.get("release"), r.get("cwd", "/"), bool(r["released"]),
                   r.get("request"), r.get("spec"))

    def describe(self) -> str:
        if self.kind == "slurm" and self.job is None:
            return f"Slurm job request {self.request}"
        what = f"Slurm job {self.job}" if self.kind == "slurm" else "hosts"
        return f"{what} ({', '.join(self.hosts)})"


def allocate(ws: WorkerSpec, spec: Spec, names: Sequence[str] | None = None, say: Callable[[str], None] = print,
             request: str | None = None) -> Allocation:
    """Ask for the hosts of one allocated [[worker]]; WorkerSetupError (exit 2) when refused.
    `names`: the worker names the hosts carry (resume), else the hosts' own. `request`: the
    Slurm job name to ask under (unique, recorded before asking)."""
    if ws.nodes is not None:
        request = request or slurm_request(spec.name)
        job, hosts = _salloc(ws, request, say)
        kind, release = "slurm", None
    else:
        job, hosts, kind, release = None, _run_allocate(ws, spec.folder), "command", ws.release
    got = Allocation(kind, tuple(hosts), tuple(hosts), job, release, spec.folder, request=request if ws.nodes is not None else None,
                     spec=spec.path)
    if names is not None:
        if len(hosts) < len(names):
            problems = release_one(got)
            raise WorkerSetupError(f"the new allocation has {len(hosts)} hosts for the experiment's {len(names)} workers "
                                   f"({', '.join(names)}); released{'' if not problems else ' failed: ' + problems}")
        got = dataclasses.replace(got, hosts=tuple(hosts[:len(names)]), names=tuple(names))
    return got


def spec_with(spec: Spec, allocations: Sequence[Allocation]) -> Spec:
    """The spec whose allocated workers are one worker per allocated host, named as recorded.
    WorkerSetupError for a recorded host or name that is not a plain ssh destination (a record
    changed by hand): it would go into a worker's `dir`."""
    for a in allocations:
        for host in (*a.hosts, *a.names):
            problem = destination_problem(host)
            if problem is not None:
                raise WorkerSetupError(f"the recorded allocation {a.describe()} names {host[:80]!r}, which is not an ssh destination "
                                       f"({problem}); nothing ran")
    return with_hosts(spec, [list(zip(a.names, a.hosts)) for a in allocations], [a.job for a in allocations])


def slurm_request(experiment: str) -> str:
    """A job name no other allocation carries: `squeue --name` finds the job by it."""
    return f"benchsage-{experiment}-{secrets.token_hex(4)}"


def slurm_refusal(a: Allocation) -> str | None:
    """Why the recorded Slurm job is not benchsage's to cancel, or None: its id is not a plain
    number (scancel would read anything else as options or a list: a record tampered with),
    or squeue lists it as another user's (an administrator releasing a directory someone sent
    would cancel a stranger's job). A job squeue does not list has ended: nothing to refuse."""
    if a.kind != "slurm" or a.job is None:
        return None
    if not re.fullmatch(r"[0-9]+", str(a.job)):
        return f"the recorded Slurm job id {str(a.job)[:80]!r} is not a number; not cancelled"
    listed = _slurm(["squeue", "-h", "-j", str(a.job), "-o", "%u"])
    owner = listed.stdout.strip() if listed.returncode == 0 else ""
    me = current_user()
    if owner and owner != me:
        return f"Slurm job {a.job} belongs to user {owner}, not to you ({me}); not cancelled"
    return None


def current_user() -> str:
    """The name squeue shows for this process's jobs (from the password database: the
    environment's USER could say anything)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def release_one(a: Allocation) -> str | None:
    """Free one allocation; None when done, else what failed (naming the hosts left allocated).
    A Slurm job is cancelled only when slurm_refusal says nothing against it; a job asked for
    by name is looked for among the user's own jobs."""
    if a.kind == "slurm" and a.job is None:  # benchsage stopped while salloc waited: the job by its name
        listed = _slurm(["squeue", "-h", "--name", str(a.request), "-u", current_user(), "-o", "%i"])
        if listed.returncode != 0:
            return f"squeue --name {a.request} failed ({_last_line(listed.stderr)}); a job of that name may stay allocated"
        problems = [p for job in listed.stdout.split() for p in [release_one(dataclasses.replace(a, job=job))] if p]
        return "; ".join(problems) or None
    if a.kind == "slurm":
        refused = slurm_refusal(a)
        if refused:
            return refused
        proc = _slurm(["scancel", str(a.job)])
        if proc.returncode == 0 or re.search(r"Invalid job id|already completing or completed", proc.stderr):
            _wait_gone(str(a.job))
            return None
        return f"scancel {a.job} failed ({_last_line(proc.stderr) or f'exit status {proc.returncode}'}); nodes {', '.join(a.hosts)} stay allocated: `scancel {a.job}`"
    if not a.release:
        return None
    try:
        proc = subprocess.run(["/bin/sh", "-c", a.release + ' "$@"', "release", *a.hosts], cwd=a.cwd, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace", timeout=600)
        why = None if proc.returncode == 0 else f"exit status {proc.returncode}: {_last_line(proc.stderr) or _last_line(proc.stdout)}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = str(exc)
    return None if why is None else f"`{a.release}` failed ({why}); hosts {' '.join(a.hosts)} may stay allocated: free them yourself"


_HELD = ("RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED")  # a job whose nodes are still its own
_LISTED = _HELD + ("PENDING", "SIGNALING", "STAGE_OUT")  # a job not yet out of the queue
RELEASE_WAIT = 30.0  # seconds a cancelled job may take to leave the queue (its steps killed, its epilog run)


def _job_state(job: str | None) -> str | None:
    """What squeue says of the job (RUNNING, COMPLETING, ...); None when it cannot say."""
    proc = _slurm(["squeue", "-h", "-j", str(job), "-o", "%T"])
    return proc.stdout.strip() if proc.returncode == 0 else None


def _wait_gone(job: str) -> None:
    """After scancel: until Slurm no longer lists the job (it stays COMPLETING while its steps,
    the agents of a killed benchsage, are killed), so that its nodes are free when release
    says so. Gives up quietly after RELEASE_WAIT: the job is cancelled all the same."""
    deadline = time.monotonic() + RELEASE_WAIT
    delay = 0.05
    while time.monotonic() < deadline and _job_state(job) in _LISTED:  # ended, or purged ("Invalid job id"): gone
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


def slurm_alive(job: str | None) -> bool:
    return _job_state(job) in _HELD


class Held:
    """The allocations of one session (`with Held(directory) as held:`): released at the end
    whatever happens, the journal told; a failed release is exit 3 naming what stays."""

    def __init__(self, directory: str, say: Callable[[str], None], private: bool = False) -> None:
        self.directory = directory
        self.say = say
        self.private = private  # the directory, if made here, is the user's alone (store/modes.py)
        self.allocations: list[Allocation] = []

    def __enter__(self) -> "Held":
        return self

    def allocate(self, spec: Spec) -> Spec:
        """Allocate every allocated [[worker]] of a new experiment; the spec on the hosts got.
        A Slurm request is recorded before salloc runs: a benchsage killed while salloc waits
        or returns leaves a record `release DIR` finds the job by."""
        for ws in spec.workers:
            if ws.allocated:
                request = slurm_request(spec.name) if ws.nodes is not None else None
                if request is not None:
                    self.allocations.append(Allocation.asking(request))
                    _write_pending(self.directory, self.private, self.allocations)
                    self.allocations.pop()
                self.allocations.append(allocate(ws, spec, say=self.say, request=request))
                _write_pending(self.directory, self.private, self.allocations)
                self.say(f"allocated {self.allocations[-1].describe()}")
        return spec_with(spec, self.allocations)

    def resume(self, spec: Spec, journal: Journal) -> Spec:
        """The recorded allocations, re-used while alive, else allocated anew under the
        recorded worker names; the journal records the new ones at once."""
        recorded = [Allocation.from_record(r) for r in journal.meta().get("allocations") or ()]
        allocated = [ws for ws in spec.workers if ws.allocated]
        for ws, old in zip(allocated, recorded):
            alive = not old.released and (old.kind != "slurm" or slurm_alive(old.job))
            if alive:
                self.allocations.append(old)
                self.say(f"re-using {old.describe()}")
                continue
            request = slurm_request(spec.name) if ws.nodes is not None else None
            if request is not None:  # recorded before salloc runs, as for a new experiment
                journal.set_meta("allocations", [a.record() for a in self.allocations] + [old.record(), Allocation.asking(request).record()]
                                 + [r.record() for r in recorded[len(self.allocations) + 1:]])
            new = allocate(ws, spec, old.names, say=self.say, request=request)
            self.allocations.append(new)
            self.say(f"{old.describe()} is gone; allocated {new.describe()} for workers {', '.join(new.names)}")
            journal.set_meta("allocations", [a.record() for a in self.allocations] + [r.record() for r in recorded[len(self.allocations):]])
        return spec_with(spec, self.allocations)

    def hold(self, spec: Spec) -> Spec:
        """Allocate for a session of several experiments (a bisect search): what the directory's
        workers/allocations.json records and still holds is re-used (a search resumed after a
        crash), the rest allocated anew under the recorded worker names."""
        recorded = _read_pending(self.directory)
        for i, ws in enumerate(w for w in spec.workers if w.allocated):
            old = recorded[i] if i < len(recorded) else None
            if old is not None and old.hosts and not old.released and (old.kind != "slurm" or slurm_alive(old.job)):
                self.allocations.append(old)
                self.say(f"re-using {old.describe()}")
                continue
            if old is not None and not old.released:
                release_one(old)  # a job its request named, granted as the search was killed; else nothing left to free
            request = slurm_request(spec.name) if ws.nodes is not None else None
            if request is not None:
                _write_pending(self.directory, self.private, self.allocations + [Allocation.asking(request)])
            self.allocations.append(allocate(ws, spec, old.names if old is not None and old.names else None, say=self.say,
                                             request=request))
            _write_pending(self.directory, self.private, self.allocations)
            self.say(f"allocated {self.allocations[-1].describe()}")
        return spec_with(spec, self.allocations)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        after, problems = [], []
        for a in self.allocations:
            problem = None if a.released else release_one(a)
            if problem:
                problems.append(problem)
            else:
                self.say(f"released {a.describe()}")
            after.append(dataclasses.replace(a, released=problem is None))
        if self.allocations:
            record_released(self.directory, after)
        if not problems:
            return
        message = "release failed: " + "; ".join(problems)
        if exc is None:
            raise ExperimentError(message)
        if isinstance(exc, BenchsageError):
            raise type(exc)(f"{exc}; {message}") from None
        self.say(message)


def _write_pending(directory: str, private: bool, allocations: Sequence[Allocation]) -> None:
    path = os.path.join(directory, PENDING_RECORD)
    make_folder(directory, private)
    make_folder(os.path.dirname(path), private)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path + ".tmp")  # a crash's: made anew with the mode of store/modes.py
    make_file(path + ".tmp")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump([a.record() for a in allocations], fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(path + ".tmp", path)


def _read_pending(directory: str) -> list[Allocation]:
    path = os.path.join(directory, PENDING_RECORD)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [Allocation.from_record(r) for r in json.load(fh)]


def record_released(directory: str, allocations: Sequence[Allocation]) -> None:
    """Record in the journal (if the experiment has one, else in workers/allocations.json) the
    allocations and which are released."""
    if not Journal.exists(directory):
        _write_pending(directory, False, allocations)  # the directory is there: it keeps its mode
        return
    journal = Journal.open(directory)
    try:
        journal.set_meta("allocations", [a.record() for a in allocations])
    finally:
        journal.close()


def _salloc(ws: WorkerSpec, request: str, say: Callable[[str], None]) -> tuple[str, list[str]]:
    """salloc --no-shell: the job id and its nodes. A pending job whose reason waiting cannot
    cure (more nodes than the partition has...) is cancelled and refused, quoting Slurm."""
    asked = [f"--{key}={value}" for key, value in (("partition", ws.partition), ("constraint", ws.constraint), ("time", ws.time)) if value]
    # --no-kill: a failed node loses its own worker, not the whole allocation (the others finish).
    argv = ["salloc", "--no-shell", "--no-kill", "-N", str(ws.nodes), *asked, f"--job-name={request}"]
    what = f"[[worker]] kind \"slurm\" nodes = {ws.nodes}{' (' + ' '.join(asked) + ')' if asked else ''}"
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
    except OSError as exc:
        raise WorkerSetupError(f"{what}: cannot run salloc ({exc}); is this a Slurm submit host?") from None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: [lines.append(line.strip()) for line in proc.stderr or ()], daemon=True)
    reader.start()
    job, waited = None, False
    try:
        while proc.poll() is None:
            pending = next((m.group(1) for line in lines for m in [re.search(r"Pending job allocation (\d+)", line)] if m), None)
            if pending:
                job = pending
                reason = _slurm(["squeue", "-h", "-j", job, "-o", "%r"]).stdout.strip()
                if reason in _NEVER:
                    _slurm(["scancel", job])
                    proc.wait()
                    said = "; ".join(_quoted(lines)) or reason
                    raise WorkerSetupError(f"{what}: Slurm refused: \"{said}\" (job {job} pending with reason {reason}; "
                                           "cancelled); ask for fewer nodes or another partition (`sinfo` shows them); nothing ran")
                if not waited and reason:
                    say(f"waiting for Slurm to grant job {job} ({reason})")
                    waited = True
            time.sleep(0.1)
    except BaseException:
        if job:
            _slurm(["scancel", job])
        proc.kill()
        raise
    reader.join()
    granted = next((m.group(1) for line in lines for m in [re.search(r"Granted job allocation (\d+)", line)] if m), None)
    if proc.returncode != 0 or granted is None:
        raise WorkerSetupError(f"{what}: Slurm refused: \"{'; '.join(_quoted(lines)) or f'salloc exit status {proc.returncode}'}\"; nothing ran")
    listed = _slurm(["squeue", "-h", "-j", granted, "-o", "%N"]).stdout.strip()
    nodes = _slurm(["scontrol", "show", "hostnames", listed]).stdout.split() if listed else []
    if len(nodes) != ws.nodes:
        _slurm(["scancel", granted])
        raise WorkerSetupError(f"{what}: Slurm job {granted} shows nodes {listed!r}, not {ws.nodes}; cancelled; nothing ran")
    return granted, nodes


def _run_allocate(ws: WorkerSpec, folder: str) -> list[str]:
    what = f"[[worker]] allocate `{ws.allocate}`"
    try:
        proc = subprocess.run(["/bin/sh", "-c", ws.allocate or ""], cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              errors="replace", timeout=3600)
    except subprocess.TimeoutExpired:
        raise WorkerSetupError(f"{what}: did not finish within 3600 s; nothing ran") from None
    if proc.returncode != 0:
        raise WorkerSetupError(f"{what}: failed (exit status {proc.returncode}: {_last_line(proc.stderr) or 'no error output'}); nothing ran")
    hosts = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
    for number, line in enumerate(proc.stdout.splitlines(), 1):
        problem = destination_problem(line.strip()) if line.strip() else None
        if problem is not None:
            shown = line.strip() if len(line.strip()) <= 80 else line.strip()[:80] + "…"
            raise WorkerSetupError(f"{what}: line {number} {shown!r} is not an ssh destination ({problem}); the host names its "
                                   "worker and goes into `dir` through {worker}: print one user@host or user@host:port per line; "
                                   "nothing ran")
    if not hosts:
        raise WorkerSetupError(f"{what}: printed no host (it must print one ssh destination per line); nothing ran")
    if len(set(hosts)) != len(hosts):
        raise WorkerSetupError(f"{what}: printed a host twice ({', '.join(hosts)}); nothing ran")
    return hosts


# user@host[:port], the host a name or an address ([...] for IPv6): what ssh takes, and nothing that means a
# path (no '/'), an option (a leading '-') or anything to a shell or a terminal
_DESTINATION = re.compile(r"(?:[A-Za-z0-9._+-]+@)?(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.%]+\])(?::[0-9]{1,5})?")
MAX_DESTINATION = 255  # characters: a DNS name's limit, a user and a port fit beside most


def destination_problem(host: str) -> str | None:
    """Why `host` (a host an allocation gave) is not a plain ssh destination; None when it is.
    It becomes a worker's name and, through {worker}, part of its `dir`."""
    if len(host) > MAX_DESTINATION:
        return f"longer than {MAX_DESTINATION} characters"
    if host in (".", ".."):
        return "it names a folder"
    if host.startswith("-"):
        return "it would read as an ssh option"
    if not _DESTINATION.fullmatch(host):
        return "only letters, digits and . _ - + @ : [ ] make one"
    return None


def _slurm(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace", timeout=SLURM_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(argv, 1, "", str(exc))


def _quoted(lines: list[str]) -> list[str]:
    """What salloc said, without its bookkeeping lines."""
    return [re.sub(r"^salloc: (error: )?", "", line) for line in lines
            if line and not re.search(r"Pending job allocation|queued and waiting|Job has been cancelled|already completing", line)]


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1].strip() if lines else ""
