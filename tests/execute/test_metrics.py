"""Metric extraction: every way a metric can be read, and every way it can fail to be."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.execute.local import LocalWorker
from benchsage.execute.metrics import MetricError, extract, harness_metrics
from benchsage.execute.worker import ProcessRequest, ProcessResult
from benchsage.spec import MetricSpec
from benchsage.vocabulary import HARNESS_METRICS


def result(stdout: bytes | str = b"", files: dict[str, bytes | None] | None = None, **kw: Any) -> ProcessResult:
    if isinstance(stdout, str):
        stdout = stdout.encode()
    base: dict[str, Any] = dict(
        exit_status=0, timed_out=False, wall_time=1.5, user_time=1.25, sys_time=0.25, max_rss=2048,
        started=0.0, ended=1.5, stdout=stdout, stderr=b"", files=files or {},
    )
    base.update(kw)
    return ProcessResult(**base)


def regex(pattern: str) -> MetricSpec:
    return MetricSpec(name="m", regex=pattern)


def test_regex_takes_the_first_group_of_the_last_match() -> None:
    out = "warmup ops/s: 10\nops/s: 12.5 (n=3)\nops/s: 13.75 (n=4)\ndone\n"
    assert extract(regex(r"ops/s: ([0-9.]+) \(n=(\d)\)"), result(out)) == 13.75
    assert extract(regex(r"ops/s: ([0-9.]+)"), result(out)) == 13.75
    assert extract(regex(r"time=(\S+)"), result("time=1e-3\n")) == 0.001
    assert extract(regex(r"x=(\S+)"), result("x=-7\n")) == -7.0


@pytest.mark.parametrize(
    ("pattern", "stdout", "reason"),
    [
        (r"ops: (\d+)", "nothing here\n", "does not match"),
        (r"ops: (\S+)", "ops: fast\n", "not a number"),
        (r"ops: (\S+)", "ops: nan\n", "not finite"),
        (r"ops: (\S+)", "ops: inf\n", "not finite"),
        (r"ops: (\d+)?x", "ops: x\n", "group did not"),
    ],
)
def test_regex_failures_say_why(pattern: str, stdout: str, reason: str) -> None:
    with pytest.raises(MetricError, match=reason) as err:
        extract(regex(pattern), result(stdout))
    assert "'m'" in err.value.reason


def test_regex_on_invalid_utf8_output() -> None:
    assert extract(regex(r"v=(\d+)"), result(b"\xff\xfe v=42 \xff\n")) == 42


def test_json_whole_stdout_and_key_paths() -> None:
    doc = {"results": [{"ops": 10}, {"ops": 12.5}], "meta": {"n": 3, "ok": True, "s": "2.5", "x": None}}
    out = json.dumps(doc, indent=2)
    assert extract(MetricSpec("m", json="results.1.ops"), result(out)) == 12.5
    assert extract(MetricSpec("m", json="results.0.ops"), result(out)) == 10
    assert extract(MetricSpec("m", json="results.-1.ops"), result(out)) == 12.5
    assert extract(MetricSpec("m", json="meta.n"), result(out)) == 3
    assert extract(MetricSpec("m", json="meta.s"), result(out)) == 2.5  # a numeric string


def test_json_last_line_that_is_an_object() -> None:
    out = 'starting\n{"ops": 1}\nprogress {"not": "json"\n{"ops": 2, "lat": {"p50": 0.5}}\nbye\n'
    assert extract(MetricSpec("m", json="ops"), result(out)) == 2
    assert extract(MetricSpec("m", json="lat.p50"), result(out)) == 0.5


@pytest.mark.parametrize(
    ("path", "stdout", "reason"),
    [
        ("ops", "no json here\n", "no JSON object"),
        ("ops", "[1, 2, 3]\n", "no JSON object"),
        ("ops", '{"ops": 1', "no JSON object"),
        ("ops", '{"other": 1}', "has no 'ops' in the top-level object"),
        ("a.b.c", '{"a": {"b": {}}}', "has no 'c' in a.b"),
        ("a.5", '{"a": [1, 2]}', "has no '5' in a"),
        ("a.x", '{"a": [1, 2]}', "has no 'x' in a"),
        ("a", '{"a": true}', "not a number"),
        ("a", '{"a": null}', "not a number"),
        ("a", '{"a": {"b": 1}}', "not a number"),
        ("a", '{"a": "fast"}', "not a number"),
        ("a", '{"a": NaN}', "not finite"),
        ("a", '{"a": Infinity}', "not finite"),
    ],
)
def test_json_failures_say_why(path: str, stdout: str, reason: str) -> None:
    with pytest.raises(MetricError, match=reason):
        extract(MetricSpec("m", json=path), result(stdout))


def test_results_file_lines() -> None:
    files = {"out.txt": b"1.5\n2.5\n\n  3.5  \n", "gone.txt": None}
    assert extract(MetricSpec("m", file="out.txt"), result(files=files)) == 1.5
    assert extract(MetricSpec("m", file="out.txt", line=1), result(files=files)) == 2.5
    assert extract(MetricSpec("m", file="out.txt", line=3), result(files=files)) == 3.5
    assert extract(MetricSpec("m", file="out.txt", line=-1), result(files=files)) == 3.5
    with pytest.raises(MetricError, match="is missing"):
        extract(MetricSpec("m", file="gone.txt"), result(files=files))
    with pytest.raises(MetricError, match="is missing"):
        extract(MetricSpec("m", file="never-collected.txt"), result(files=files))
    with pytest.raises(MetricError, match="has 4 lines, no line 4"):
        extract(MetricSpec("m", file="out.txt", line=4), result(files=files))
    with pytest.raises(MetricError, match="line 2 .* not a number"):
        extract(MetricSpec("m", file="out.txt", line=2), result(files=files))
    with pytest.raises(MetricError, match="not finite"):
        extract(MetricSpec("m", file="x"), result(files={"x": b"inf\n"}))


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=200)
def test_every_finite_float_round_trips_through_each_source(value: float) -> None:
    text = repr(value)
    assert extract(regex(r"v=(\S+)"), result(f"v={text}\n")) == value
    assert extract(MetricSpec("m", json="a.0"), result(json.dumps({"a": [value]}))) == value
    assert extract(MetricSpec("m", file="f"), result(files={"f": f"{text}\n".encode()})) == value


def test_metrics_from_a_real_trial(tmp_path: Path) -> None:
    with LocalWorker() as worker:
        r = worker.run(
            ProcessRequest(
                command='echo "MB/s: 812.5"; echo \'{"lat": {"p99": 0.25}}\'; printf "7\\n8\\n" > res.txt',
                cwd=str(tmp_path),
                collect=("res.txt",),
            )
        )
    assert extract(MetricSpec("tp", regex=r"MB/s: ([0-9.]+)"), r) == 812.5
    assert extract(MetricSpec("p99", json="lat.p99"), r) == 0.25
    assert extract(MetricSpec("second", file="res.txt", line=1), r) == 8


def test_harness_metrics() -> None:
    h = harness_metrics(result())
    assert tuple(h) == HARNESS_METRICS
    assert h == {"wall_time": 1.5, "user_time": 1.25, "sys_time": 0.25, "max_rss": 2048.0}
    assert all(isinstance(v, float) and math.isfinite(v) for v in h.values())
