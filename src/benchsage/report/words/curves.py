"""The words of response curves: the name of a series, and one sentence per pair of series
saying where along the sweep they differ, e.g. "p99 of wrk: schedutil matches performance up to
conns=8 and is 1.40× slower at 32 (ratio 1.40 [1.38, 1.43], p_adj 4.35e-11)".

The rows give the numbers and decisions (analyze/curves.py); the sentence walks the levels in
order and names each stretch where the series match, where a differs one way, or the other, or
where the corrected test and the simultaneous interval (both over every level and curve)
disagree: undecided. The interval shown is the simultaneous one, so the words never contradict
the numbers beside them.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from benchsage.analyze.curves import CurveComparison, Level
from benchsage.report.quantity import sig3
from benchsage.report.words.comparisons import p_text
from benchsage.report.words.effects import factor

UNTESTED = "untested"
MATCHES = "matches"
UNDECIDED = "undecided"


def series_name(series: Mapping[str, object]) -> str:
    """A series as a reader names it: its level alone with one factor whose level is a word
    ("schedutil"), else with the factor's name ("workers=2", "governor=schedutil, smt=on");
    "all" without factors."""
    if not series:
        return "all"
    if len(series) == 1:
        (name, level), = series.items()
        return str(level) if not _number(str(level)) else f"{name}={level}"
    return ", ".join(f"{k}={v}" for k, v in series.items())


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def fixed_text(fixed: Mapping[str, Level]) -> str:
    """The other sweeps' levels held along a curve: " (size=1k)", or "" without."""
    return f" ({', '.join(f'{k}={v}' for k, v in fixed.items())})" if fixed else ""


def pairs(rows: Iterable[CurveComparison]) -> list[list[CurveComparison]]:
    """The rows grouped by curve and pair of series, each group in level order, groups in the
    order they first appear."""
    groups: dict[tuple[object, ...], list[CurveComparison]] = {}
    for r in rows:
        key = (r.test, r.metric, r.sweep, tuple(r.fixed.items()), tuple(r.a.items()), tuple(r.b.items()))
        groups.setdefault(key, []).append(r)
    return list(groups.values())


def _excludes_one(ci: tuple[float, float] | None) -> bool | None:
    return None if ci is None else not (ci[0] <= 1.0 <= ci[1])


def _state(r: CurveComparison) -> str:
    """What the corrected test and the simultaneous interval say together: a series better,
    the two matching, or undecided where they disagree (or no interval says how close)."""
    if r.comparison.p is None:
        return UNTESTED
    excludes = _excludes_one(r.ci_adjusted)
    if r.better is not None:
        return r.better if excludes is not False else UNDECIDED
    return MATCHES if excludes is False else UNDECIDED


def _stretches(rows: Sequence[CurveComparison]) -> list[list[CurveComparison]]:
    """Consecutive levels in the same state."""
    out: list[list[CurveComparison]] = []
    for r in rows:
        if out and _state(out[-1][-1]) == _state(r):
            out[-1].append(r)
        else:
            out.append([r])
    return out


def _where(stretch: Sequence[CurveComparison], first: bool, last: bool, named: bool) -> str:
    """Where a stretch lies: "up to conns=8", "at 32", "from 8 to 32", "at every level"."""
    low, high = stretch[0].level, stretch[-1].level
    lo, hi = (f"{stretch[0].sweep}={low}" if named else str(low)), str(high)
    if first and last:
        return "at every level" if len(stretch) > 1 else f"at {lo}"
    if len(stretch) == 1:
        return f"at {lo}"
    if first:
        return f"up to {stretch[0].sweep}={high}" if named else f"up to {hi}"
    if last:
        return f"from {lo} on"
    return f"from {lo} to {hi}"


def _how_much(r: CurveComparison) -> str:
    """"1.40× slower", "1.31× lower": a against b at one level, by the ratio of medians."""
    ratio = r.comparison.ratio
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return "different"
    return factor(ratio, None, r.unit if not r.higher_is_better else "")


def _numbers(r: CurveComparison) -> str:
    """The ratio a/b with its simultaneous interval, and the corrected p."""
    c = r.comparison
    parts = []
    if c.ratio is not None:
        ci = f" [{sig3(r.ci_adjusted[0])}, {sig3(r.ci_adjusted[1])}] simultaneous" if r.ci_adjusted is not None else ""
        parts.append(f"ratio {sig3(c.ratio)}{ci}")
    parts.append(f"p_adj {p_text(r.p_adjusted)}")
    return ", ".join(parts)


def _clause(stretch: Sequence[CurveComparison], first: bool, last: bool, b: str) -> str:
    state = _state(stretch[0])
    where = _where(stretch, first, last, named=first)
    if state == MATCHES:
        return f"matches {b} {where}"
    if state == UNTESTED:
        return f"cannot be compared with {b} {where} ({stretch[0].comparison.reason.split(';')[0]})"
    if state == UNDECIDED:
        peak = max(stretch, key=lambda r: abs(math.log(r.comparison.ratio)) if r.comparison.ratio else 0.0)
        return f"is undecided against {b} {where}: the corrected test and the simultaneous interval disagree ({_numbers(peak)})"
    # The level where the series differ most speaks for the stretch.
    peak = max(stretch, key=lambda r: abs(math.log(r.comparison.ratio)) if r.comparison.ratio else 0.0)
    at = "" if len(stretch) == 1 else f", most at {peak.level}"
    return f"is {_how_much(peak)} {where} ({_numbers(peak)}{at})"


def curve_pair_sentence(rows: Sequence[CurveComparison]) -> str:
    """One pair of series along one curve, in level order (the rows of one group of `pairs`):
    where a matches b and where, by how much, it differs."""
    head = rows[0]
    a, b = series_name(head.a), series_name(head.b)
    stretches = _stretches(rows)
    clauses = [_clause(stretch, i == 0, i == len(stretches) - 1, b) for i, stretch in enumerate(stretches)]
    joined = clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + " and " + clauses[-1]
    return f"{head.metric} of {head.test}{fixed_text(head.fixed)}: {a} {joined}"
