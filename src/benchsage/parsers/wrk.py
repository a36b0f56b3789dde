"""wrk (github.com/wg/wrk) with --latency: the latency distribution, mean and max, requests and
bytes per second, and the errors it counted.

wrk prints each duration in the unit that suits it, so one table may hold 850.00us, 4.30ms and
1.02s; sizes with binary prefixes written without the i (13.41MB is 13.41 MiB); counts with
metric prefixes (12.34k).
"""

from __future__ import annotations

import re

from benchsage.parsers import units
from benchsage.parsers.reading import HIGHER, LOWER, CommandError, Metric, Parser, TrialOutput, flag, missing, read, search

TOOL = "wrk"
PERCENTILES = {"p50": "50", "p75": "75", "p90": "90", "p99": "99"}
COMMON = (
    Metric("latency_mean", "s", LOWER),
    Metric("latency_max", "s", LOWER),
    Metric("rps", "1/s", HIGHER),
    Metric("transfer", "B/s", HIGHER),
    Metric("errors", "", LOWER),
)
_PERCENTILE_ROW = re.compile(r"^\s*([0-9.]+)%\s+(\S+)\s*$")


def needs_latency(tool: str, command: str) -> None:
    if not flag(command, "--latency", "-L"):
        raise CommandError(f"{tool} prints its latency distribution only with --latency: add it to the command")


def _metrics(command: str) -> tuple[Metric, ...]:
    needs_latency(TOOL, command)
    return tuple(Metric(name, "s", LOWER) for name in PERCENTILES) + COMMON


def distribution(tool: str, text: str) -> dict[str, float]:
    """The rows of the "Latency Distribution" table: percentile text ("99", "99.900") -> seconds."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("Latency Distribution")), None)
    if start is None:
        raise missing(tool, "'Latency Distribution' section (was --latency given?)", text)
    rows: dict[str, float] = {}
    for line in lines[start + 1:]:
        match = _PERCENTILE_ROW.match(line)
        if match is None:
            break
        rows[match.group(1)] = read(tool, line, units.time, match.group(2))
    return rows


def percentile(rows: dict[str, float], wanted: str) -> float | None:
    """The row of a percentile whatever its decimals ("99" or "99.000")."""
    for key, value in rows.items():
        if float(key) == float(wanted):
            return value
    return None


def summary(tool: str, text: str) -> dict[str, float]:
    """What wrk and wrk2 print alike: the thread stats' latency, the rates and the errors."""
    latency = search(tool, r"^\s*Latency\s+(\S+)\s+(\S+)\s+(\S+)\s+\S+%\s*$", text, "'Latency' row of the thread stats")
    row = latency.group(0)
    rps = search(tool, r"^Requests/sec:\s*(\S+)\s*$", text, "'Requests/sec:' line")
    transfer = search(tool, r"^Transfer/sec:\s*(\S+)\s*$", text, "'Transfer/sec:' line")
    errors = 0.0
    socket = re.search(r"^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)\s*$", text, re.MULTILINE)
    if socket:
        errors += sum(float(g) for g in socket.groups())
    status = re.search(r"^\s*Non-2xx or 3xx responses: (\d+)\s*$", text, re.MULTILINE)
    if status:
        errors += float(status.group(1))
    return {
        "latency_mean": read(tool, row, units.time, latency.group(1)),
        "latency_max": read(tool, row, units.time, latency.group(3)),
        "rps": read(tool, rps.group(0), units.count, rps.group(1)),
        "transfer": read(tool, transfer.group(0), units.binary_bytes, transfer.group(1)),
        "errors": errors,
    }


def parse(output: TrialOutput) -> dict[str, float]:
    rows = distribution(TOOL, output.stdout)
    values = summary(TOOL, output.stdout)
    for name, p in PERCENTILES.items():
        value = percentile(rows, p)
        if value is None:
            raise missing(TOOL, f"{p}% row in its 'Latency Distribution'", output.stdout)
        values[name] = value
    return values


PARSER = Parser(TOOL, ("p99", "rps"), "wrk --latency: latency percentiles, mean and max, requests/s, bytes/s, errors",
                _metrics, parse)
