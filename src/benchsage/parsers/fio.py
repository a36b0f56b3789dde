"""fio --output-format=json: I/O operations and bytes per second summed over jobs and
directions, and for each direction that did I/O its latency mean (lat_ns: submission and
completion) and completion-latency percentiles p50, p99 (clat_ns, the ones fio prints).

Latencies are read when fio reports one job (one job, or several with --group_reporting):
percentiles of several jobs cannot be combined from their summaries. The JSON is read from
stdout, or from the file --output=FILE names.
"""

from __future__ import annotations

import json
from typing import Any

from benchsage.parsers import units
from benchsage.parsers.reading import HIGHER, LOWER, CommandError, Metric, ParseError, Parser, TrialOutput, missing, option

TOOL = "fio"
DIRECTIONS = ("read", "write")
_LATENCY = {"lat_mean": None, "p50": "50.000000", "p99": "99.000000"}


def _check(command: str) -> None:
    if "json" not in (option(command, "--output-format") or ""):
        raise CommandError("fio prints the JSON the parser reads only with --output-format=json: add it to the command")


def _metrics(command: str) -> tuple[Metric, ...]:
    _check(command)
    latency = tuple(Metric(f"{d}_{name}", "s", LOWER, optional=True) for d in DIRECTIONS for name in _LATENCY)
    return (Metric("iops", "1/s", HIGHER), Metric("bw", "B/s", HIGHER)) + latency


def _files(command: str) -> tuple[str, ...]:
    name = option(command, "--output")
    return (name,) if name else ()


def _document(output: TrialOutput) -> Any:
    name = option(output.command, "--output")
    if name:
        data = output.files.get(name)
        if data is None:
            raise ParseError(f"{TOOL} output file {name!r} (--output) is missing after the trial")
        text, where = data.decode(errors="replace"), f"file {name!r}"
    else:
        text, where = output.stdout, "stdout"
    start = 0 if text.startswith("{") else text.find("\n{") + 1  # fio may print notes before the JSON
    if not text[start:].startswith("{"):
        return None
    try:
        return json.loads(text[start:])
    except ValueError as exc:
        raise ParseError(f"{TOOL} {where} is not JSON from its first '{{' on: {exc}") from None


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(f"{TOOL} JSON has no number at {where} (got {value!r})")
    return float(value)


def parse(output: TrialOutput) -> dict[str, float]:
    doc = _document(output)
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list) or not jobs:
        raise missing(TOOL, "JSON object with \"jobs\" (was --output-format=json given?)", output.stdout)
    values = {"iops": 0.0, "bw": 0.0}
    for i, job in enumerate(jobs):
        for d in ("read", "write", "trim"):
            stats = job.get(d) if isinstance(job, dict) else None
            if isinstance(stats, dict):
                values["iops"] += _number(stats.get("iops"), f"jobs[{i}].{d}.iops")
                values["bw"] += _number(stats.get("bw_bytes"), f"jobs[{i}].{d}.bw_bytes")
    if len(jobs) == 1:
        for d in DIRECTIONS:
            stats = jobs[0].get(d) or {}
            if not stats.get("total_ios"):
                continue
            lat = stats.get("lat_ns") or {}
            values[f"{d}_lat_mean"] = units.convert(_number(lat.get("mean"), f"jobs[0].{d}.lat_ns.mean"), "ns", "s")
            percentiles = (stats.get("clat_ns") or {}).get("percentile") or {}
            for name, key in _LATENCY.items():
                if key is not None and key in percentiles:
                    where = f"jobs[0].{d}.clat_ns.percentile.{key}"
                    values[f"{d}_{name}"] = units.convert(_number(percentiles[key], where), "ns", "s")
    return values


PARSER = Parser(TOOL, ("iops",), "fio --output-format=json: IOPS and bytes/s of all jobs; per direction latency mean, p50, p99",
                _metrics, parse, _files)
