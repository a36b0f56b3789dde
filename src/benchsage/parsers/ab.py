"""ab (ApacheBench): requests per second, the mean time per request, the percentiles of its
"Percentage of the requests served within a certain time (ms)" table (p50, p90, p99 and the
longest request), bytes per second received, and errors (failed plus non-2xx responses).

ab prints whole milliseconds in its percentile table, and kilobytes of 1024 bytes.
"""

from __future__ import annotations

import re

from benchsage.parsers import units
from benchsage.parsers.reading import HIGHER, LOWER, Metric, Parser, TrialOutput, missing, number, read, search

TOOL = "ab"
PERCENTILES = {"p50": "50", "p90": "90", "p99": "99", "latency_max": "100"}


def _metrics(command: str) -> tuple[Metric, ...]:
    return ((Metric("rps", "1/s", HIGHER), Metric("latency_mean", "s", LOWER))
            + tuple(Metric(name, "s", LOWER) for name in PERCENTILES)
            + (Metric("transfer", "B/s", HIGHER), Metric("errors", "", LOWER)))


def _ms(line: str, text: str) -> float:
    return read(TOOL, line, lambda t: units.to_base(t, "ms"), text)


def parse(output: TrialOutput) -> dict[str, float]:
    text = output.stdout
    rps = search(TOOL, r"^Requests per second:\s+(\S+) \[#/sec\] \(mean\)\s*$", text, "'Requests per second:' line")
    mean = search(TOOL, r"^Time per request:\s+(\S+) \[ms\] \(mean\)\s*$", text, "'Time per request: ... [ms] (mean)' line")
    rate = search(TOOL, r"^Transfer rate:\s+(\S+) \[Kbytes/sec\] received\s*$", text, "'Transfer rate:' line")
    failed = search(TOOL, r"^Failed requests:\s+(\d+)", text, "'Failed requests:' line")
    non2xx = re.search(r"^Non-2xx responses:\s+(\d+)\s*$", text, re.MULTILINE)
    values = {
        "rps": read(TOOL, rps.group(0), number, rps.group(1)),
        "latency_mean": _ms(mean.group(0), mean.group(1)),
        "transfer": read(TOOL, rate.group(0), lambda t: units.to_base(t, "KiB/s"), rate.group(1)),
        "errors": float(failed.group(1)) + (float(non2xx.group(1)) if non2xx else 0.0),
    }
    if "Percentage of the requests served" not in text:
        raise missing(TOOL, "'Percentage of the requests served' table", text)
    for name, p in PERCENTILES.items():
        row = search(TOOL, rf"^\s*{p}%\s+(\d+)", text, f"{p}% row of its 'Percentage of the requests served' table")
        values[name] = _ms(row.group(0), row.group(1))
    return values


PARSER = Parser(TOOL, ("p99", "rps"), "ab: requests/s, mean time per request, p50, p90, p99, longest, bytes/s, errors",
                _metrics, parse)
