"""pgbench: transactions per second (without the initial connection time), latency average and
stddev, failed transactions, and with --rate/-R the rate asked against the tps achieved and the
schedule lag (how far transactions started behind their schedule).
"""

from __future__ import annotations

import re

from benchsage.parsers import units
from benchsage.parsers.reading import HIGHER, LOWER, Metric, Parser, TrialOutput, number, option, rate_values, read, search, with_rate

TOOL = "pgbench"
_RATE = ("-R", "--rate")


def _metrics(command: str) -> tuple[Metric, ...]:
    asked = option(command, *_RATE) is not None
    base = (Metric("tps", "1/s", HIGHER), Metric("latency_mean", "s", LOWER), Metric("latency_stddev", "s", LOWER, optional=True),
            Metric("failed", "", LOWER))
    lag = (Metric("lag_mean", "s", LOWER), Metric("lag_max", "s", LOWER)) if asked else ()
    return with_rate(base + lag, asked)


def _ms(line: str, text: str) -> float:
    return read(TOOL, line, lambda t: units.to_base(t, "ms"), text)


def parse(output: TrialOutput) -> dict[str, float]:
    text = output.stdout
    tps = search(TOOL, r"^tps = (\S+) \(without initial connection time\)\s*$", text, "'tps = ... (without initial connection time)' line")
    mean = search(TOOL, r"^latency average = (\S+) ms\s*$", text, "'latency average = ... ms' line")
    values = {"tps": read(TOOL, tps.group(0), number, tps.group(1)), "latency_mean": _ms(mean.group(0), mean.group(1))}
    stddev = re.search(r"^latency stddev = (\S+) ms\s*$", text, re.MULTILINE)
    if stddev:
        values["latency_stddev"] = _ms(stddev.group(0), stddev.group(1))
    failed = re.search(r"^number of failed transactions: (\d+)", text, re.MULTILINE)
    values["failed"] = float(failed.group(1)) if failed else 0.0  # before pgbench 15 a failure ends the run
    asked = option(output.command, *_RATE)
    if asked is not None:
        lag = search(TOOL, r"^rate limit schedule lag: avg (\S+) \(max (\S+)\) ms\s*$", text, "'rate limit schedule lag:' line")
        values["lag_mean"], values["lag_max"] = _ms(lag.group(0), lag.group(1)), _ms(lag.group(0), lag.group(2))
        values.update(rate_values(TOOL, asked, values["tps"]))
    return values


PARSER = Parser(TOOL, ("tps",), "pgbench: tps, latency mean and stddev, failed; with -R the rate asked and schedule lag",
                _metrics, parse)
