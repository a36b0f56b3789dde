"""Stop an experiment whose test cannot run: a test that failed in each of its first trials (a
typo in its command, a missing file) would fail in every later one, and an hour of a fleet's
time is not the way to learn it. hyperfine stops at the first failure; here a test gets
FAIL_FAST_TRIALS tries, runs end whole (their trials stay in the journal and the analysis), and
`--ignore-failures` carries on regardless.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Sequence

from benchsage.store.journal import Journal
from benchsage.vocabulary import OK

FAIL_FAST_TRIALS = 2  # trials of a test, all failed and none ok, that stop the experiment


@dataclass(frozen=True)
class Failing:
    """A test that failed in every one of its `trials` trials so far, and its last failure."""

    test: str
    trials: int
    reason: str | None
    output: str | None


class FailureWatch:
    """Each test's trials and successes, the journal's analysed ones and this session's; after a
    run ends, the tests that give no reason to go on. Called from every worker's thread."""

    def __init__(self, journal: Journal, tests: Sequence[str], *, enabled: bool) -> None:
        self.enabled = enabled
        self.tests = tuple(tests)
        self.lock = threading.Lock()
        counts = journal.test_successes() if enabled else {}
        self.trials = {i: counts.get(i, (0, 0))[0] for i in range(len(tests))}
        self.ok = {i: counts.get(i, (0, 0))[1] for i in range(len(tests))}
        self.last: dict[int, tuple[str | None, str | None]] = {}

    def trial(self, test_id: int, status: str, reason: str | None, output: str | None) -> None:
        if not self.enabled:
            return
        with self.lock:
            self.trials[test_id] += 1
            if status == OK:
                self.ok[test_id] += 1
            else:
                self.last[test_id] = (reason, output)

    def failing(self) -> tuple[Failing, ...]:
        """The tests with at least FAIL_FAST_TRIALS trials and not one success (none when the
        watch is off)."""
        if not self.enabled:
            return ()
        with self.lock:
            return tuple(Failing(self.tests[i], n, *self.last.get(i, (None, None)))
                         for i, n in self.trials.items() if n >= FAIL_FAST_TRIALS and self.ok[i] == 0)
