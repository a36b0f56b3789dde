"""The machine's noise sources and how trials are measured on it, for `benchsage env` (tables,
or JSON), and the comparison of the environment snapshots of an experiment's runs that analyze
turns into warnings: settings that changed between runs, and test files whose content differs
between runs or workers.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchsage import __version__
from benchsage.analyze.identity import STABLE_FIELDS, worker_of
from benchsage.execute.noise import OK, SOURCES, STATES, UNKNOWN, WARN, Reading
from benchsage.report.measurement import OFF
from benchsage.report.measurement import TITLES as MEASUREMENT_TITLES

_TITLES = {source.name: source.title for source in SOURCES}
_STATE_STYLE = {OK: "green", WARN: "bold yellow", UNKNOWN: "dim", OFF: "dim"}
NULL = "–"
_WIDE = 140  # columns from which the advice fits in the table

# Snapshot settings that should be the same in every run of an experiment, with the words a
# warning uses for them (shared with the identity diagnostic). Load and time differ from run to
# run by nature and are not listed.
_SETTINGS = STABLE_FIELDS
# Noise readings that change over time: a warning when they warned in some runs.
_TRANSIENT = ("load", "memory", "swap", "thermal_throttle")


def _plain(value: Any) -> Any:
    """JSON-ready: mapping keys as strings, tuples as lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _reading_json(r: Reading, titles: Mapping[str, str]) -> dict[str, Any]:
    return {
        "name": r.name,
        "title": titles.get(r.name, r.name),
        "value": r.value,
        "state": r.state,
        "advice": r.advice,
        "data": _plain(r.data),
    }


