"""sysbench: real output of sysbench 1.0.20 (cpu and memory tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchsage.parsers import PARSERS, CommandError, ParseError, TrialOutput

DATA = Path(__file__).parent / "data"
SYSBENCH = PARSERS["sysbench"]


def test_cpu() -> None:
    values = SYSBENCH.read(TrialOutput((DATA / "sysbench-cpu.txt").read_text(), "sysbench cpu --time=1 --threads=2 run"))
    assert values == {"events_per_second": 5171 / 1.0004, "latency_min": 0.00036, "latency_mean": 0.00039,
                      "latency_max": 0.01604, "p95": 0.00041}


def test_memory() -> None:
    values = SYSBENCH.read(TrialOutput((DATA / "sysbench-memory.txt").read_text(), "sysbench memory run"))
    assert values["events_per_second"] == 1048576 / 0.2221
    assert values["latency_max"] == 0.0001


def test_the_percentile_follows_the_command() -> None:
    text = (DATA / "sysbench-cpu.txt").read_text().replace("95th percentile", "99th percentile")
    assert "p99" in SYSBENCH.read(TrialOutput(text, "sysbench cpu --percentile=99 run"))
    with pytest.raises(ParseError, match="sysbench output has no '95th percentile:' row under 'Latency \\(ms\\)'"):
        SYSBENCH.read(TrialOutput(text, "sysbench cpu run"))
    with pytest.raises(CommandError, match="--percentile=0"):
        SYSBENCH.metrics("sysbench cpu --percentile=0 run")
