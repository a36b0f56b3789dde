"""redis-benchmark --csv: real output of redis-benchmark 7.0.15, metrics named after the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchsage.parsers import PARSERS, CommandError, ParseError, TrialOutput

DATA = Path(__file__).parent / "data"
REDIS = PARSERS["redis-benchmark"]
COMMAND = "redis-benchmark -p 16379 -n 2000 -t set,get,lpush --csv"


def test_each_test_row_in_base_units() -> None:
    values = REDIS.read(TrialOutput((DATA / "redis-benchmark.csv").read_text(), COMMAND))
    assert {k: v for k, v in values.items() if k.startswith("set_")} == {
        "set_rps": 86956.52, "set_latency_mean": 0.000362, "set_latency_min": 0.00008, "set_p50": 0.000343,
        "set_p95": 0.000583, "set_p99": 0.000871, "set_latency_max": 0.000967,
    }
    assert values["get_rps"] == 111111.12 and values["get_p99"] == 0.000455
    assert values["lpush_latency_min"] == 0.000064
    assert len(values) == 21
    assert REDIS.primary(COMMAND) == ("set_p99", "get_p99", "lpush_p99")


def test_a_test_the_command_names_but_the_output_lacks() -> None:
    with pytest.raises(ParseError, match="redis-benchmark output gave no value for 'incr_rps'"):
        REDIS.read(TrialOutput((DATA / "redis-benchmark.csv").read_text(), "redis-benchmark -t set,incr --csv"))


def test_the_command_must_name_tests_and_ask_csv() -> None:
    with pytest.raises(CommandError, match="name them with -t"):
        REDIS.metrics("redis-benchmark -n 10 --csv")
    with pytest.raises(CommandError, match="--csv"):
        REDIS.metrics("redis-benchmark -t set")


def test_output_without_the_header_says_what_it_starts_with() -> None:
    with pytest.raises(ParseError, match=r"no CSV header row .* \(output starts: 'SET: 86956.52 requests per second'\)"):
        REDIS.read(TrialOutput("SET: 86956.52 requests per second\n", COMMAND))
