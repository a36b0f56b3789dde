"""`benchsage env` as tables or JSON: the machine's noise sources and how trials are measured on
it, rendered from the readings the command line got from the executor side (agent/noise.py,
execute/measuring.py), in which every title, value, state and advice is already written.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Protocol, Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchsage.vocabulary import OFF, OK, READING_STATES, UNKNOWN, VERSION, WARN

_STATE_STYLE = {OK: "green", WARN: "bold yellow", UNKNOWN: "dim", OFF: "dim"}
NULL = "–"
_WIDE = 140  # columns from which the advice fits in the table


class Reading(Protocol):
    """What this module renders of a reading of the host, a noise source's or an aspect of how
    trials are measured (agent/noise.py's Reading, which execute/measuring.py gives too)."""

    @property
    def name(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def value(self) -> str | None: ...
    @property
    def state(self) -> str: ...  # the vocabulary's OK, WARN, UNKNOWN or OFF
    @property
    def advice(self) -> str | None: ...
    @property
    def data(self) -> Mapping[str, Any]: ...  # the numbers behind the value; "reason" when UNKNOWN


class MeasurementDescription(Protocol):
    """What this module renders of how trials are measured on a host (execute/measuring.py)."""

    @property
    def agent(self) -> Mapping[str, Any] | None: ...  # the agent's own words; None when not known
    @property
    def aspects(self) -> Sequence[Reading]: ...
    @property
    def metrics(self) -> Sequence[str]: ...  # what each trial records there
    @property
    def missing(self) -> Sequence[str]: ...  # the optional metrics it does not
    @property
    def leftovers(self) -> str | None: ...  # what becomes of the processes a trial leaves running


def _plain(value: Any) -> Any:
    """JSON-ready: mapping keys as strings, tuples as lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _reading_json(r: Reading) -> dict[str, Any]:
    return {
        "name": r.name,
        "title": r.title,
        "value": r.value,
        "state": r.state,
        "advice": r.advice,
        "data": _plain(r.data),
    }


def env_json(readings: Sequence[Reading], measurement: MeasurementDescription | None = None) -> dict[str, Any]:
    """`benchsage env --json`: every reading, and how many sources are in each state; with
    `measurement`, how trials are measured here: the local agent's own words (`agent`, its
    hello's measurement) and a reading of each aspect with advice."""
    counts = Counter(r.state for r in readings)
    doc: dict[str, Any] = {
        "tool": {"name": "benchsage", "version": VERSION},
        "sources": [_reading_json(r) for r in readings],
        "summary": {state: counts.get(state, 0) for state in READING_STATES},
    }
    if measurement is not None:
        doc["measurement"] = {
            "agent": _plain(measurement.agent) if measurement.agent is not None else None,
            "aspects": [_reading_json(r) for r in measurement.aspects],
        }
    return doc


def _note(r: Reading) -> str:
    """Advice for a warning; for an unknown source, why it could not be read."""
    if r.advice:
        return r.advice
    return str(r.data.get("reason", "")) if r.state == UNKNOWN else ""


def _readings(readings: Sequence[Reading], console: Console, head: str) -> None:
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
            Text(r.title),
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
                label = r.title + (" (unknown)" if r.state == UNKNOWN else "")
                line = Text(f"{label}: ", style="bold" if r.state == WARN else "dim")
                line.append(_note(r), style="dim" if r.state == UNKNOWN else "")
                console.print(line)


def render_env(readings: Sequence[Reading], console: Console, measurement: MeasurementDescription | None = None) -> None:
    """`benchsage env`: one row per noise source, with advice where a setting adds noise; then,
    with `measurement`, how trials are measured here (cgroups, leftovers, energy, CPUs)."""
    _readings(readings, console, "source")
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
    _readings(measurement.aspects, console, "aspect")
    console.print()
    console.print(Text(measurement_summary(measurement)))


def measurement_summary(measurement: MeasurementDescription) -> str:
    """One sentence: which metrics a trial records here, and what happens to its leftovers."""
    if measurement.agent is None:
        return "How trials are measured here is not known: " + _note(measurement.aspects[0]) if measurement.aspects else ""
    text = f"Each trial here records {', '.join(measurement.metrics)}"
    if measurement.missing:
        text += f" (not {', '.join(measurement.missing)}: see above)"
    return text + f"; processes it leaves running: {measurement.leftovers}."
