"""What the treatment analyses are asked: the claims to check, and how to test them."""

from __future__ import annotations

from dataclasses import dataclass

from benchsage.errors import UsageError
from benchsage.stats.compare import METHODS as COMPARE_METHODS
from benchsage.stats.compare import DEFAULT_RATIO_CI, RATIO_CI_METHODS

SPEC_CLAIM = "[[compare]]"


@dataclass(frozen=True)
class CompareRequest:
    """A claim to check: "a is better than b" on `metric` (None: the tests' primary metric).

    where: where the claim came from, named in error messages ("--compare", "compare="). A
    user's claim that names a test or metric the data lacks is an error; a claim of the
    experiment's spec (where = SPEC_CLAIM) was checked against the spec, so its row says why
    there is nothing to compare instead (every trial of a test may have failed).
    """

    a: str
    b: str
    metric: str | None = None
    where: str = "--compare"


@dataclass(frozen=True)
class TreatmentOptions:
    """How to answer the treatment questions.

    compare: claims to check besides those of the experiment's spec; compare_method: the test of
    a comparison ("mann-whitney", or "touati" for Touati et al.'s Speedup-Test protocol);
    ratio_ci: the interval of a ratio of medians ("bonett-price" or "bauer", stats.compare).
    """

    compare: tuple[CompareRequest, ...] = ()
    compare_method: str = "mann-whitney"
    ratio_ci: str = DEFAULT_RATIO_CI

    def __post_init__(self) -> None:
        if self.compare_method not in COMPARE_METHODS:
            raise UsageError(f"unknown comparison method {self.compare_method!r}: expected one of {', '.join(COMPARE_METHODS)}")
        if self.ratio_ci not in RATIO_CI_METHODS:
            raise UsageError(f"unknown ratio interval {self.ratio_ci!r}: expected one of {', '.join(RATIO_CI_METHODS)}")
