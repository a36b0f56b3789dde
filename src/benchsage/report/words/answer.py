"""The answer first: the lines a reader sees before any table, the same in the terminal and at
the top of the HTML report.

The verdict, then the tests that failed with the reason and their output's last line, then the
declared claims answered, then each test whose order mattered with the size of the effect and
where it comes from, and last how it was decided. Each line carries a tone (what a view may
colour it by), never a style.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from benchsage.analyze.treatments import ComparisonRow
from benchsage.analyze.verdict import Analysis
from benchsage.report.words.comparisons import comparison_sentence
from benchsage.report.words.effects import effect_text, sources
from benchsage.report.words.verdict import failed_text, failures_sentence, method, name_of, order_sentence

# Tones of a line.
EFFECT = "effect"  # an order effect, or a claim that flips
NONE = "none"  # no order effect, or a claim that holds
FAILED = "failed"  # tests that failed
CAUTION = "caution"  # nothing could have been found
PLAIN = "plain"
DIM = "dim"

MAX_TESTS = 10  # tests whose order matters, each on its line, up to this many


@dataclass(frozen=True)
class Line:
    text: str
    tone: str = PLAIN
    indent: int = 0  # levels of indentation under the line before


def answer(analysis: Analysis) -> list[Line]:
    """The one-screen answer of an analysis: the failures, the order verdict and the tests whose
    order matters, the claims, how it was decided."""
    return [*failure_lines(analysis), *order_lines(analysis), *claim_lines(analysis), how_line(analysis)]


def failure_lines(analysis: Analysis) -> list[Line]:
    """The tests that failed, each with its reason and its output's last line; none when none did."""
    s = analysis.summary
    if not s.failed:
        return []
    return [Line(failures_sentence(s.failed), FAILED), *(Line(failed_text(f), FAILED, 1) for f in s.failed)]


def order_lines(analysis: Analysis) -> list[Line]:
    """The order verdict, then each test whose order matters with the size of its effect and
    where it comes from."""
    s = analysis.summary
    order = order_sentence(analysis, s).rstrip(".") + "."
    lines = [Line(order, EFFECT if s.significant else (NONE if s.bounded and not s.blind else CAUTION))]
    for v in s.significant[:MAX_TESTS]:
        size = effect_text(v)
        text = f"{name_of(v, s.several_metrics)}: {size or 'differs between the orders'}"
        found = sources(v, analysis.diagnostics)
        if found:
            text += "; comes from: " + "; ".join(found)
        lines.append(Line(text, EFFECT, 1))
    if len(s.significant) > MAX_TESTS:
        lines.append(Line(f"and {len(s.significant) - MAX_TESTS} more (the table below)", EFFECT, 1))
    return lines


def claim_lines(analysis: Analysis, rows: Sequence[ComparisonRow] | None = None) -> list[Line]:
    """Each declared claim answered (`rows`: these of them; default all), a flip's contexts under it."""
    lines = []
    for row in analysis.comparisons or () if rows is None else rows:
        flips = row.contexts is not None and row.contexts.flips
        lines.append(Line(comparison_sentence(row), EFFECT if flips else (NONE if row.better else PLAIN)))
        against = _against(row) if flips else None
        if against:
            lines.append(Line(against, EFFECT, 1))
    return lines


MAX_FLIP_CONTEXTS = 5  # contexts that favour the other test, named up to this many


def _against(row: ComparisonRow) -> str | None:
    """The contexts where the loser of a claim that flips wins: "o2 is better in: c3
    (env_bytes=4096), c7 (...)"; None when the flip is along a dimension only (the claim's
    sentence names its levels)."""
    if row.better is None:
        return None
    against = [c for c in row.per_context if c.better not in (None, row.better)]
    if not against:
        return None
    names = ", ".join(c.name + (f" ({' '.join(f'{k}={v}' for k, v in c.values.items())})" if c.values else "")
                      for c in against[:MAX_FLIP_CONTEXTS])
    loser = row.b if row.better == "a" else row.a
    more = f" and {len(against) - MAX_FLIP_CONTEXTS} more" if len(against) > MAX_FLIP_CONTEXTS else ""
    return f"{loser} is better in: {names}{more}"


def how_line(analysis: Analysis) -> Line:
    """How it was decided, and what the effects' intervals are."""
    text = method(analysis)
    levels = {v.shift_level for v in analysis.tests if v.primary and v.shift_level is not None}
    if levels:
        level = max(levels)
        text += f"; effects: Hodges-Lehmann fixed/random, {level * 100:.4g}% intervals (the corrected level)"
    return Line(text + ".", DIM)
