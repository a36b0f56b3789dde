"""wrk: real output of wrk 4 against nginx and a slow server; every value in base units."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchsage.parsers import PARSERS, CommandError, ParseError, TrialOutput

DATA = Path(__file__).parent / "data"
WRK = PARSERS["wrk"]
COMMAND = "wrk -t2 -c8 -d2s --latency http://127.0.0.1:18080/"


def read(name: str, command: str = COMMAND) -> dict[str, float]:
    return WRK.read(TrialOutput((DATA / name).read_text(), command))


def test_a_table_of_microseconds_and_milliseconds() -> None:
    assert read("wrk-nginx.txt") == {
        "p50": 0.000101, "p75": 0.000285, "p90": 0.00263, "p99": 0.01237,
        "latency_mean": 0.00089, "latency_max": 0.03635,
        "rps": 58603.92, "transfer": 13.41 * 1024 * 1024, "errors": 0.0,
    }


def test_a_table_of_milliseconds_and_seconds_with_errors() -> None:
    values = read("wrk-slow.txt")
    assert (values["p50"], values["p75"], values["p90"], values["p99"]) == (0.04799, 0.35682, 1.02, 1.25)
    assert (values["latency_mean"], values["latency_max"]) == (0.27404, 1.41)
    assert values["rps"] == 72.56
    assert values["transfer"] == 8.12 * 1024
    assert values["errors"] == 12.0  # 1 socket timeout + 11 non-2xx/3xx responses


def test_metrics_units_directions_and_default_primary() -> None:
    metrics = {m.name: (m.unit, m.better) for m in WRK.metrics(COMMAND)}
    assert metrics["p99"] == ("s", "lower") and metrics["rps"] == ("1/s", "higher")
    assert metrics["transfer"] == ("B/s", "higher") and metrics["errors"] == ("", "lower")
    assert WRK.primary(COMMAND) == ("p99", "rps")


def test_without_latency_the_command_is_refused_and_the_output_is_bad() -> None:
    with pytest.raises(CommandError, match="--latency"):
        WRK.metrics("wrk -t1 -c4 -d1s http://127.0.0.1:18080/missing")
    with pytest.raises(ParseError, match=r"wrk output has no 'Latency Distribution' section \(was --latency given\?\) "
                                         r"\(output starts: 'Running 1s test @ http://127.0.0.1:18080/missing \| 1 threads"):
        read("wrk-404.txt")


def test_a_line_it_cannot_read_is_quoted() -> None:
    text = (DATA / "wrk-nginx.txt").read_text().replace("2.63ms", "2.63xs")
    with pytest.raises(ParseError, match=r"wrk output line '90%    2.63xs' could not be read: '2.63xs' is not a duration"):
        WRK.read(TrialOutput(text, COMMAND))
