"""pgbench: real output of pgbench 15 against a throwaway cluster, with and without -R."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchsage.parsers import PARSERS, ParseError, TrialOutput
from benchsage.vocabulary import RATE_DELIVERED_FLOOR

DATA = Path(__file__).parent / "data"
PGBENCH = PARSERS["pgbench"]


def test_plain() -> None:
    values = PGBENCH.read(TrialOutput((DATA / "pgbench.txt").read_text(), "pgbench -c 2 -j 2 -T 2 postgres"))
    assert values == {"tps": 1263.681961, "latency_mean": 0.001583, "failed": 0.0}


def test_a_rate_kept() -> None:
    values = PGBENCH.read(TrialOutput((DATA / "pgbench-rate.txt").read_text(), "pgbench -c 2 -j 2 -T 2 -R 200 -P 1 -r postgres"))
    assert values == {"tps": 195.479119, "latency_mean": 0.001069, "latency_stddev": 0.00029, "failed": 0.0,
                      "lag_mean": 0.000197, "lag_max": 0.001209, "rate_asked": 200.0, "rate_delivered": 195.479119 / 200}
    assert values["rate_delivered"] >= RATE_DELIVERED_FLOOR


def test_a_rate_missed() -> None:
    values = PGBENCH.read(TrialOutput((DATA / "pgbench-rate-missed.txt").read_text(), "pgbench -c 1 -T 1 --rate=5000 postgres"))
    assert values["rate_delivered"] == 868.646955 / 5000 < RATE_DELIVERED_FLOOR
    assert values["lag_max"] == 0.823378


def test_an_aborted_run() -> None:
    with pytest.raises(ParseError, match=r"pgbench output has no 'tps = ... \(without initial connection time\)' line "
                                         r"\(output starts: 'pgbench: error: connection to server"):
        PGBENCH.read(TrialOutput("pgbench: error: connection to server failed\n", "pgbench postgres"))
