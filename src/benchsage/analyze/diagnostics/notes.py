"""What the design diagnostics found, as data: the detail of an Interleaving and of a
CarryoverBalance, and the warning that the arms were not interleaved.

Each note is a small frozen value, its kind and the numbers and names it is about; the words
are in report/words/diagnostics.py, so the terminal, the HTML report, the JSON and the notebook
API all say the same thing, and a reader of the data gets the numbers rather than a sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from benchsage.design.williams import Squares

# -- interleaving ------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoRunStarts:
    """No run has a start time: whether the arms were interleaved cannot be told."""


@dataclass(frozen=True)
class OneArm:
    """A worker ran the runs of one arm only (`arm`: its name), `runs` of them."""

    arm: str
    runs: int


@dataclass(frozen=True)
class ArmFirst:
    """All `n_first` runs of arm `first` came before all `n_then` runs of arm `then`."""

    first: str
    n_first: int
    then: str
    n_then: int


@dataclass(frozen=True)
class RunsTest:
    """The Wald-Wolfowitz runs test on a worker's arms in time order: `stretches` of one arm
    against `expected` by chance, one-sided `p`; `interleaved` False when the arms are
    clustered in time (p < alpha)."""

    interleaved: bool
    n_fixed: int
    n_random: int
    stretches: int
    expected: float
    p: float


Judgement = Union[OneArm, ArmFirst, RunsTest]


@dataclass(frozen=True)
class OnWorker:
    """One worker's judgement, in a fleet."""

    worker: str
    judgement: Judgement


@dataclass(frozen=True)
class WorkersInterleaved:
    """A fleet with too many workers to judge one by one: `interleaved` of `workers` were."""

    interleaved: int
    workers: int


@dataclass(frozen=True)
class RunsWithoutStart:
    """`runs` runs had no start time and were left out of the judgement."""

    runs: int


InterleavingPart = Union[NoRunStarts, Judgement, OnWorker, WorkersInterleaved, RunsWithoutStart]


@dataclass(frozen=True)
class InterleavingDetail:
    """Why the arms count as interleaved or not: the problems first, one part each."""

    parts: tuple[InterleavingPart, ...]


@dataclass(frozen=True)
class NotInterleaved:
    """A warning of the analysis: the arms were not interleaved in time (see `detail`), so
    drift over time can look like an order effect."""

    detail: InterleavingDetail


# -- carry-over balance ------------------------------------------------------------------------


@dataclass(frozen=True)
class OneTest:
    """One test only: nothing carries over from one test to another."""


@dataclass(frozen=True)
class Balanced:
    """Carry-over is balanced in `runs` random runs of `workers` workers (counted per worker):
    on each worker each test came right after each other test `pair_low`..`pair_high` times
    (the fewest and most over workers) and sat at each position `position_low`..`position_high`
    times. Williams orders: `complete_squares` of `square_rows` rows (None otherwise)."""

    runs: int
    workers: int
    pair_low: int
    pair_high: int
    position_low: int
    position_high: int
    complete_squares: int | None = None
    square_rows: int | None = None


@dataclass(frozen=True)
class IncompleteSquare:
    """One worker's `runs` random runs end in an incomplete Williams square."""

    squares: Squares
    runs: int


@dataclass(frozen=True)
class IncompleteSquares:
    """A fleet's Williams orders: `complete` squares of `rows` rows over all workers, and
    `incomplete` of `workers` workers end in an incomplete square."""

    complete: int
    rows: int
    incomplete: int
    workers: int


@dataclass(frozen=True)
class ShuffledOrders:
    """The random orders were shuffled, which balances carry-over only on average."""


Imbalance = Union[IncompleteSquare, IncompleteSquares, ShuffledOrders]


@dataclass(frozen=True)
class NotBalanced:
    """Carry-over is not balanced in `runs` random runs of `workers` workers: a test came right
    after another `pair_min`..`pair_max` times and sat at a position `position_min`..`position_max`
    times; `missing` trials of those runs are not in the data, `repeats` when a run holds a test
    twice, and `cause` the orders' part in it when known."""

    runs: int
    workers: int
    pair_min: int
    pair_max: int
    position_min: int
    position_max: int
    missing: int = 0
    repeats: bool = False
    cause: Imbalance | None = None


BalanceDetail = Union[OneTest, Balanced, NotBalanced]

# Every kind of note above: each has its words in report/words/diagnostics.py.
NOTES: tuple[type, ...] = (
    NoRunStarts, OneArm, ArmFirst, RunsTest, OnWorker, WorkersInterleaved, RunsWithoutStart, InterleavingDetail,
    NotInterleaved, OneTest, Balanced, IncompleteSquare, IncompleteSquares, ShuffledOrders, NotBalanced,
)
