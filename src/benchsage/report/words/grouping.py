"""Warnings said once per kind: "too few values for a 95% CI of the median (at least 6 per arm):
6 comparisons of 1 test (ok: wall_time, user_time, ...)" instead of one sentence per metric.

A note about a test row (analyze/notes.py OnTest and what it wraps) is grouped with the notes of
its kind that read the same once their subject is taken out; every other warning is said as it
is, once. The full sentences stay in the JSON and behind `--all`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, TypeVar

from benchsage.analyze.measurement import RssAtFloor
from benchsage.analyze.notes import AllEqual, EmptyArm, NoStrata, OnTest, TooFewForCI, TooFewToTest, ZeroFixedMean
from benchsage.report.words.registry import count, say

_F = TypeVar("_F", bound=Callable[[Any], str])
_BRIEF: dict[type, Callable[[Any], str]] = {}
MAX_SUBJECTS = 4  # tests named in a grouped warning, then "and N more"


def brief(kind: type) -> Callable[[_F], _F]:
    """Register the words of a kind of row note without its subject (the test and metric)."""

    def register(say_it: _F) -> _F:
        _BRIEF[kind] = say_it
        return say_it

    return register


@brief(TooFewForCI)
def _too_few_for_ci(note: TooFewForCI) -> str:
    return f"too few values for a {note.level * 100:g}% {note.method} CI of the median (at least {note.least} per arm)"


@brief(TooFewToTest)
def _too_few_to_test(note: TooFewToTest) -> str:
    return f"too few values to test (Kruskal-Wallis needs at least {note.least} per arm)"


@brief(AllEqual)
def _all_equal(note: AllEqual) -> str:
    return "all values equal: Kruskal-Wallis is undefined"


@brief(EmptyArm)
def _empty_arm(note: EmptyArm) -> str:
    return "an arm without values: nothing to compare"


@brief(ZeroFixedMean)
def _zero_fixed_mean(note: ZeroFixedMean) -> str:
    return "the fixed arm's mean is 0: Δ% is undefined"


@brief(NoStrata)
def _no_strata(note: NoStrata) -> str:
    return "no worker has values in both arms: the stratified test has nothing to compare"


@brief(RssAtFloor)
def _rss_at_floor(note: RssAtFloor) -> str:
    return "max_rss at the floor of what wait4 can show, so it cannot tell the trial's own memory" + (
        " (read peak_memory)" if note.has_peak_memory else "")


def grouped(warnings: Iterable[Any]) -> list[str]:
    """One line per kind of warning, in order of first appearance: row notes with their count
    and the tests they concern, the other warnings each once."""
    groups: dict[str, dict[str, list[str]]] = {}  # words -> test -> metrics
    for w in warnings:
        if not isinstance(w, OnTest):
            groups.setdefault(say(w), {})
            continue
        notes = w.notes
        plain = [n for n in notes if type(n) not in _BRIEF]
        if plain:  # a note without words of its own kind: said whole, with its subject
            groups.setdefault(f"{w.test} ({w.metric}): {'; '.join(say(n) for n in plain)}", {})
        for n in notes:
            if type(n) in _BRIEF:
                tests = groups.setdefault(_BRIEF[type(n)](n), {})
                tests.setdefault(w.test, []).append(w.metric)
    return [_line(text, tests) for text, tests in groups.items()]


def _line(text: str, tests: dict[str, list[str]]) -> str:
    if not tests:
        return text
    comparisons = sum(len(set(metrics)) for metrics in tests.values())
    shown = [f"{test} ({', '.join(dict.fromkeys(metrics))})" for test, metrics in list(tests.items())[:MAX_SUBJECTS]]
    more = f" and {len(tests) - MAX_SUBJECTS} more" if len(tests) > MAX_SUBJECTS else ""
    which = count(len(tests), "test") if comparisons == len(tests) else f"{count(comparisons, 'comparison')} of {count(len(tests), 'test')}"
    return f"{text}: {which}: {', '.join(shown)}{more}"
