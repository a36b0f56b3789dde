"""memtier_benchmark: a results file reconstructed from memtier's source (data/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchsage.parsers import PARSERS, CommandError, ParseError, TrialOutput

DATA = Path(__file__).parent / "data"
MEMTIER = PARSERS["memtier"]
JSON = (DATA / "memtier-reconstructed.json").read_bytes()
COMMAND = "memtier_benchmark -P memcache_text -p 11211 -c 10 -t 2 --rate-limiting=100 --json-out-file=out.json"


def test_the_totals_in_base_units_and_the_rate_asked_of_every_connection() -> None:
    assert MEMTIER.files(COMMAND) == ("out.json",)
    values = MEMTIER.read(TrialOutput("", COMMAND, {"out.json": JSON}))
    assert values == {
        "ops": 1998.92, "hits": 150.31, "misses": 1666.89, "transfer": 86.01 * 1024,
        "latency_mean": 0.00039998, "p50": 0.000383, "p99": 0.000911, "p999": 0.002591,
        "rate_asked": 2000.0, "rate_delivered": 1998.92 / 2000,  # 100 per connection x 10 clients x 2 threads
    }


def test_without_a_rate_no_rate_metrics() -> None:
    command = "memtier_benchmark --json-out-file out.json"
    assert "rate_asked" not in {m.name for m in MEMTIER.metrics(command)}
    assert "rate_asked" not in MEMTIER.read(TrialOutput("", command, {"out.json": JSON}))


def test_the_file_is_needed() -> None:
    with pytest.raises(CommandError, match="--json-out-file"):
        MEMTIER.metrics("memtier_benchmark -s host")
    with pytest.raises(ParseError, match=r"memtier results file 'out.json' \(--json-out-file\) is missing after the trial"):
        MEMTIER.read(TrialOutput("", COMMAND, {"out.json": None}))
    with pytest.raises(ParseError, match=r"has no \"ALL STATS\".\"Totals\" object \(it starts: '\{\"ALL STATS\": \{\}\}'\)"):
        MEMTIER.read(TrialOutput("", COMMAND, {"out.json": b'{"ALL STATS": {}}'}))
