"""memtier_benchmark with --json-out-file=FILE: the totals of its "ALL STATS" (operations per
second, hits and misses per second, latency mean, p50, p99, p99.9, kilobytes per second), read
from the results file the trial leaves in its working directory.

With --rate-limiting=N (operations per second of each connection) the rate asked is N times
--clients (default 50) times --threads (default 4), against the achieved operations per second.
Written from memtier_benchmark's source (run_stats.cpp), not from a captured run.
"""

from __future__ import annotations

import json
from typing import Any

from benchsage.parsers import units
from benchsage.parsers.reading import (HIGHER, LOWER, CommandError, Metric, ParseError, Parser, TrialOutput, option, rate_values,
                                       with_rate)

TOOL = "memtier"
_FILE = ("--json-out-file",)
_RATE = ("--rate-limiting", "--rate")
DEFAULT_CLIENTS, DEFAULT_THREADS = 50, 4
_PERCENTILES = {"p50": "p50.00", "p99": "p99.00", "p999": "p99.90"}


def _file(command: str) -> str:
    name = option(command, *_FILE)
    if not name:
        raise CommandError("memtier writes the totals the parser reads only to a file: add --json-out-file=NAME to the command")
    return name


def _metrics(command: str) -> tuple[Metric, ...]:
    _file(command)
    latency = tuple(Metric(n, "s", LOWER) for n in ("latency_mean", *_PERCENTILES))
    rates = (Metric("ops", "1/s", HIGHER), Metric("hits", "1/s", HIGHER), Metric("misses", "1/s", LOWER),
             Metric("transfer", "B/s", HIGHER))
    return with_rate(rates + latency, option(command, *_RATE) is not None)


def _number(totals: dict[str, Any], key: str, name: str) -> float:
    value = totals.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ParseError(f"{TOOL} results file {name!r} has no number at \"ALL STATS\".\"Totals\".{key!r}")
    try:
        return units.to_base(str(value), "count")
    except units.UnitError:
        raise ParseError(f"{TOOL} results file {name!r}: \"Totals\".{key!r} is {value!r}, not a number") from None


def parse(output: TrialOutput) -> dict[str, float]:
    name = _file(output.command)
    data = output.files.get(name)
    if data is None:
        raise ParseError(f"{TOOL} results file {name!r} (--json-out-file) is missing after the trial")
    try:
        doc = json.loads(data)
        totals = doc["ALL STATS"]["Totals"]
    except (ValueError, KeyError, TypeError):
        raise ParseError(f"{TOOL} results file {name!r} has no \"ALL STATS\".\"Totals\" object "
                         f"(it starts: {data[:60].decode(errors='replace')!r})") from None
    mean_key = "Average Latency" if "Average Latency" in totals else "Latency"  # before 2.0: "Latency"
    values = {
        "ops": _number(totals, "Ops/sec", name),
        "hits": _number(totals, "Hits/sec", name),
        "misses": _number(totals, "Misses/sec", name),
        "transfer": units.convert(_number(totals, "KB/sec", name), "KiB/s", "B/s"),  # bytes / 1024 in run_stats.cpp
        "latency_mean": units.convert(_number(totals, mean_key, name), "ms", "s"),
    }
    percentiles = totals.get("Percentile Latencies")
    if isinstance(percentiles, dict):
        for metric, key in _PERCENTILES.items():
            if key in percentiles:
                values[metric] = units.convert(_number(percentiles, key, name), "ms", "s")
    clients = option(output.command, "--clients", "-c") or str(DEFAULT_CLIENTS)
    threads = option(output.command, "--threads", "-t") or str(DEFAULT_THREADS)
    if not (clients.isdigit() and threads.isdigit()):
        raise ParseError(f"{TOOL}: --clients {clients!r} and --threads {threads!r} must be numbers to know the rate asked")
    values.update(rate_values(TOOL, option(output.command, *_RATE), values["ops"], float(clients) * float(threads)))
    return values


PARSER = Parser(TOOL, ("p99", "ops"), "memtier_benchmark --json-out-file=F: ops/s, hits/s, misses/s, latency mean, p50, p99, p99.9",
                _metrics, parse, lambda command: (_file(command),))
