"""Turn a finished trial into numbers: the spec's metrics, read from stdout or a results file,
and the harness's own wall/user/sys time and peak RSS.

A metric that cannot be read raises MetricError with the reason; the runner records the trial
as "bad-output" with that reason, never as a number.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any

from benchsage.execute.worker import ProcessResult
from benchsage.parsers import PARSERS, ParseError, TrialOutput, units
from benchsage.spec import MetricSpec, TestSpec


class MetricError(Exception):
    """A metric could not be read from a trial's output; str(error) says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _excerpt(text: str, limit: int = 40) -> str:
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _number(text: str, what: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise MetricError(f"{what} is not a number: {_excerpt(text)}") from None
    if not math.isfinite(value):
        raise MetricError(f"{what} is not finite: {_excerpt(text)}")
    return value


def _from_regex(metric: MetricSpec, stdout: bytes) -> float:
    assert metric.regex is not None
    last = None
    for last in _compiled(metric.regex).finditer(_text(stdout)):
        pass
    if last is None:
        raise MetricError(f"metric '{metric.name}': regex {metric.regex!r} does not match stdout")
    group = last.group(1) if last.re.groups else last.group(0)
    if group is None:
        raise MetricError(f"metric '{metric.name}': regex {metric.regex!r} matched, but its group did not")
    value = _number(group, f"metric '{metric.name}': the match")
    if last.re.groups >= 2 and metric.unit in units.UNITS:  # the second group is the value's unit
        return _converted(metric, group, last.group(2), last.group(0))
    return value


def _converted(metric: MetricSpec, number: str, unit: str | None, matched: str) -> float:
    if unit is None or not units.convertible(unit, metric.unit):
        what = "matched no unit" if unit is None else f"read the unit {unit!r}, which cannot be converted to {metric.unit!r}"
        raise MetricError(f"metric '{metric.name}': the regex's unit group {what} (in {_excerpt(matched)})")
    return units.convert(number, unit, metric.unit)


def _json_object(stdout: bytes) -> dict[str, Any]:
    """The whole stdout as one JSON object, else the last line that is one."""
    text = _text(stdout)
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            whole = json.loads(stripped)
        except ValueError:
            pass
        else:
            if isinstance(whole, dict):
                return whole
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                return obj
    raise MetricError("no JSON object found on stdout (expected the whole output, or one line, to be an object)")


def _from_json(metric: MetricSpec, stdout: bytes) -> float:
    assert metric.json is not None
    try:
        node: Any = _json_object(stdout)
    except MetricError as exc:
        raise MetricError(f"metric '{metric.name}': {exc.reason}") from None
    walked: list[str] = []
    for key in metric.json.split("."):
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.lstrip("-").isdigit() and -len(node) <= int(key) < len(node):
            node = node[int(key)]
        else:
            where = ".".join(walked) or "the top-level object"
            raise MetricError(f"metric '{metric.name}': key path {metric.json!r} has no {key!r} in {where}")
        walked.append(key)
    # bool is an int in Python, but true/false is not a measurement.
    if isinstance(node, bool) or not isinstance(node, (int, float, str)):
        raise MetricError(f"metric '{metric.name}': {metric.json!r} is not a number: {_excerpt(json.dumps(node))}")
    return _number(str(node), f"metric '{metric.name}': {metric.json!r}")


def _from_file(metric: MetricSpec, result: ProcessResult) -> float:
    assert metric.file is not None
    data = result.files.get(metric.file)
    if data is None:
        raise MetricError(f"metric '{metric.name}': results file {metric.file!r} is missing")
    lines = _text(data).splitlines()
    try:
        line = lines[metric.line]
    except IndexError:
        raise MetricError(
            f"metric '{metric.name}': results file {metric.file!r} has {len(lines)} lines, no line {metric.line}"
        ) from None
    return _number(line, f"metric '{metric.name}': line {metric.line} of {metric.file!r}")


def extract(metric: MetricSpec, result: ProcessResult) -> float:
    """The value of one declared metric for a finished trial, or MetricError saying why not."""
    if metric.regex is not None:
        return _from_regex(metric, result.stdout)
    if metric.json is not None:
        return _from_json(metric, result.stdout)
    if metric.file is not None:
        return _from_file(metric, result)
    raise MetricError(f"metric '{metric.name}' has no source (regex, json or file)")


def from_output(test: TestSpec, result: ProcessResult) -> dict[str, float]:
    """The values the test's output parser reads from a finished trial, or MetricError saying
    which line it could not read or which section is missing."""
    assert test.output is not None
    output = TrialOutput(_text(result.stdout), test.command, {k: v for k, v in result.files.items()})
    try:
        return PARSERS[test.output].read(output)
    except ParseError as exc:
        raise MetricError(f"output = {test.output!r}: {exc}") from None


def collected_files(test: TestSpec) -> tuple[str, ...]:
    """The results files the test's output parser reads, collected after each trial."""
    return PARSERS[test.output].files(test.command) if test.output is not None else ()


def harness_metrics(result: ProcessResult) -> dict[str, float]:
    """What the harness measured itself, for every trial (names as vocabulary.HARNESS_METRICS)."""
    return {
        "wall_time": float(result.wall_time),
        "user_time": float(result.user_time),
        "sys_time": float(result.sys_time),
        "max_rss": float(result.max_rss),
    }
