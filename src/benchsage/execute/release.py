"""`benchsage release DIR`: free what a crashed experiment left allocated, running only commands
benchsage can trust. An experiment directory may come from someone else, and its journal (or
workers/allocations.json) records a shell command: it runs when the spec at the recorded path
is the user's own file and still releases that worker's hosts with the same command in the
same folder; any other is printed with where it came from, and runs only with `--yes`. A
Slurm job is cancelled only when its id is a number and it is the user's own (allocate.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
from typing import Any

from benchsage.errors import BenchsageError, DataError, ExperimentError, UsageError
from benchsage.execute.allocate import PENDING_RECORD, Allocation, record_released, release_one, slurm_refusal
from benchsage.spec import load_spec
from benchsage.store.journal import Journal, journal_path

# What an allocate command may print as a host (an ssh destination: user@host:port, [::1]); a
# record with anything else (a leading dash, spaces, shell syntax) was not written by benchsage.
_HOST = re.compile(r"[A-Za-z0-9_.@:%+\[\]][A-Za-z0-9_.@:%+\[\]-]*")


def release_directory(directory: str, *, yes: bool = False) -> list[str]:
    """Free what the experiment in `directory` records as still allocated; what was freed, one
    line each. Before anything runs: DataError (exit 2) for a Slurm job that is not the user's
    to cancel (slurm_refusal), UsageError (exit 2) for a release command benchsage cannot
    trust (trust_problem), unless `yes`. ExperimentError (exit 3) when a release fails, naming
    what stays. A crash before the journal was created leaves the record in
    workers/allocations.json."""
    recorded, where, spec_path = read_allocations(directory)
    if not recorded:
        raise DataError(f"{directory}: the experiment allocated nothing; there is nothing to release")
    pending = [(i, a) for i, a in enumerate(recorded) if not a.released]
    refused = [why for _, a in pending for why in [slurm_refusal(a)] if why]
    if refused:
        raise DataError(f"{directory}: " + "; ".join(refused) + "; nothing was released")
    untrusted = [f"`{a.release}` for hosts {' '.join(a.hosts)} in {a.cwd} ({why})"
                 for i, a in pending for why in [trust_problem(a, i, spec_path, directory)] if why]
    if untrusted and not yes:
        raise UsageError(f"{where} records the release command{'s' if len(untrusted) > 1 else ''} "
                         f"{'; '.join(untrusted)}; nothing was run: read it, then `benchsage release {directory} --yes` runs it "
                         "(or release the hosts yourself)")
    said, problems, out = [], [], list(recorded)
    for i, a in pending:
        problem = release_one(a)
        if problem:
            problems.append(problem)
        else:
            said.append(f"released {a.describe()}")
            out[i] = dataclasses.replace(a, released=True)
    record_released(directory, out)
    if problems:
        raise ExperimentError("; ".join(said + problems))
    return said or [f"{directory}: every allocation was released already"]


def read_allocations(directory: str) -> tuple[list[Allocation], str, str | None]:
    """The allocations `directory` records, where they are recorded (for messages), and the
    spec path its journal records (None before the journal exists). DataError (exit 2) when
    the record is not one benchsage writes."""
    pending = os.path.join(directory, PENDING_RECORD)
    if not Journal.exists(directory) and os.path.exists(pending):
        where = pending
        try:
            with open(pending, encoding="utf-8") as fh:
                records, spec_path = json.load(fh), None
        except (OSError, ValueError) as exc:
            raise DataError(f"{pending}: cannot be read ({exc})") from None
    else:
        where = journal_path(directory)
        journal = Journal.open(directory)
        try:
            meta = journal.meta()
        finally:
            journal.close()
        records, spec_path = meta.get("allocations") or [], meta.get("spec_path")
    try:
        if not isinstance(records, list):
            raise TypeError(f"a list of allocations, got {type(records).__name__}")
        return [_allocation(r) for r in records], where, spec_path if isinstance(spec_path, str) else None
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{where}: the allocations are not as benchsage records them ({exc})") from None


def _allocation(r: Any) -> Allocation:
    if not isinstance(r, dict) or not isinstance(r.get("hosts"), list) or not isinstance(r.get("names"), list):
        raise ValueError("an allocation without its lists of hosts and names")
    a = Allocation.from_record(r)
    texts = [a.kind, *a.hosts, *a.names, a.cwd] + [v for v in (a.job, a.release, a.request, a.spec) if v is not None]
    if not all(isinstance(t, str) for t in texts) or a.kind not in ("slurm", "command"):
        raise ValueError("a field of the wrong type or kind")
    return a


def trust_problem(a: Allocation, index: int, spec_path: str | None, directory: str) -> str | None:
    """Why the release command of the `index`-th recorded allocation cannot be trusted, or None
    (no command, or the spec at the recorded path says the same). Trusted: the spec is a file
    of the user (or root) that nobody else may write, outside the experiment directory, and
    its `index`-th allocated [[worker]] releases with the same command in the same folder, the
    hosts being host names. Loading the spec runs nothing (no generator)."""
    if a.kind != "command" or not a.release:
        return None
    path = a.spec or spec_path
    if not path or not os.path.isabs(path):
        return "no spec path is recorded with it"
    try:
        real = os.path.realpath(path)
        found = os.stat(real)
    except OSError:
        return f"the spec it records, {path}, is not there"
    inside = os.path.realpath(directory)
    if real == inside or real.startswith(inside.rstrip(os.sep) + os.sep):
        return f"the spec it records, {path}, lies inside the experiment directory"
    if not stat.S_ISREG(found.st_mode) or found.st_uid not in (os.geteuid(), 0):
        return f"the spec it records, {path}, is not a file of yours"
    if found.st_mode & stat.S_IWOTH:
        return f"the spec it records, {path}, may be written by anyone"
    try:
        spec = load_spec(path, run_generator=False)
    except BenchsageError as exc:
        return f"the spec it records cannot be read ({exc})"
    allocated = [ws for ws in spec.workers if ws.allocated]
    position = index  # one allocation per allocated [[worker]], recorded in the spec's order
    if position >= len(allocated) or allocated[position].allocate is None:
        return f"{path} has no allocate/release [[worker]] for it"
    if allocated[position].release != a.release:
        now = allocated[position].release
        return f"{path} releases those hosts with {f'`{now}`' if now else 'no command'}"
    if spec.folder != a.cwd:
        return f"{path} runs it in {spec.folder}"
    odd = [h for h in a.hosts if not _HOST.fullmatch(h)]
    if odd:
        return f"{', '.join(repr(h[:40]) for h in odd[:3])} {'is not a host name' if len(odd) == 1 else 'are not host names'}"
    return None
