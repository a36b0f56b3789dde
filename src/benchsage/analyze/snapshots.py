"""Snapshot comparison: what changed between an experiment's runs, and between its workers.

Each run's snapshot (agent/snapshot.py, recorded in the journal) holds the host's settings,
its noise readings and the sha256 of the files the tests execute. Settings that differ
between runs, time-varying sources that warned before some runs, and files that changed are
warnings of the analysis; differences between workers are the identity diagnostic's
(analyze/identity.py) when between_workers is False.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Mapping

from benchsage.analyze.identity import STABLE_FIELDS, worker_of
from benchsage.analyze.notes import FileChanged, FileDiffers, NoiseWarned, SettingChanged, SettingDiffers
from benchsage.vocabulary import WARN

# Snapshot settings that should be the same in every run of an experiment (shared with the
# identity diagnostic). Load and time differ from run to run by nature and are not listed.
_SETTINGS = STABLE_FIELDS
# Noise readings that change over time (their names in the snapshot's "noise"): a warning when
# they warned (WARN) in some runs.
_TRANSIENT = ("load", "memory", "swap", "thermal_throttle")


def _key(value: Any) -> str:
    """A value's identity when counting the runs that had it (None, "1", 1 and 1.0 differ)."""
    return json.dumps(value, sort_keys=True, default=repr)


def _counted(values: Any) -> tuple[tuple[Any, int], ...]:
    """Each distinct value with how many times it occurs, most first (ties: first seen first)."""
    first: dict[str, Any] = {}
    counts: Counter[str] = Counter()
    for value in values:
        key = _key(value)
        first.setdefault(key, value)
        counts[key] += 1
    return tuple((first[key], n) for key, n in counts.most_common())


def _setting_warnings(snaps: Mapping[str, Mapping[str, Any]], workers: Mapping[str, str], between_workers: bool = True) -> list[Any]:
    out: list[Any] = []
    several = len(set(workers.values())) > 1
    for key in _SETTINGS:
        values = {label: s[key] for label, s in snaps.items() if key in s}
        counted = _counted(values.values())
        if len(counted) < 2:
            continue
        if several and not between_workers:
            # Differences between workers are the identity diagnostic's: only changes within one.
            for worker in sorted(set(workers.values())):
                own = _counted(v for label, v in values.items() if workers[label] == worker)
                if len(own) > 1:
                    out.append(SettingChanged(key, worker, own))
            continue
        by_worker: dict[str, dict[str, Any]] = {}
        for label, value in values.items():
            by_worker.setdefault(workers[label], {}).setdefault(_key(value), value)
        each = None
        if len(by_worker) > 1 and all(len(v) == 1 for v in by_worker.values()):
            each = tuple((w, next(iter(v.values()))) for w, v in sorted(by_worker.items()))
        out.append(SettingDiffers(key, counted, each))
    return out


def _transient_warnings(snaps: Mapping[str, Mapping[str, Any]]) -> list[NoiseWarned]:
    out = []
    for name in _TRANSIENT:
        readings = [s["noise"][name] for s in snaps.values() if isinstance(s.get("noise"), Mapping) and isinstance(s["noise"].get(name), Mapping)]
        warned = [r for r in readings if r.get("state") == WARN]
        if warned:
            out.append(NoiseWarned(name, len(warned), len(readings), warned[0].get("value")))
    return out


def _file_warnings(snaps: Mapping[str, Mapping[str, Any]], workers: Mapping[str, str], between_workers: bool = True,
                   groups: Mapping[str, str] | None = None) -> list[Any]:
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
    out: list[Any] = []
    for path in sorted(seen):
        for group, per_worker in sorted(seen[path].items()):
            for worker, digests in sorted(per_worker.items()):
                if len(digests) > 1:
                    out.append(FileChanged(path, group, worker, tuple(digests.most_common())))
            if between_workers and len(per_worker) > 1 and len({d for c in per_worker.values() for d in c}) > 1:
                listing = tuple((worker, tuple(d for d, _ in digests.most_common())) for worker, digests in sorted(per_worker.items()))
                out.append(FileDiffers(path, group, listing))
    return out


def compare_snapshots(snapshots: Mapping[str, Mapping[str, Any] | None], *, between_workers: bool = True,
                      file_groups: Mapping[str, str] | None = None) -> list[Any]:
    """Warnings about an experiment's environment, from its runs' snapshots (run label -> snapshot).

    Labels "worker:run ..." group runs by worker (else the snapshot's "worker" or "host").
    Says which settings differ between runs (with how many runs had each value), which
    time-varying sources warned before some runs, and which files the tests execute changed
    between runs of a worker or differ between workers (notes of analyze/notes.py).

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
