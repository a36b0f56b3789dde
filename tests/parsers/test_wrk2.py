"""wrk2: a sample reconstructed from wrk2's source (data/README.md), and the rate asked with -R."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchsage.parsers import PARSERS, CommandError, ParseError, TrialOutput

DATA = Path(__file__).parent / "data"
WRK2 = PARSERS["wrk2"]
TEXT = (DATA / "wrk2-reconstructed.txt").read_text()


def test_the_hdr_distribution_in_seconds_and_the_rate_delivered() -> None:
    values = WRK2.read(TrialOutput(TEXT, "wrk -t2 -c16 -d10s -R 2000 --latency http://127.0.0.1:8080/"))
    assert values == {
        "p50": 0.000912, "p75": 0.00131, "p90": 0.00487, "p99": 1.21, "p999": 1.33,
        "latency_mean": 0.10237, "latency_max": 1.35, "rps": 1998.91, "transfer": 240.63 * 1024, "errors": 0.0,
        "rate_asked": 2000.0, "rate_delivered": 1998.91 / 2000,
    }


def test_a_rate_it_could_not_keep() -> None:
    values = WRK2.read(TrialOutput(TEXT, "wrk --rate=5k -t2 -c16 -d10s -L http://127.0.0.1:8080/"))
    assert values["rate_asked"] == 5000.0
    assert values["rate_delivered"] == 1998.91 / 5000


def test_the_command_must_ask_a_rate_and_the_latency() -> None:
    with pytest.raises(CommandError, match="add -R N"):
        WRK2.metrics("wrk -t2 -c16 -d10s --latency http://x/")
    with pytest.raises(CommandError, match="--latency"):
        WRK2.metrics("wrk -t2 -c16 -d10s -R 100 http://x/")


def test_a_missing_row_is_named() -> None:
    text = TEXT.replace(" 99.900%    1.33s \n", "")
    with pytest.raises(ParseError, match=r"wrk2 output has no 99.900% row in its 'Latency Distribution'"):
        WRK2.read(TrialOutput(text, "wrk -R 2000 --latency http://x/"))
