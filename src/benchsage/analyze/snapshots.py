"""Snapshot comparison: what changed between an experiment's runs, and between its workers.

Each run's snapshot (agent/snapshot.py, recorded in the journal) holds the host's settings,
its noise readings and the sha256 of the files the tests execute. Settings that differ
between runs, time-varying sources that warned before some runs, and files that changed are
warnings of the analysis; differences between workers are the identity diagnostic's
(analyze/identity.py) when between_workers is False.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from benchsage.analyze.identity import STABLE_FIELDS, worker_of
from benchsage.vocabulary import WARN

# Snapshot settings that should be the same in every run of an experiment, with the words a
# warning uses for them (shared with the identity diagnostic). Load and time differ from run to
# run by nature and are not listed.
_SETTINGS = STABLE_FIELDS
# Noise readings that change over time (their names in the snapshot's "noise", with the words a
# warning uses: their sources' titles in lower case, since a snapshot keeps only each reading's
# value and state): a warning when they warned (WARN) in some runs.
_TRANSIENT = {
    "load": "load average",
    "memory": "memory available and pressure",
    "swap": "swap in use",
    "thermal_throttle": "thermal throttling",
}


def _show(value: Any) -> str:
    return "unknown" if value is None else repr(value) if isinstance(value, str) else str(value)


def _runs(n: int) -> str:
    return f"{n} run" + ("" if n == 1 else "s")


def _short(digest: str | None) -> str:
    return "missing" if digest is None else digest[:12]


def _setting_warnings(snaps: Mapping[str, Mapping[str, Any]], workers: Mapping[str, str], between_workers: bool = True) -> list[str]:
    out = []
    several = len(set(workers.values())) > 1
    for key, words in _SETTINGS:
        values = {label: s[key] for label, s in snaps.items() if key in s}
        counts = Counter(_show(v) for v in values.values())
        if len(counts) < 2:
            continue
        if several and not between_workers:
            # Differences between workers are the identity diagnostic's: only changes within one.
            for worker in sorted(set(workers.values())):
                own = Counter(_show(v) for label, v in values.items() if workers[label] == worker)
                if len(own) > 1:
                    parts = ", ".join(f"{value} in {_runs(n)}" for value, n in own.most_common())
                    out.append(f"{words} changed between runs on worker {worker}: {parts}")
            continue
        parts = ", ".join(f"{value} in {_runs(n)}" for value, n in counts.most_common())
        message = f"{words} differs between runs: {parts}"
        by_worker: dict[str, set[str]] = {}
        for label, value in values.items():
            by_worker.setdefault(workers[label], set()).add(_show(value))
        if len(by_worker) > 1 and all(len(v) == 1 for v in by_worker.values()):
            message += " (by worker: " + ", ".join(f"{w} {next(iter(v))}" for w, v in sorted(by_worker.items())) + ")"
        out.append(message)
    return out


def _transient_warnings(snaps: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = []
    for name in _TRANSIENT:
        readings = [s["noise"][name] for s in snaps.values() if isinstance(s.get("noise"), Mapping) and isinstance(s["noise"].get(name), Mapping)]
        warned = [r for r in readings if r.get("state") == WARN]
        if warned:
            title = _TRANSIENT[name]
            out.append(f"{title} warned before {len(warned)} of {_runs(len(readings))} (e.g. {warned[0].get('value')})")
    return out


def _file_warnings(snaps: Mapping[str, Mapping[str, Any]], workers: Mapping[str, str], between_workers: bool = True,
                   groups: Mapping[str, str] | None = None) -> list[str]:
    """Files the tests execute that changed between runs of a worker, or differ between
    workers. With `groups` (run label -> a group, e.g. the context whose link order built the
    program), files are compared only within a group: a rebuild per context is expected."""
    # path -> group -> worker -> Counter of digests over that worker's runs in the group
    seen: dict[str, dict[str, dict[str, Counter[str | None]]]] = {}
    for label, s in snaps.items():
        files = s.get("files")
        if not isinstance(files, Mapping):
            continue
        group = (groups or {}).get(label, "")
        for path, digest in files.items():
            seen.setdefault(str(path), {}).setdefault(group, {}).setdefault(workers[label], Counter())[digest] += 1
    out = []
    for path in sorted(seen):
        for group, per_worker in sorted(seen[path].items()):
            within = f" of {group}" if group else ""
            for worker, digests in sorted(per_worker.items()):
                if len(digests) > 1:
                    versions = ", ".join(f"{_short(d)} in {_runs(n)}" for d, n in digests.most_common())
                    out.append(f"{path} changed between runs{within} on worker {worker}: {versions}")
            if between_workers and len(per_worker) > 1 and len({d for c in per_worker.values() for d in c}) > 1:
                by_digest: dict[str, list[str]] = {}
                for worker, digests in sorted(per_worker.items()):
                    by_digest.setdefault(" / ".join(_short(d) for d, _ in digests.most_common()), []).append(worker)
                listing = "; ".join(f"{digest} on {', '.join(ws)}" for digest, ws in by_digest.items())
                out.append(f"{path} differs between workers{' in runs' + within if group else ''}: {listing}")
    return out


def compare_snapshots(snapshots: Mapping[str, Mapping[str, Any] | None], *, between_workers: bool = True,
                      file_groups: Mapping[str, str] | None = None) -> list[str]:
    """Warnings about an experiment's environment, from its runs' snapshots (run label -> snapshot).

    Labels "worker:run ..." group runs by worker (else the snapshot's "worker" or "host").
    Says which settings differ between runs (with how many runs had each value), which
    time-varying sources warned before some runs, and which files the tests execute changed
    between runs of a worker or differ between workers.

    between_workers=False leaves differences between workers out (the analysis of a fleet
    reports them through the identity diagnostic, analyze/identity.py) and keeps the changes
    between runs of one worker. file_groups: run label -> group within which the files are
    compared (the context of an experiment that rebuilds its programs per link order).
    """
    snaps = {str(label): s for label, s in snapshots.items() if isinstance(s, Mapping)}
    if not snaps:
        return []
    workers = {label: worker_of(label, s) for label, s in snaps.items()}
    return _setting_warnings(snaps, workers, between_workers) + _transient_warnings(snaps) + _file_warnings(snaps, workers, between_workers, file_groups)
