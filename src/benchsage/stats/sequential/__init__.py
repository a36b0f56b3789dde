"""Sequential stopping: decide each test's order effect at interim looks, with fewer runs.

A group-sequential design looks at the fixed and random arms after n_1 < n_2 < ... < n_K runs
per arm. At every look each undecided test is either decided "effect" (its Mann-Whitney
statistic crosses a Lan-DeMets alpha-spending boundary; the family-wise error over tests and
looks stays at most alpha, by Bonferroni or a group-sequential Holm step-down) or "no-effect"
(the repeated confidence interval of the shift between arms lies within +-min_effect % of the
fixed-arm median), or stays undecided. The experiment can stop when every test is decided, or
(rule "verdict") when its verdict is settled: an effect in some test, or none in any.

Pure functions and frozen values only, a file per concern: spending.py (the spending
functions), boundaries.py (the critical values they give), decision.py (the decision at one
look), looks.py (what a look found), design.py (the design; the runner calls
`SequentialDesign.decide` between runs). The statistics are stats/ranksum.py's Mann-Whitney z
and stats/shift.py's Hodges-Lehmann interval.
"""

from benchsage.stats.sequential.boundaries import Boundaries, spending_boundaries
from benchsage.stats.sequential.decision import (
    DECIDED_EFFECT,
    DECIDED_NO_EFFECT,
    EFFECT,
    NO_EFFECT,
    RULES,
    UNDECIDED,
    decide_step,
    relative_interval,
    settled,
    stops,
)
from benchsage.stats.sequential.design import CORRECTIONS, SequentialDesign
from benchsage.stats.sequential.looks import Look, TestLook
from benchsage.stats.sequential.spending import SPENDINGS, alpha_spending

__all__ = [
    "CORRECTIONS",
    "DECIDED_EFFECT",
    "DECIDED_NO_EFFECT",
    "EFFECT",
    "NO_EFFECT",
    "RULES",
    "SPENDINGS",
    "UNDECIDED",
    "Boundaries",
    "Look",
    "SequentialDesign",
    "TestLook",
    "alpha_spending",
    "decide_step",
    "relative_interval",
    "settled",
    "spending_boundaries",
    "stops",
]
