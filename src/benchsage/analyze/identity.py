"""Did every worker run the same software on the same kind of machine? The identity diagnostic.

Each run's environment snapshot is taken on its worker's host (by the agent there): kernel,
CPU, its settings, tool versions and the sha256 of every file the tests execute. Comparing them
across workers finds the classic broken fleet benchmark, one server running an older binary,
before anyone reads a difference between machines as a result.

A worker's value of a field is the one its runs' snapshots agree on; when they disagree (a file
replaced halfway) its value lists the distinct values, most frequent first, joined by " / "
(the run-to-run change is warned about separately). Compared: the files (by path; a path under
the snapshot's "dir", the worker's working directory, is compared relative to it, so workers
that keep the experiment in different folders still compare the same file), the stable fields
of STABLE_FIELDS, and any other top-level text, integer or yes/no field not known to change from
run to run (TRANSIENT_FIELDS: times, load, process ids, the host's own name and boot id).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from benchsage.analyze.notes import SnapshotMissing

# Fields that describe the machine and its software, in the order the differences are listed
# (report/words/notes.py has the words a warning uses for each).
STABLE_FIELDS: tuple[str, ...] = (
    "deployed_tree", "governor", "turbo", "smt", "aslr", "cpu_idle", "kernel", "kernel_version", "machine", "os", "cpu_model", "cpu_count",
    "python", "benchsage", "spec_hash",
)
# Fields that differ between hosts or runs by nature: never an identity difference.
TRANSIENT_FIELDS: frozenset[str] = frozenset(
    {
        "time", "started", "ended", "host", "worker", "worker_kind", "transport", "boot_id", "load_average", "cpu_share", "noise",
        "files", "dir", "agent_pid", "agent_rss_kib", "max_rss_floor_kib", "uptime",
    }
)
FILE_PREFIX = "file "
DIGEST_PREFIX = "sha256:"


@dataclass(frozen=True)
class IdentityDifference:
    """One field whose value is not the same on every worker: `what` is "file PATH" or the
    snapshot field's name; `values` maps each worker to its value (None: unknown or missing)."""

    what: str
    values: Mapping[str, Any]


@dataclass(frozen=True)
class Identity:
    """The workers' snapshots compared. identical: no difference among `workers` (the workers
    that have snapshots); `missing`: workers of the data without any snapshot."""

    identical: bool
    differences: tuple[IdentityDifference, ...]
    workers: tuple[str, ...]
    missing: tuple[str, ...] = ()


def worker_of(label: str, snapshot: Mapping[str, Any]) -> str:
    """A run's worker: the "worker:" prefix of its label, else the snapshot's worker or host."""
    if ":" in label:
        return label.split(":", 1)[0]
    return str(snapshot.get("worker") or snapshot.get("host") or "?")


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _relative(path: str, directory: Any) -> str:
    if isinstance(directory, str) and directory:
        root = directory.rstrip("/") + "/"
        if path.startswith(root):
            return path[len(root):]
    return path


def _digest(value: Any) -> Any:
    return DIGEST_PREFIX + value if isinstance(value, str) and value and not value.startswith(DIGEST_PREFIX) else value


