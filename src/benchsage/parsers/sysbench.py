"""sysbench (1.0): from the "General statistics" every test prints, events per second (total
number of events / total time, so that cpu, memory, fileio, threads and oltp tests read alike),
and from "Latency (ms)" the min, mean, max and the percentile --percentile asks (default 95:
`p95`); OLTP tests add transactions and queries per second as printed.
"""

from __future__ import annotations

from benchsage.parsers import units
from benchsage.parsers.reading import (HIGHER, LOWER, CommandError, Metric, ParseError, Parser, TrialOutput, number, option, read,
                                       search)

TOOL = "sysbench"


def _percentile(command: str) -> str:
    given = option(command, "--percentile") or "95"
    if not given.isdigit() or not 1 <= int(given) <= 100:
        raise CommandError(f"sysbench --percentile={given}: the parser reads a percentile from 1 to 100 (0 turns it off)")
    return given


def _metrics(command: str) -> tuple[Metric, ...]:
    latency = ("latency_min", "latency_mean", "latency_max", f"p{_percentile(command)}")
    return ((Metric("events_per_second", "1/s", HIGHER),) + tuple(Metric(n, "s", LOWER) for n in latency)
            + (Metric("tps", "1/s", HIGHER, optional=True), Metric("qps", "1/s", HIGHER, optional=True)))


def _latency(text: str, label: str) -> float:
    found = search(TOOL, rf"^\s*{label}:\s*(\S+)\s*$", text, f"'{label}:' row under 'Latency (ms)'")
    return read(TOOL, found.group(0), lambda t: units.to_base(t, "ms"), found.group(1))


def parse(output: TrialOutput) -> dict[str, float]:
    text = output.stdout
    total = search(TOOL, r"^\s*total time:\s*(\S+)\s*$", text, "'total time:' line of its 'General statistics'")
    events = search(TOOL, r"^\s*total number of events:\s*(\S+)\s*$", text, "'total number of events:' line")
    seconds = read(TOOL, total.group(0), units.time, total.group(1))
    if seconds <= 0:
        raise ParseError(f"{TOOL} output line {total.group(0).strip()!r}: a total time of 0 gives no rate")
    percentile = _percentile(output.command)
    values = {
        "events_per_second": read(TOOL, events.group(0), number, events.group(1)) / seconds,
        "latency_min": _latency(text, "min"),
        "latency_mean": _latency(text, "avg"),
        "latency_max": _latency(text, "max"),
        f"p{percentile}": _latency(text, f"{percentile}th percentile"),
    }
    for name, label in (("tps", "transactions"), ("qps", "queries")):
        found = search(TOOL, rf"^\s*{label}:\s*\S+\s+\((\S+) per sec\.\)\s*$", text, label) if f"{label}:" in text else None
        if found is not None:
            values[name] = read(TOOL, found.group(0), number, found.group(1))
    return values


PARSER = Parser(TOOL, ("events_per_second",), "sysbench: events/s, latency min, mean, max and p95 (--percentile); OLTP tps, qps",
                _metrics, parse)
