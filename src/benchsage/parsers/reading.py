"""What every output parser shares: the shape of a parser (its metrics, their units and better
direction, its default primary metrics, its parse function), the errors it raises, and the
readers of a command line and of a tool's printed lines.

A parser is pure: from a trial's stdout, the test's command line and the results files
collected after the trial, to named values in base units. It raises ParseError, quoting the
line it could not read or naming the section that is missing, and never returns a guess.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from benchsage.parsers import units
from benchsage.vocabulary import HIGHER, LOWER, RATE_ASKED, RATE_DELIVERED, RATE_DELIVERED_FLOOR


class ParseError(Exception):
    """The tool's output does not hold what the parser reads; str(error) says what and where."""


class CommandError(ValueError):
    """The test's command line cannot give the parser what it needs (a results file's name, the
    tests a multi-test tool runs); str(error) says what to add."""


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str  # a unit of units.py, "" for a plain count
    better: str  # "lower" | "higher"
    optional: bool = False  # absent when the tool had nothing to report (fio's writes of a read-only job)


@dataclass(frozen=True)
class TrialOutput:
    """What a parser reads: the trial's stdout, the test's command and its collected files
    (name as the command gives it -> bytes, None when the file was missing)."""

    stdout: str
    command: str
    files: Mapping[str, bytes | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Parser:
    """One tool's parser. `primary(command)` names its default primary metrics, `metrics(command)` lists what it gives for that command line (it may
    raise CommandError); `files(command)` the results files to collect after each trial;
    `read(output)` the values."""

    name: str
    _primary: tuple[str, ...] | Callable[[str], tuple[str, ...]]  # the default primary metrics
    summary: str  # one line for README's table and error messages
    _metrics: Callable[[str], tuple[Metric, ...]]
    _parse: Callable[[TrialOutput], dict[str, float]]
    _files: Callable[[str], tuple[str, ...]] = lambda command: ()

    def primary(self, command: str) -> tuple[str, ...]:
        """The default primary metrics for this command line (those of its metrics)."""
        return self._primary(command) if callable(self._primary) else self._primary

    def metrics(self, command: str) -> tuple[Metric, ...]:
        return self._metrics(command)

    def files(self, command: str) -> tuple[str, ...]:
        return self._files(command)

    def read(self, output: TrialOutput) -> dict[str, float]:
        """Every metric of the command's list that is not optional, or ParseError naming the first
        one missing; optional ones when the tool reported them."""
        values = self._parse(output)
        wanted = self.metrics(output.command)
        for m in wanted:
            if m.name not in values and not m.optional:
                raise ParseError(f"{self.name} output gave no value for '{m.name}'{_start(output.stdout)}")
        return {m.name: values[m.name] for m in wanted if m.name in values}


# -- the command line ----------------------------------------------------------------------------


def words(command: str) -> list[str]:
    """The command's words as the shell splits them (best effort: a command that shlex cannot
    split is split at white space)."""
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def option(command: str, *names: str) -> str | None:
    """The value of the last of `names` on the command line (`-R 100`, `-R100`, `--rate=100`,
    `--rate 100`), or None when none is given."""
    found = None
    ws = words(command)
    for i, w in enumerate(ws):
        for name in names:
            if w == name and i + 1 < len(ws):
                found = ws[i + 1]
            elif name.startswith("--") and w.startswith(name + "="):
                found = w[len(name) + 1:]
            elif not name.startswith("--") and len(name) == 2 and w.startswith(name) and len(w) > 2:
                found = w[2:]
    return found


def flag(command: str, *names: str) -> bool:
    return any(w in names or any(w.startswith(n + "=") for n in names if n.startswith("--")) for w in words(command))


# -- printed lines -------------------------------------------------------------------------------


def _start(text: str, lines: int = 3) -> str:
    head = [line.strip() for line in text.strip().splitlines()[:lines]]
    return f" (output starts: {' | '.join(head)!r})" if head else " (the output is empty)"


def missing(tool: str, what: str, text: str) -> ParseError:
    """The error for a section or line that is not in the output, quoting its first lines."""
    return ParseError(f"{tool} output has no {what}{_start(text)}")


def unreadable(tool: str, line: str, why: str) -> ParseError:
    return ParseError(f"{tool} output line {line.strip()!r} could not be read: {why}")


def search(tool: str, pattern: str, text: str, what: str) -> re.Match[str]:
    """The last match of `pattern` (multi-line) in the text, or ParseError naming `what`."""
    last = None
    for last in re.finditer(pattern, text, re.MULTILINE):
        pass
    if last is None:
        raise missing(tool, what, text)
    return last


def read(tool: str, line: str, convert: Callable[[str], float], text: str) -> float:
    """`convert(text)` of a value printed on `line`, or ParseError quoting the line."""
    try:
        return convert(text)
    except (units.UnitError, ValueError) as exc:
        raise unreadable(tool, line, str(exc)) from None


def number(text: str) -> float:
    return units.to_base(text, "count")


# -- the asked rate ------------------------------------------------------------------------------


RATE_METRICS = (Metric(RATE_ASKED, "1/s", HIGHER), Metric(RATE_DELIVERED, "", HIGHER))


def with_rate(metrics: Iterable[Metric], asked: bool) -> tuple[Metric, ...]:
    """The parser's metrics, and the asked and delivered rate when the command asks a rate."""
    return tuple(metrics) + (RATE_METRICS if asked else ())


def rate_values(tool: str, asked_text: str | None, achieved: float, scale: float = 1.0) -> dict[str, float]:
    """rate_asked (the command's rate times `scale`, e.g. connections) and rate_delivered
    (achieved / asked: below RATE_DELIVERED_FLOOR the load generator fell short of its schedule)."""
    if asked_text is None:
        return {}
    try:
        asked = units.count(asked_text) * scale
    except units.UnitError:
        raise ParseError(f"{tool}: the command asks a rate of {asked_text!r}, which is not a number") from None
    if asked <= 0:
        return {}
    return {RATE_ASKED: asked, RATE_DELIVERED: achieved / asked}


__all__ = ["CommandError", "HIGHER", "LOWER", "Metric", "ParseError", "Parser", "RATE_DELIVERED_FLOOR", "TrialOutput",
           "flag", "missing", "number", "option", "rate_values", "read", "search", "unreadable", "with_rate", "words"]
