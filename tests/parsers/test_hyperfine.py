"""hyperfine --export-json: real results files of hyperfine 1.15.0."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchsage.parsers import PARSERS, CommandError, ParseError, TrialOutput

DATA = Path(__file__).parent / "data"
HYPERFINE = PARSERS["hyperfine"]
COMMAND = "hyperfine --runs 5 -N --export-json out.json 'sleep 0.01'"


def test_one_command() -> None:
    assert HYPERFINE.files(COMMAND) == ("out.json",)
    values = HYPERFINE.read(TrialOutput("", COMMAND, {"out.json": (DATA / "hyperfine.json").read_bytes()}))
    assert values == {"mean": 0.011303701400000001, "median": 0.011237017, "stddev": 0.00019287734523473703,
                      "min": 0.011173936, "max": 0.011639184, "user": 0.0011306, "system": 0.0}


def test_two_commands_are_two_tests() -> None:
    with pytest.raises(ParseError, match=r"holds 2 results \('sleep 0.01', 'true'\); a benchsage test times one command"):
        HYPERFINE.read(TrialOutput("", COMMAND, {"out.json": (DATA / "hyperfine-two.json").read_bytes()}))


def test_the_file_must_be_named() -> None:
    with pytest.raises(CommandError, match="--export-json"):
        HYPERFINE.metrics("hyperfine 'sleep 0.01'")
