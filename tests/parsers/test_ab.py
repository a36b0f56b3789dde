"""ab: real output of ApacheBench 2.3 against nginx."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchsage.parsers import PARSERS, ParseError, TrialOutput

DATA = Path(__file__).parent / "data"
AB = PARSERS["ab"]


def test_ab_against_nginx() -> None:
    values = AB.read(TrialOutput((DATA / "ab-nginx.txt").read_text(), "ab -n 2000 -c 8 http://127.0.0.1:18080/"))
    assert values == {"rps": 29079.07, "latency_mean": 0.000275, "p50": 0.0, "p90": 0.0, "p99": 0.001, "latency_max": 0.003,
                      "transfer": 6673.42 * 1024, "errors": 0.0}


def test_non_2xx_responses_are_errors() -> None:
    assert AB.read(TrialOutput((DATA / "ab-404.txt").read_text(), "ab -n 300 http://x/missing"))["errors"] == 300.0


def test_without_the_percentile_table() -> None:
    text = (DATA / "ab-nginx.txt").read_text().split("Percentage of the requests")[0]
    with pytest.raises(ParseError, match="ab output has no 'Percentage of the requests served' table"):
        AB.read(TrialOutput(text, "ab -d -n 10 http://x/"))
