"""hyperfine --export-json FILE: the statistics hyperfine computed over its own runs of one
command (mean, median, stddev, min, max, user and system time; seconds), read from FILE after
the trial. A benchsage test times one command: a file with several results is bad output.
"""

from __future__ import annotations

import json

from benchsage.parsers.reading import LOWER, CommandError, Metric, ParseError, Parser, TrialOutput, option

TOOL = "hyperfine"
STATISTICS = ("mean", "median", "stddev", "min", "max", "user", "system")
_STDOUT = ("-", "/dev/stdout")


def _file(command: str) -> str:
    name = option(command, "--export-json")
    if not name:
        raise CommandError("hyperfine writes the JSON the parser reads only with --export-json FILE: add it to the command")
    return name


def _metrics(command: str) -> tuple[Metric, ...]:
    _file(command)
    return tuple(Metric(name, "s", LOWER, optional=name == "stddev") for name in STATISTICS)  # stddev: null after one run


def _files(command: str) -> tuple[str, ...]:
    name = _file(command)
    return () if name in _STDOUT else (name,)


def parse(output: TrialOutput) -> dict[str, float]:
    name = _file(output.command)
    data = output.stdout.encode() if name in _STDOUT else output.files.get(name)
    if data is None:
        raise ParseError(f"{TOOL} results file {name!r} (--export-json) is missing after the trial")
    try:
        results = json.loads(data)["results"]
    except (ValueError, KeyError, TypeError):
        raise ParseError(f"{TOOL} results file {name!r} has no \"results\" list "
                         f"(it starts: {data[:60].decode(errors='replace')!r})") from None
    if not isinstance(results, list) or len(results) != 1 or not isinstance(results[0], dict):
        commands = [r.get("command") for r in results if isinstance(r, dict)] if isinstance(results, list) else []
        raise ParseError(f"{TOOL} results file {name!r} holds {len(commands)} results ({', '.join(map(repr, commands))}); "
                         "a benchsage test times one command: make each command a test of its own")
    values = {}
    for stat in STATISTICS:
        value = results[0].get(stat)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values[stat] = float(value)
        elif value is not None or stat != "stddev":
            raise ParseError(f"{TOOL} results file {name!r}: \"results\"[0].{stat!r} is {value!r}, not a number")
    return values


PARSER = Parser(TOOL, ("median",), "hyperfine --export-json F: mean, median, stddev, min, max, user, system (s)",
                _metrics, parse, _files)