def env_json(
    readings: Sequence[Reading],
    measurement: Sequence[Reading] | None = None,
    agent: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`benchsage env --json`: every reading, and how many sources are in each state; with
    `measurement` (report/measurement.py), how trials are measured here: the local agent's own
    words (`agent`, its hello's measurement) and a reading of each aspect with advice."""
    counts = Counter(r.state for r in readings)
    doc: dict[str, Any] = {
        "tool": {"name": "benchsage", "version": __version__},
        "sources": [_reading_json(r, _TITLES) for r in readings],
        "summary": {state: counts.get(state, 0) for state in STATES},
    }
    if measurement is not None:
        doc["measurement"] = {
            "agent": _plain(agent) if agent is not None else None,
            "aspects": [_reading_json(r, MEASUREMENT_TITLES) for r in measurement],
        }
    return doc


def _note(r: Reading) -> str:
    """Advice for a warning; for an unknown source, why it could not be read."""
    if r.advice:
        return r.advice
    return str(r.data.get("reason", "")) if r.state == UNKNOWN else ""


def _readings(readings: Sequence[Reading], titles: Mapping[str, str], console: Console, head: str) -> None:
    """One row per reading; on a wide console the advice is a fourth column, on a narrow one
    (a pipe is 80 columns) it follows the table, one paragraph per reading, warnings first."""
    wide = console.width >= _WIDE
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column(head, no_wrap=True)
    table.add_column("value", ratio=1 if not wide else None)
    table.add_column("state", no_wrap=True)
    if wide:
        table.add_column("advice", ratio=1)
    for r in readings:
        row = [
            Text(titles.get(r.name, r.name)),
            Text(r.value if r.value is not None else NULL),
            Text(r.state, style=_STATE_STYLE.get(r.state, "")),
        ]
        if wide:
            row.append(Text(_note(r), style="dim" if r.state == UNKNOWN else ""))
        table.add_row(*row)
    console.print(table)
    if not wide:
        console.print()
        for r in sorted(readings, key=lambda r: r.state != WARN):  # warnings first, stable
            if _note(r):
                label = titles.get(r.name, r.name) + (" (unknown)" if r.state == UNKNOWN else "")
                line = Text(f"{label}: ", style="bold" if r.state == WARN else "dim")
                line.append(_note(r), style="dim" if r.state == UNKNOWN else "")
                console.print(line)


def render_env(readings: Sequence[Reading], console: Console, measurement: Sequence[Reading] | None = None) -> None:
    """`benchsage env`: one row per noise source, with advice where a setting adds noise; then,
    with `measurement`, how trials are measured here (cgroups, leftovers, energy, CPUs)."""
    _readings(readings, _TITLES, console, "source")
    counts = Counter(r.state for r in readings)
    if counts[WARN]:
        summary = f"{counts[WARN]} of {len(readings)} sources can add noise to measurements: see the advice above."
    else:
        summary = f"No source of noise found among the {len(readings) - counts[UNKNOWN]} that could be read."
    if counts[UNKNOWN]:
        summary += f" {counts[UNKNOWN]} could not be read."
    console.print()
    console.print(Text(summary))
    if measurement is None:
        return
    console.print()
    console.print(Text("How trials are measured here (as the local agent sees it)", style="bold"))
    _readings(measurement, MEASUREMENT_TITLES, console, "aspect")
    console.print()
    console.print(Text(measurement_summary(measurement)))


def measurement_summary(measurement: Sequence[Reading]) -> str:
    """One sentence: which metrics a trial gets here beyond wait4's, and what happens to leftovers."""
    by = {r.name: r for r in measurement}
    if "cgroups" not in by:
        return "How trials are measured here is not known: " + _note(measurement[0]) if measurement else ""
    extra = (["peak_memory", "cpu_time"] if by["cgroups"].state == OK else []) + (["energy"] if by["energy"].state == OK else [])
    metrics = "wall_time, user_time, sys_time, max_rss" + "".join(f", {m}" for m in extra)
    missing = [m for m in ("peak_memory", "cpu_time", "energy") if m not in extra]
    text = f"Each trial here records {metrics}"
    if missing:
        text += f" (not {', '.join(missing)}: see above)"
    leftovers = by["leftovers"]
    text += f"; processes it leaves running: {leftovers.value}."
    return text


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
            title = _TITLES.get(name, name).lower()
            out.append(f"{title} warned before {len(warned)} of {_runs(len(readings))} (e.g. {warned[0].get('value')})")
    return out


def _file_warnings(snaps: Mapping[str, Mapping[str, Any]], workers: Mapping[str, str], between_workers: bool = True) -> list[str]:
    # path -> worker -> Counter of digests over that worker's runs
    seen: dict[str, dict[str, Counter[str | None]]] = {}
    for label, s in snaps.items():
        files = s.get("files")
        if not isinstance(files, Mapping):
            continue
        for path, digest in files.items():
            seen.setdefault(str(path), {}).setdefault(workers[label], Counter())[digest] += 1
    out = []
    for path in sorted(seen):
        per_worker = seen[path]
        for worker, digests in sorted(per_worker.items()):
            if len(digests) > 1:
                versions = ", ".join(f"{_short(d)} in {_runs(n)}" for d, n in digests.most_common())
                out.append(f"{path} changed between runs on worker {worker}: {versions}")
        if between_workers and len(per_worker) > 1 and len({d for c in per_worker.values() for d in c}) > 1:
            groups: dict[str, list[str]] = {}
            for worker, digests in sorted(per_worker.items()):
                groups.setdefault(" / ".join(_short(d) for d, _ in digests.most_common()), []).append(worker)
            listing = "; ".join(f"{digest} on {', '.join(ws)}" for digest, ws in groups.items())
            out.append(f"{path} differs between workers: {listing}")
    return out


def compare_snapshots(snapshots: Mapping[str, Mapping[str, Any] | None], *, between_workers: bool = True) -> list[str]:
    """Warnings about an experiment's environment, from its runs' snapshots (run label -> snapshot).

    Labels "worker:run ..." group runs by worker (else the snapshot's "worker" or "host").
    Says which settings differ between runs (with how many runs had each value), which
    time-varying sources warned before some runs, and which files the tests execute changed
    between runs of a worker or differ between workers.

    between_workers=False leaves differences between workers out (the analysis of a fleet
    reports them through the identity diagnostic, analyze/identity.py) and keeps the changes
    between runs of one worker.
    """
    snaps = {str(label): s for label, s in snapshots.items() if isinstance(s, Mapping)}
    if not snaps:
        return []
    workers = {label: worker_of(label, s) for label, s in snaps.items()}
    return _setting_warnings(snaps, workers, between_workers) + _transient_warnings(snaps) + _file_warnings(snaps, workers, between_workers)

