"""wrk2 (github.com/giltene/wrk2) with --latency: its HdrHistogram latency distribution (the
rows before the "Detailed Percentile spectrum", which is not read), the summary wrk prints too,
and the rate the command asked with -R/--rate against the one achieved.

wrk2 corrects for coordinated omission: its latencies are measured from when each request
should have been sent by the constant-rate schedule, so a server that falls behind shows it.
"""

from __future__ import annotations

from benchsage.parsers import wrk
from benchsage.parsers.reading import LOWER, CommandError, Metric, Parser, TrialOutput, missing, option, rate_values, with_rate

TOOL = "wrk2"
PERCENTILES = {**wrk.PERCENTILES, "p999": "99.9"}
_RATE = ("-R", "--rate")


def _metrics(command: str) -> tuple[Metric, ...]:
    wrk.needs_latency(TOOL, command)
    if option(command, *_RATE) is None:
        raise CommandError("wrk2 needs the rate it should send at: add -R N (requests/s, all connections together)")
    return with_rate((Metric(name, "s", LOWER) for name in PERCENTILES), True) + wrk.COMMON


def parse(output: TrialOutput) -> dict[str, float]:
    rows = wrk.distribution(TOOL, output.stdout)
    values = wrk.summary(TOOL, output.stdout)
    for name, p in PERCENTILES.items():
        value = wrk.percentile(rows, p)
        if value is None:
            raise missing(TOOL, f"{float(p):.3f}% row in its 'Latency Distribution'", output.stdout)
        values[name] = value
    values.update(rate_values(TOOL, option(output.command, *_RATE), values["rps"]))
    return values


PARSER = Parser(TOOL, ("p99", "rps"), "wrk2 -R N --latency: corrected latency percentiles, requests/s against the rate asked",
                _metrics, parse)
