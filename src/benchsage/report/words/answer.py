"""The answer first: the lines a reader sees before any table, the same in the terminal and at
the top of the HTML report.

The verdict, then the tests that failed with the reason and their output's last line, then the
declared claims answered, then each test whose order mattered with the size of the effect and
where it comes from, and last how it was decided. Each line carries a tone (what a view may
colour it by), never a style.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """The one-screen answer of an analysis."""
    s = analysis.summary
    lines: list[Line] = []
    order = order_sentence(analysis, s).rstrip(".") + "."
    order_tone = EFFECT if s.significant else (NONE if s.bounded and not s.blind else CAUTION)
    if s.failed:
        lines.append(Line(failures_sentence(s.failed), FAILED))
        lines.extend(Line(failed_text(f), FAILED, 1) for f in s.failed)
        lines.append(Line(order, order_tone))
    else:
        lines.append(Line(order, order_tone))
    for v in s.significant[:MAX_TESTS]:
        size = effect_text(v)
        text = f"{name_of(v, s.several_metrics)}: {size or 'differs between the orders'}"
        found = sources(v, analysis.diagnostics)
        if found:
            text += "; comes from: " + "; ".join(found)
        lines.append(Line(text, EFFECT, 1))
    if len(s.significant) > MAX_TESTS:
        lines.append(Line(f"and {len(s.significant) - MAX_TESTS} more (the table below)", EFFECT, 1))
    for row in analysis.comparisons or ():
        flips = row.contexts is not None and row.contexts.flips
        lines.append(Line(comparison_sentence(row), EFFECT if flips else (NONE if row.better else PLAIN)))
        against = _against(row) if flips else None
        if against:
            lines.append(Line(against, EFFECT, 1))
    lines.append(Line(_how(analysis), DIM))
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


def _how(analysis: Analysis) -> str:
    """How it was decided, and what the effects' intervals are."""
    text = method(analysis)
    levels = {v.shift_level for v in analysis.tests if v.primary and v.shift_level is not None}
    if levels:
        level = max(levels)
        text += f"; effects: Hodges-Lehmann fixed/random, {level * 100:.4g}% intervals (the corrected level)"
    return text + "."
