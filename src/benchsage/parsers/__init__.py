"""Output parsers: a built-in reader of each load generator's or benchmark tool's output, one file
per tool, each a pure function from a trial's stdout (and the test's command line, and the
results files collected after the trial) to named values in base units (units.py).

A test says `output = "wrk"`; the spec learns the parser's metrics, their units and better
direction and its default primary metrics from PARSERS, and the executor reads each trial with it.
"""

from __future__ import annotations

from benchsage.parsers import ab, fio, hyperfine, memtier, pgbench, redis_benchmark, sysbench, wrk, wrk2
from benchsage.parsers.reading import CommandError, Metric, ParseError, Parser, TrialOutput

PARSERS: dict[str, Parser] = {p.PARSER.name: p.PARSER for p in (wrk, wrk2, redis_benchmark, memtier, fio, sysbench, pgbench, ab,
                                                                 hyperfine)}

__all__ = ["CommandError", "Metric", "PARSERS", "ParseError", "Parser", "TrialOutput"]
