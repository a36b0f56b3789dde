"""`[init]`: once per worker before its first run (after connecting and deploying), on every
role host of a group, or on the hosts of its `role`. Each run is journaled (status, exit
status, output tails); a worker whose init is journaled ok is not initialized again (resume).
An init that fails loses its worker before its first run; the other workers go on.
"""

from __future__ import annotations

from typing import Any

from benchsage.execute.worker import ProcessRequest, ProcessResult, failure_reason
from benchsage.spec import InitSpec
from benchsage.store.journal import Journal


class InitFailed(Exception):
    """The worker's init failed: it is lost before its first run."""


def initialized(journal: Journal) -> set[tuple[str, str | None]]:
    """(worker, role) of every init journaled ok."""
    return {(row["worker"], row["role"]) for row in journal.inits() if row["status"] == "ok"}


def initialize(init: InitSpec, journal: Journal, worker: Any, done: set[tuple[str, str | None]]) -> None:
    """Run `init` on `worker`'s hosts that have not run it yet; InitFailed on the first failure."""
    members = getattr(worker, "members", None)
    hosts: list[tuple[str | None, Any]] = ([(role, m) for role, m in members.items() if init.role in (None, role)]
                                           if members else [(None, worker)])
    request = ProcessRequest(command=init.command, cwd=init.cwd, env=init.env, timeout=init.timeout)
    for role, host in hosts:
        if (worker.name, role) in done:
            continue
        result: ProcessResult = host.run(request)
        status = "ok" if result.ok else "timeout" if result.timed_out else "failed"
        journal.record_init(worker.name, role, init.command, status, result.exit_status, result.wall_time, result.stdout, result.stderr)
        if status != "ok":
            where = f" on role {role}" if role else ""
            raise InitFailed(f"worker {worker.name}: [init] `{init.command}` failed{where} before its first run "
                             f"({failure_reason(result, init.timeout)}); the journal keeps its output")
