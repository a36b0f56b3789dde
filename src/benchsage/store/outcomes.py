"""How each test's trials ended, beside the values of those that succeeded: a test that fails is
an answer too ("typo: 10 of 10 trials failed: exit status 127: sh: 1: pyhton3: not found"), and
the trial table alone, which holds only numbers, cannot say it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from benchsage.vocabulary import OK

TAIL_LINES = 3  # lines of a failed trial's output shown
TAIL_WIDTH = 200  # characters of one such line shown; longer lines end in "…"


@dataclass(frozen=True)
class TestOutcomes:
    """One test's analysed trials by status, the first failed trial's reason and the last lines of
    its output, and the test's primary metrics (the rows a test without any value still gets)."""

    __test__ = False  # not a pytest test class

    test: str
    statuses: tuple[tuple[str, int], ...]  # (status, trials), most first
    reason: str | None = None
    output_tail: str | None = None
    primary: tuple[str, ...] = ()

    @property
    def trials(self) -> int:
        return sum(n for _, n in self.statuses)

    @property
    def failed(self) -> int:
        return sum(n for status, n in self.statuses if status != OK)


def output_tail(stdout: bytes | str | None, stderr: bytes | str | None, lines: int = TAIL_LINES, width: int = TAIL_WIDTH) -> str | None:
    """The last `lines` non-blank lines of a trial's stderr, or of its stdout when stderr holds
    nothing, each cut to `width` characters; None when both are empty."""
    for stream in (stderr, stdout):
        text = stream.decode("utf-8", errors="replace") if isinstance(stream, bytes) else (stream or "")
        kept = [line.rstrip() for line in text.replace("\r", "\n").splitlines() if line.strip()]
        if kept:
            return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in kept[-lines:])
    return None


def merged(outcomes: Iterable[TestOutcomes]) -> tuple[TestOutcomes, ...]:
    """Outcomes of several sources (one per worker's file, ...) combined per test, in order of
    first appearance: counts added, the first failure's reason and output kept."""
    by_test: dict[str, TestOutcomes] = {}
    for o in outcomes:
        seen = by_test.get(o.test)
        if seen is None:
            by_test[o.test] = o
            continue
        counts: dict[str, int] = dict(seen.statuses)
        for status, n in o.statuses:
            counts[status] = counts.get(status, 0) + n
        first = seen if seen.reason is not None or seen.output_tail is not None else o
        by_test[o.test] = TestOutcomes(o.test, by_count(counts), first.reason, first.output_tail, seen.primary or o.primary)
    return tuple(by_test.values())


def by_count(counts: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """(status, trials) pairs, most trials first, then by status name."""
    return tuple(sorted(((s, n) for s, n in counts.items() if n), key=lambda item: (-item[1], item[0])))
