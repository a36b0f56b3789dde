"""fio --output-format=json: real output of fio 3.33."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchsage.parsers import PARSERS, CommandError, ParseError, TrialOutput

DATA = Path(__file__).parent / "data"
FIO = PARSERS["fio"]
COMMAND = "fio --name=j --rw=randread --output-format=json"


def test_a_read_job_gives_read_latencies_only() -> None:
    values = FIO.read(TrialOutput((DATA / "fio-randread.json").read_text(), COMMAND))
    assert values == {"iops": 13298.701299, "bw": 54471480.0, "read_lat_mean": 74322.058105e-9,
                      "read_p50": 69120e-9, "read_p99": 129536e-9}


def test_a_mixed_job_sums_the_directions() -> None:
    values = FIO.read(TrialOutput((DATA / "fio-randrw.json").read_text(), COMMAND))
    assert values["iops"] == 33593.220339 + 35830.508475 + 0.0
    assert values["bw"] == 137597830.0 + 146761762.0
    assert values["read_p99"] == 205824e-9 and values["write_p99"] == 50944e-9
    assert values["write_lat_mean"] == 3995.833491e-9


def test_notes_before_the_json_and_an_output_file() -> None:
    text = "note: both iodepth >= 1 and synchronous I/O engine are selected\n" + (DATA / "fio-randread.json").read_text()
    assert FIO.read(TrialOutput(text, COMMAND))["iops"] == 13298.701299
    command = COMMAND + " --output=res.json"
    assert FIO.files(command) == ("res.json",)
    data = (DATA / "fio-randread.json").read_bytes()
    assert FIO.read(TrialOutput("", command, {"res.json": data}))["bw"] == 54471480.0


def test_text_output_is_refused() -> None:
    with pytest.raises(CommandError, match="--output-format=json"):
        FIO.metrics("fio job.fio")
    with pytest.raises(ParseError, match=r"fio output has no JSON object with \"jobs\".*output starts: 'randread: \(g=0\)"):
        FIO.read(TrialOutput("randread: (g=0): rw=randread\nfio-3.33\n", COMMAND))
