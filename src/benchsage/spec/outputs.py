"""A test's `output` (a built-in parser of its tool's output) and `primary` (the metrics of its
correction family), and the unit group of a metric's regex: validated against parsers/ and its
unit table, so that a name or unit that cannot work stops the spec (exit 2) instead of a run.
"""

from __future__ import annotations

import re
from re import _parser as sre  # type: ignore[attr-defined]  # the regex's parse tree: its unit group's literals
from typing import Any, Mapping

from benchsage.parsers import PARSERS, CommandError
from benchsage.parsers import units
from benchsage.spec import fields
from benchsage.spec.model import MetricSpec
from benchsage.vocabulary import HARNESS_METRIC_UNITS


def parser_metrics(w: fields.Where, here: str, item: Mapping[str, Any], command: str) -> tuple[str | None, tuple[MetricSpec, ...],
                                                                                                 tuple[str, ...]]:
    """The test's parser name, the metrics it gives for this command, and its default primary ones."""
    name = fields.string(w, here, item, "output")
    if name is None:
        return None, (), ()
    parser = PARSERS.get(name)
    if parser is None:
        raise w.error(here, f"key 'output' names no known parser: {name!r} (known: {', '.join(PARSERS)})")
    try:
        metrics = parser.metrics(command)
        primary = parser.primary(command)
    except CommandError as exc:
        raise w.error(here, f"key 'output' = {name!r}: {exc}") from None
    return name, tuple(MetricSpec(m.name, m.unit, m.better, parser=name) for m in metrics), primary


def primary(w: fields.Where, here: str, item: Mapping[str, Any], metrics: tuple[MetricSpec, ...],
            default: tuple[str, ...]) -> tuple[str, ...]:
    """`primary`: metrics the test records (its own, its parser's, the harness's), else `default`."""
    if "primary" not in item:
        return default
    chosen = fields.string_list(w, here, item, "primary", required=True)
    known = [m.name for m in metrics] + [n for n in HARNESS_METRIC_UNITS if n not in {m.name for m in metrics}]
    for name in chosen:
        if name not in known:
            raise w.error(here, f"key 'primary' names {name!r}, which the test does not record (it records: {', '.join(known)})")
    if len(set(chosen)) != len(chosen):
        raise w.error(here, "key 'primary' names a metric twice")
    return chosen


def check_regex_unit(w: fields.Where, here: str, compiled: re.Pattern[str], unit: str) -> None:
    """A regex with a second group converts the value from that group's unit to `unit` when
    `unit` is one units.py knows (otherwise the group is not read, as before units were): each
    unit the group can match (when it is literals or an alternation of them, the usual
    `(us|ms|s)`) must convert to it, and a group of units needs a `unit` to convert to."""
    if compiled.groups < 2:
        return
    literals = _literals(compiled.pattern) or []
    if unit not in units.UNITS:
        if literals and all(literal in units.UNITS for literal in literals):
            raise w.error(here, f"key 'unit' = {unit!r}: the regex's second group reads a unit ({'|'.join(literals)}), "
                                "and the value is converted to 'unit', which must be a unit benchsage knows "
                                f"(e.g. {', '.join(sorted({units.BASE[units.UNITS[x].dimension] or 'count' for x in literals}))})")
        return
    for literal in literals:
        if not units.convertible(literal, unit):
            what = "is not a unit benchsage knows" if literal not in units.UNITS else f"cannot be converted to {unit!r}"
            raise w.error(here, f"key 'regex': its unit group can match {literal!r}, which {what}")


def _literals(pattern: str) -> list[str] | None:
    """The strings the regex's second group matches when it is literals or an alternation of
    them; None when it can match more (then units are checked at each trial)."""
    try:
        tree = sre.parse(pattern)
    except Exception:  # noqa: BLE001 - re.compile accepted it; a parse-tree surprise only skips the check
        return None
    group = _find_group(list(tree), 2)
    return None if group is None else _alternatives(list(group))


def _find_group(items: list[Any], number: int) -> Any:
    for op, av in items:
        if op is sre.SUBPATTERN:
            if av[0] == number:
                return av[-1]
            found = _find_group(list(av[-1]), number)
        elif op is sre.BRANCH:
            found = next((g for b in av[1] if (g := _find_group(list(b), number)) is not None), None)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
            found = _find_group(list(av[2]), number)
        else:
            found = None
        if found is not None:
            return found
    return None


def _alternatives(items: list[Any]) -> list[str] | None:
    if len(items) == 1 and items[0][0] is sre.BRANCH:
        out: list[str] = []
        for branch in items[0][1][1]:
            more = _alternatives(list(branch))
            if more is None:
                return None
            out += more
        return out
    if len(items) == 1 and items[0][0] is sre.IN:  # (s|m) may compile to a character set [sm]
        chars = [chr(av) for op, av in items[0][1] if op is sre.LITERAL]
        return chars if len(chars) == len(items[0][1]) else None
    if all(op is sre.LITERAL for op, _ in items):
        return ["".join(chr(av) for _, av in items)]
    return None
