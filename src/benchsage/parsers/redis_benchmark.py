"""redis-benchmark --csv (Redis 6.2 and later, with its header row): for each test named with -t,
requests per second and the latency mean, min, p50, p95, p99 and max.

Its metrics are named after the tests (`set_rps`, `get_p99`), so the command must name them
with -t; a row is matched by the first word of its test name, lower case ("LPUSH (needed to
benchmark LRANGE)" is an lpush row; of two rows for one test, the last counts).
"""

from __future__ import annotations

import csv
import io

from benchsage.parsers import units
from benchsage.parsers.reading import (HIGHER, LOWER, CommandError, Metric, ParseError, Parser, TrialOutput, flag, missing, option,
                                       read)

TOOL = "redis-benchmark"
# column of the CSV -> (metric suffix, unit of the column)
COLUMNS = {
    "rps": ("rps", "1/s"),
    "avg_latency_ms": ("latency_mean", "ms"),
    "min_latency_ms": ("latency_min", "ms"),
    "p50_latency_ms": ("p50", "ms"),
    "p95_latency_ms": ("p95", "ms"),
    "p99_latency_ms": ("p99", "ms"),
    "max_latency_ms": ("latency_max", "ms"),
}


def tests(command: str) -> tuple[str, ...]:
    named = option(command, "-t")
    if not flag(command, "--csv"):
        raise CommandError("redis-benchmark prints a table the parser reads only with --csv: add it to the command")
    if named is None:
        raise CommandError("redis-benchmark's metrics are named after its tests: name them with -t (e.g. -t set,get)")
    out = tuple(dict.fromkeys(t.strip().lower() for t in named.split(",") if t.strip()))
    if not out:
        raise CommandError(f"redis-benchmark -t {named!r} names no test")
    return out


def _metrics(command: str) -> tuple[Metric, ...]:
    return tuple(Metric(f"{t}_{suffix}", "1/s" if suffix == "rps" else "s", HIGHER if suffix == "rps" else LOWER)
                 for t in tests(command) for suffix, _ in COLUMNS.values())


def _primary(command: str) -> tuple[str, ...]:
    return tuple(f"{t}_p99" for t in tests(command))


def parse(output: TrialOutput) -> dict[str, float]:
    text = output.stdout
    rows = list(csv.reader(io.StringIO(text.strip())))
    header = next((i for i, row in enumerate(rows) if row and row[0] == "test"), None)
    if header is None:
        raise missing(TOOL, "CSV header row (\"test\",\"rps\",...; was --csv given, is it Redis 6.2 or later?)", text)
    names = rows[header]
    values: dict[str, float] = {}
    for row in rows[header + 1:]:
        if not row:
            continue
        line = ",".join(f'"{cell}"' for cell in row)
        if len(row) != len(names):
            raise ParseError(f"{TOOL} output line {line!r} has {len(row)} columns, the header {len(names)}")
        test = row[0].split()[0].lower() if row[0].strip() else ""
        for column, cell in zip(names[1:], row[1:]):
            if column in COLUMNS:
                suffix, unit = COLUMNS[column]
                values[f"{test}_{suffix}"] = read(TOOL, line, lambda t, u=unit: units.to_base(t, u), cell)
    return values


PARSER = Parser(TOOL, _primary, "redis-benchmark --csv -t T,...: per test requests/s and latency mean, min, p50, p95, p99, max",
                _metrics, parse)
