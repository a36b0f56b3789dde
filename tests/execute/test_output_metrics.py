"""A trial read by its test's output parser, and a regex whose second group is the value's unit:
values in the metric's unit, or a bad-output trial whose reason says what could not be read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchsage.execute.metrics import collected_files
from benchsage.execute.runner import classify
from benchsage.execute.worker import ProcessResult
from benchsage.spec import MetricSpec, TestSpec

DATA = Path(__file__).parent.parent / "parsers" / "data"


def result(stdout: str, files: dict[str, bytes | None] | None = None) -> ProcessResult:
    base: dict[str, Any] = dict(exit_status=0, timed_out=False, wall_time=1.5, user_time=1.25, sys_time=0.25, max_rss=2048,
                                started=0.0, ended=1.5, stdout=stdout.encode(), stderr=b"", files=files or {})
    return ProcessResult(**base)


def spec_test(command: str, output: str | None = None, metrics: tuple[MetricSpec, ...] = ()) -> TestSpec:
    return TestSpec("t", command, None, {}, "/tmp", metrics, output=output)


def test_a_parsed_trial_has_the_parser_values_beside_its_own() -> None:
    own = MetricSpec("requests", regex=r"(\d+) requests in")
    outcome = classify(spec_test("wrk --latency http://x/", "wrk", (MetricSpec("p99", "s", parser="wrk"), own)),
                       result((DATA / "wrk-nginx.txt").read_text()))
    assert outcome.status == "ok"
    assert outcome.values["p99"] == 0.01237 and outcome.values["rps"] == 58603.92 and outcome.values["requests"] == 123067.0


def test_a_parser_that_finds_nothing_makes_a_bad_output_trial() -> None:
    outcome = classify(spec_test("wrk --latency http://x/", "wrk"), result("unable to connect to x:80 Connection refused\n"))
    assert outcome.status == "bad-output"
    assert outcome.reason == ("output = 'wrk': wrk output has no 'Latency Distribution' section (was --latency given?) "
                              "(output starts: 'unable to connect to x:80 Connection refused')")


def test_a_results_file_is_collected_and_read() -> None:
    t = spec_test("hyperfine -N --export-json h.json 'sleep 0.01'", "hyperfine")
    assert collected_files(t) == ("h.json",)
    outcome = classify(t, result("", {"h.json": (DATA / "hyperfine.json").read_bytes()}))
    assert outcome.values["median"] == 0.011237017
    missing = classify(t, result("", {"h.json": None}))
    assert missing.status == "bad-output" and "'h.json' (--export-json) is missing" in (missing.reason or "")


def test_a_regex_unit_group_converts_to_the_metric_unit() -> None:
    p99 = MetricSpec("p99", "s", regex=r"99%\s+([0-9.]+)(us|ms|s)")
    for line, seconds in (("99%  850.00us", 0.00085), ("99%   4.30ms", 0.0043), ("99%   1.02s", 1.02)):
        assert classify(spec_test("x", metrics=(p99,)), result(line + "\n")).values["p99"] == seconds
    in_ms = MetricSpec("p99", "ms", regex=r"99%\s+([0-9.]+)(\w+)")
    assert classify(spec_test("x", metrics=(in_ms,)), result("99%  850.00us\n")).values["p99"] == 0.85


def test_a_unit_the_regex_reads_that_cannot_be_converted() -> None:
    p99 = MetricSpec("p99", "s", regex=r"99%\s+([0-9.]+)(\w+)")
    outcome = classify(spec_test("x", metrics=(p99,)), result("99%  12.5MB\n"))
    assert outcome.status == "bad-output"
    assert outcome.reason == "metric 'p99': the regex's unit group read the unit 'MB', which cannot be converted to 's' (in '99%  12.5MB')"
