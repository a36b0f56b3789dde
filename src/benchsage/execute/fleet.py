"""The workers of an experiment, built from its spec, and connected all together before anything
runs: an unknown host key, a missing python or an unreachable host stops the experiment before
the first trial, naming every worker that cannot be used."""

from __future__ import annotations

import errno
import os
import shlex
from typing import Any

from benchsage.errors import WorkerError, WorkerSetupError
from benchsage.execute.agentworker import AgentWorker
from benchsage.execute.create import is_private
from benchsage.execute.group import GroupWorker
from benchsage.execute.local import LocalWorker
from benchsage.execute.transports import CommandTransport, SlurmTransport, SshTransport
from benchsage.spec import Spec, WorkerSpec, check_files
from benchsage.store.modes import make_file, make_folder
from benchsage.threads import Threads

WORKER_LOGS = "workers"  # folder of the experiment directory with each worker's transport log


def make_worker(ws: WorkerSpec, folder: str, log_dir: str | None = None, private: bool = False) -> AgentWorker:
    """The worker a [[worker]] table describes (not connected yet); its connection log in
    `log_dir`, created with the modes of store/modes.py (`private`: the user's alone) before
    the connection opens it for appending."""
    log = os.path.join(log_dir, f"{ws.name.replace('/', '.')}.log") if log_dir else None
    if log is not None:
        try:
            make_folder(os.path.dirname(log), private)
            make_file(log, private)
        except OSError as exc:  # a link where the log goes (never followed), a file where its folder goes
            why = "a symbolic link is there, and benchsage never writes through one" if exc.errno == errno.ELOOP else exc.strerror or exc
            raise WorkerSetupError(f"worker {ws.name}: cannot create its connection log {log} ({why})") from None
    python = ws.python or "python3"
    words = shlex.split(python)
    common = dict(python=words, boot_id_command=ws.boot_id, log=log)
    if ws.kind == "local":
        return LocalWorker(ws.name, python=words if ws.python else None, boot_id_command=ws.boot_id, log=log)
    if ws.kind == "ssh":
        assert ws.host is not None
        transport = SshTransport(ws.host, ws.ssh_config, python)
    elif ws.kind == "slurm":
        transport = SlurmTransport(ws.node, list(ws.srun_args), python, ws.name, het_group=ws.het_group, job=ws.job)
    elif ws.kind == "command":
        transport = CommandTransport(list(ws.transport), python)
    else:  # the spec validates kinds; a new kind needs a transport here
        raise WorkerSetupError(f"worker {ws.name}: unknown kind {ws.kind!r}")
    return AgentWorker(
        ws.name, transport, folder=folder, host_dir=ws.dir, reconnect_timeout=ws.reconnect_timeout, **common  # type: ignore[arg-type]
    )


def make_workers(spec: Spec, directory: str | None = None) -> list[Any]:
    """The spec's workers (a group of role hosts for a worker with roles); SpecError (exit 2)
    when a file they need is missing (an ssh_config)."""
    check_files(spec)
    log_dir = os.path.join(directory, WORKER_LOGS) if directory else None
    private = is_private(spec)

    def made(ws: WorkerSpec) -> AgentWorker:
        worker = make_worker(ws, spec.folder, log_dir, private)
        worker.cpu_latency = spec.cpu_latency  # held by each agent it starts
        return worker

    return [GroupWorker(ws.name, [(role, made(member)) for role, member in ws.roles], spec) if ws.roles else made(ws)
            for ws in spec.workers]


def connect_all(workers: list[Any]) -> None:
    """Connect every worker at once. Raises WorkerSetupError (exit 2) if any worker is
    misconfigured, else WorkerError (exit 3) if any cannot be reached, naming each; the
    workers already connected are closed again."""
    errors: dict[str, BaseException] = {}

    def connect(worker: Any) -> None:
        try:
            worker.connect()
        except (WorkerError, WorkerSetupError) as exc:
            errors[worker.name] = exc
        except BaseException as exc:  # noqa: BLE001 - whatever it is, it is this worker's failure
            errors[worker.name] = WorkerError(f"worker {worker.name}: cannot connect: {type(exc).__name__}: {exc}")

    try:
        with Threads() as threads:
            for worker in workers:
                threads.start(connect, worker)
            threads.wait_all()
    except BaseException:  # Ctrl-C: no transport outlives the controller's attempt
        for worker in workers:
            worker.hang_up()
        raise
    if not errors:
        return
    for worker in workers:
        worker.close()
    ordered = [errors[w.name] for w in workers if w.name in errors]
    message = "; ".join(str(e) for e in ordered) + "; nothing ran"
    if any(isinstance(e, WorkerSetupError) for e in ordered):
        raise WorkerSetupError(message)
    raise WorkerError(message)


def check_cpus(spec: Spec, workers: list[Any]) -> None:
    """Every `cpus` of the spec exists on every worker's host and its agent may use it; else
    WorkerSetupError (exit 2) naming the worker, the test and the CPUs, before anything runs."""
    from benchsage.agent.cpus import HostCpus, check

    problems = []
    for worker in workers:
        measurement = worker.hello.get("measurement") or {}
        if "cpus_online" not in measurement:
            continue
        host = HostCpus(measurement["cpus_online"], measurement["cpus_allowed"])
        for test in spec.tests:
            why = check(test.cpus, host) if test.cpus else None
            if why:
                problems.append(f"worker {worker.name}: test '{test.name}' is pinned to {why}")
                break
        context = spec.treatments.context
        for cpus in (context.cpus or ()) if context else ():
            why = check(cpus, host)
            if why:
                problems.append(f"worker {worker.name}: [context] key 'cpus' pins trials to {why}")
                break
    if problems:
        raise WorkerSetupError("; ".join(problems) + "; nothing ran")


def close_all(workers: list[Any]) -> None:
    for worker in workers:
        try:
            worker.close()
        except WorkerError:
            pass
