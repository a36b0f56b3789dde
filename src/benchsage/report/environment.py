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
from benchsage.agent.noise import OK, SOURCES, STATES, UNKNOWN, WARN, Reading
from benchsage.report.measurement import OFF
from benchsage.report.measurement import TITLES as MEASUREMENT_TITLES

_TITLES = {source.name: source.title for source in SOURCES}
_STATE_STYLE = {OK: "green", WARN: "bold yellow", UNKNOWN: "dim", OFF: "dim"}
NULL = "–"
_WIDE = 140  # columns from which the advice fits in the table



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



