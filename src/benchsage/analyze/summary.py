"""The verdict of an analysis as counts and names, for the report to put into words.

Only the primary comparisons decide it (as `order_matters`): how many there are, how many
could be tested, which differ between the arms, which could not have shown an effect at all,
and how their CI cases fall; before them, the tests that failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from benchsage.vocabulary import FAILED, VERDICT_NO_EFFECT, VERDICT_ORDER_MATTERS, VERDICT_TESTS_FAILED, VERDICT_UNDETECTABLE

if TYPE_CHECKING:
    from benchsage.analyze.verdict import FailedTest, TestVerdict

# The kinds of verdict.
NO_TRIALS = "no-trials"  # the data holds no comparison at all
NO_PRIMARY = "no-primary"  # only metrics outside the correction family
NONE_TESTED = "none-tested"  # no primary comparison could be tested
ORDER_MATTERS = "order-matters"
NO_EFFECT = "no-effect"

CI_CASES = (1, 2, 3, None)  # None: no CI case (too few values for an interval)


@dataclass(frozen=True)
class Summary:
    """The primary comparisons of a set of rows (an analysis, or one worker's).

    kind: one of the kinds above; primary: the primary comparisons; tested: those with a
    p-value; significant: the tested ones that differ between the arms, in row order;
    several_metrics: some test has more than one primary metric (then a comparison is named by
    test and metric); ci_cases: how many primary comparisons fall in each of CI_CASES.
    failed: the tests whose trials failed in full or in more than half (FailedTest.broken);
    blind: the primary comparisons of tests that ran which could not have shown an order
    effect (no p-value, or none that could reach the corrected level); detected: the others
    that were tested, and none of them significant (they bound the effect: min_detectable_pct).
    """

    kind: str
    primary: int
    tested: int
    significant: tuple[TestVerdict, ...]
    several_metrics: bool
    ci_cases: tuple[int, ...]
    failed: tuple[FailedTest, ...] = ()
    blind: tuple[TestVerdict, ...] = ()
    bounded: tuple[TestVerdict, ...] = ()

    @property
    def untested(self) -> int:
        return self.primary - self.tested

    @property
    def verdict(self) -> str:
        """The answer in one word (vocabulary.VERDICTS), the first that applies."""
        if self.failed:
            return VERDICT_TESTS_FAILED
        if self.significant:
            return VERDICT_ORDER_MATTERS
        if self.blind or not self.tested:
            return VERDICT_UNDETECTABLE
        return VERDICT_NO_EFFECT


def summarize(rows: Sequence[TestVerdict], failed: Sequence[FailedTest] = ()) -> Summary:
    """The Summary of `rows` and of the tests that failed."""
    primary = [v for v in rows if v.primary]
    tested = [v for v in primary if v.kw_p is not None]
    ran = [v for v in primary if v.status != FAILED]
    # A row whose detectability was not computed (detectable None) counts as detectable when it
    # has a p-value: it is judged by its test alone, as before.
    blind = tuple(v for v in ran if v.kw_p is None or v.detectable is False)
    bounded = tuple(v for v in tested if not v.significant and v.detectable is not False)
    significant = tuple(v for v in tested if v.significant)
    if not rows:
        kind = NO_TRIALS
    elif not primary:
        kind = NO_PRIMARY
    elif not tested:
        kind = NONE_TESTED
    else:
        kind = ORDER_MATTERS if significant else NO_EFFECT
    cases = tuple(sum(1 for v in primary if v.ci_case == c) for c in CI_CASES)
    return Summary(kind, len(primary), len(tested), significant, len({v.test for v in primary}) != len(primary), cases,
                   tuple(f for f in failed if f.broken), blind, bounded)
