"""The verdict of an analysis as counts and names, for the report to put into words.

Only the primary comparisons decide it (as `order_matters`): how many there are, how many
could be tested, which differ between the arms, and how their CI cases fall.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from benchsage.analyze.verdict import TestVerdict

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
    """

    kind: str
    primary: int
    tested: int
    significant: tuple[TestVerdict, ...]
    several_metrics: bool
    ci_cases: tuple[int, ...]

    @property
    def untested(self) -> int:
        return self.primary - self.tested


def summarize(rows: Sequence[TestVerdict]) -> Summary:
    """The Summary of `rows`."""
    primary = [v for v in rows if v.primary]
    tested = [v for v in primary if v.kw_p is not None]
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
    return Summary(kind, len(primary), len(tested), significant, len({v.test for v in primary}) != len(primary), cases)