def _fields(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The comparable fields of one snapshot: 'file PATH' -> digest, and the stable fields."""
    out: dict[str, Any] = {}
    files = snapshot.get("files")
    if isinstance(files, Mapping):
        for path, digest in files.items():
            out[FILE_PREFIX + _relative(str(path), snapshot.get("dir"))] = _digest(digest)
    known = set(STABLE_FIELDS)
    for name in known:
        out[name] = snapshot.get(name)
    for name, value in snapshot.items():
        if name in known or name in TRANSIENT_FIELDS:
            continue
        if value is None or isinstance(value, (str, bool, int)):
            out[name] = value
    return out


def _order(what: str) -> tuple[int, int, str]:
    """Files first (the broken-benchmark case), then STABLE_FIELDS in their order, then others."""
    if what.startswith(FILE_PREFIX):
        return (0, 0, what)
    rank = {name: i for i, name in enumerate(STABLE_FIELDS)}
    return (1, rank.get(what, len(rank)), what)


def compare_workers(
    snapshots: Mapping[Any, Mapping[str, Any] | None],
    run_workers: Mapping[Any, str] | None = None,
    data_workers: Sequence[str] = (),
) -> Identity | None:
    """The identity diagnostic from the runs' snapshots (run id -> snapshot) and each run's
    worker (run id -> name; else the snapshot's "worker" or "host").

    data_workers: the workers of the analysed data, to name those without any snapshot.
    None when fewer than two workers have snapshots: there is nothing to compare.
    """
    run_workers = run_workers or {}
    if any(isinstance(snap, Mapping) and isinstance(snap.get("roles"), Mapping) for snap in snapshots.values()):
        return _compare_roles(snapshots, run_workers, data_workers)
    per_worker: dict[str, dict[str, Counter[str]]] = {}
    raw: dict[str, Any] = {}
    for run, snap in snapshots.items():
        if not isinstance(snap, Mapping):
            continue
        name = run_workers.get(run)
        worker = str(name) if name is not None else worker_of("", snap)
        fields = per_worker.setdefault(worker, {})
        for what, value in _fields(snap).items():
            key = _key(value)
            raw.setdefault(key, value)
            fields.setdefault(what, Counter())[key] += 1
    if len(per_worker) < 2:
        return None
    workers = tuple(sorted(per_worker))
    everything = sorted({what for fields in per_worker.values() for what in fields}, key=_order)
    differences = []
    for what in everything:
        values: dict[str, Any] = {}
        for w in workers:
            seen = per_worker[w].get(what)
            if not seen:
                values[w] = None
            elif len(seen) == 1:
                values[w] = raw[next(iter(seen))]
            else:
                values[w] = " / ".join(_text(raw[k]) for k, _ in seen.most_common())
        if len({_key(v) for v in values.values()}) > 1:
            differences.append(IdentityDifference(what, values))
    missing = tuple(w for w in data_workers if w not in per_worker)
    return Identity(not differences, tuple(differences), workers, missing)


def _compare_roles(snapshots: Mapping[Any, Mapping[str, Any] | None], run_workers: Mapping[Any, str],
                   data_workers: Sequence[str]) -> Identity | None:
    """Workers with roles: each role's hosts compared with the same role's hosts of the other
    groups ("pair1/server" with "pair2/server": the blog's out-of-sync binary was on a server),
    never a server with a client."""
    by_role: dict[str, dict[Any, Mapping[str, Any]]] = {}
    labels: dict[str, dict[Any, str]] = {}
    for run, snap in snapshots.items():
        if not isinstance(snap, Mapping):
            continue
        worker = str(run_workers.get(run) or worker_of("", snap))
        roles = snap.get("roles")
        for role, member in (roles.items() if isinstance(roles, Mapping) else [("", snap)]):
            if isinstance(member, Mapping):
                by_role.setdefault(str(role), {})[run] = member
                labels.setdefault(str(role), {})[run] = f"{worker}/{role}" if role else worker
    found = [compare_workers(snaps, labels[role]) for role, snaps in by_role.items()]
    compared = [identity for identity in found if identity is not None]
    if not compared:
        return None
    differences = tuple(d for identity in compared for d in identity.differences)
    workers = tuple(sorted(w for identity in compared for w in identity.workers))
    seen = {str(run_workers.get(run) or worker_of("", snap)) for run, snap in snapshots.items() if isinstance(snap, Mapping)}
    return Identity(not differences, differences, workers, tuple(w for w in data_workers if w not in seen))


def _text(value: Any) -> str:
    return "unknown" if value is None else str(value)


@dataclass(frozen=True)
class IdentityDiffers:
    """A warning: the workers differ in one field of their snapshots (a file's digest or a
    setting), with each worker's value."""

    difference: IdentityDifference


def identity_warnings(identity: Identity | None) -> list[Any]:
    """One warning per difference (IdentityDiffers), and one naming the workers without any
    snapshot (notes.SnapshotMissing)."""
    if identity is None:
        return []
    out: list[Any] = [IdentityDiffers(d) for d in identity.differences]
    if identity.missing:
        out.append(SnapshotMissing(identity.missing))
    return out
