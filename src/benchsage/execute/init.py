"""`[init]`: once per worker before its first run (after connecting and deploying), on every
role host of a group, or on the hosts of its `role`. Each run is journaled (status, exit
status, output tails); a worker whose init is journaled ok is not initialized again (resume).
An init that fails loses its worker before its first run; the other workers go on.

`[teardown]`: once per worker after its last run of the session, whatever ended it (the plan
done, a lost worker, a failing test, Ctrl-C): the connection is made again where the end took
it. A teardown that fails is said; it changes nothing measured.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from benchsage.errors import WorkerError
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


TEARDOWN_CONNECT = 30.0  # seconds to reach a worker again for its teardown


def tear_down(teardown: InitSpec | None, workers: Sequence[Any], say: Callable[[str], None]) -> None:
    """Run `teardown` on every worker's hosts (the hosts of its role), connecting again where
    the experiment's end left no connection; a failure is said, never raised."""
    if teardown is None:
        return
    request = ProcessRequest(command=teardown.command, cwd=teardown.cwd, env=teardown.env, timeout=teardown.timeout)
    for worker in workers:
        members = getattr(worker, "members", None)
        hosts: list[tuple[str | None, Any]] = ([(role, m) for role, m in members.items() if teardown.role in (None, role)]
                                               if members else [(None, worker)])
        for role, host in hosts:
            where = f"worker {worker.name}" + (f" (role {role})" if role else "")
            try:
                connect = getattr(host, "connect", None)
                if connect is not None:
                    connect(timeout=TEARDOWN_CONNECT)
                result: ProcessResult = host.run(request)
            except WorkerError as exc:
                say(f"[teardown] `{teardown.command}` could not run on {where}: {exc}")
                continue
            if not result.ok:
                say(f"[teardown] `{teardown.command}` failed on {where} ({failure_reason(result, teardown.timeout)})")
