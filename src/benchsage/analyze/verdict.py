"""Typed results of an analysis: one TestVerdict per (test, metric), diagnostics, the Analysis.

These are the values that cross from analyze/ to report/ and to users of the Python API: facts
(numbers, names, kinds), never sentences. report/json.py encodes them as the analysis JSON
that `benchsage analyze --json` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, Iterator, Mapping, Sequence, TypeVar, overload

from benchsage.analyze.identity import Identity
from benchsage.analyze.levels import AcrossLevels

if TYPE_CHECKING:  # imported for annotations only: the treatment analyses load scipy
    from benchsage.analyze.curves import CurveAnalysis
    from benchsage.analyze.diagnostics.notes import BalanceDetail, InterleavingDetail
    from benchsage.analyze.summary import Summary
    from benchsage.analyze.treatments.comparisons import ComparisonRow
    from benchsage.analyze.treatments.contexts import ContextEffect
    from benchsage.analyze.treatments.factorial import FactorialRow
    from benchsage.analyze.treatments.observer import ObserverEffect

_Row = TypeVar("_Row")


@dataclass(frozen=True)
class TestVerdict:
    """Fixed arm vs random arm for one test and one metric (paper Tables 3-5, one row)."""

    __test__ = False  # not a pytest test class

    test: str
    metric: str
    primary: bool
    n_fixed: int
    n_random: int
    kw_h: float | None
    kw_p: float | None
    p_adjusted: float | None  # after the family-wise correction of its family
    significant: bool | None
    eta2: float | None
    delta_pct: float | None
    cv_fixed: float | None
    cv_random: float | None
    mean_fixed: float | None
    mean_random: float | None
    median_fixed: float | None
    ci_fixed: tuple[float, float] | None
    median_random: float | None
    ci_random: tuple[float, float] | None
    ci_case: int | None
    unit: str = ""
    better: str = ""
    notes: tuple[Any, ...] = ()  # why a field is null: notes of analyze/notes.py (report/words/ says them)
    # "ok", or "failed": no trial of the test succeeded, and every statistic is None
    # (Analysis.failed_tests says how its trials failed).
    status: str = "ok"
    # The size of the order effect, the fixed arm against the random arm: the Hodges-Lehmann
    # estimate, a ratio fixed/random (shift_kind "ratio", values all positive) or a difference
    # fixed - random ("difference"), with its distribution-free interval at shift_level (one
    # minus the family's corrected alpha, so that the interval excludes no effect when the row
    # is significant; exactly so for untied values, analyze/effects.py). None where the row has
    # no p-value (arms too small, values all equal) or the analysis is too large to afford it
    # (effects.MAX_SHIFT_PAIRS); shift_ci alone None where no finite interval has the level
    # (few values: the row cannot be significant either).
    shift: float | None = None
    shift_ci: tuple[float, float] | None = None
    shift_level: float | None = None
    shift_kind: str | None = None
    # Primary rows only (None otherwise): could any arrangement of these values between the arms
    # reach the corrected level (least_p: the smallest p the row's test can give at these n and
    # values; None, and detectable False, where the row has no p-value), and the smallest shift
    # of the fixed arm, in percent, that this design finds with 80% power given the observed
    # values (None when none does, or the analysis is too large: effects.MAX_SIMULATION).
    detectable: bool | None = None
    least_p: float | None = None
    min_detectable_pct: float | None = None
    # With treatment cells (factors, contexts; analyze/cells.py): each cell's arms, from the
    # values as measured (not level-free), a fleet's workers pooled; None without cells.
    cells: tuple[CellArms, ...] | None = None


@dataclass(frozen=True)
class CellArms:
    """One treatment cell of a test row (a combination of factor levels and context): its
    arms' sizes, medians and intervals (at the analysis's ci_level, by its ci_method), of the
    cell's values as measured; an arm without values has n 0 and no median."""

    # (dimension, level), in the table's dimension order: a factor by its name ("server"), the
    # context as "context"; a dimension whose level is not known is left out.
    cell: tuple[tuple[str, str], ...]
    n_fixed: int
    n_random: int
    median_fixed: float | None
    median_random: float | None
    ci_fixed: tuple[float, float] | None
    ci_random: tuple[float, float] | None


@dataclass(frozen=True)
class FailedTest:
    """A test some of whose analysed trials did not succeed: how many of how many, by status,
    and the first failure's reason and the last lines of its output (stderr, else stdout)."""

    __test__ = False  # not a pytest test class

    test: str
    failed: int
    trials: int
    statuses: tuple[tuple[str, int], ...]  # (status, trials), most first
    reason: str | None
    output_tail: str | None

    @property
    def broken(self) -> bool:
        """No trial succeeded, or more than half failed: the experiment's answer about this
        test cannot be trusted (exit status 4)."""
        return self.failed == self.trials or 2 * self.failed > self.trials


@dataclass(frozen=True)
class Interleaving:
    interleaved: bool | None
    detail: InterleavingDetail  # why: report/words/diagnostics.py says it
    n_fixed_runs: int = 0
    n_random_runs: int = 0


@dataclass(frozen=True)
class PositionEffect:
    test: str
    metric: str
    position: int
    n_at: int
    n_other: int
    median_at: float | None
    median_other: float | None
    effect_pct: float | None
    p: float | None
    p_adjusted: float | None
    significant: bool | None
    # Large experiments bin positions: the row covers position..position_last. None: one position.
    position_last: int | None = None


@dataclass(frozen=True)
class Carryover:
    test: str
    metric: str
    after: str
    n_after: int
    n_other: int
    median_after: float | None
    median_other: float | None
    effect_pct: float | None
    p: float | None
    p_adjusted: float | None
    significant: bool | None


@dataclass(frozen=True)
class CarryoverBalance:
    """Whether the random arm's first-order carry-over is balanced in the data: on every worker,
    each test sat at each position equally often and each test came right after each other
    test equally often (counted over the trials analysed), so that every carry-over estimate
    rests on as many values as every other. Complete Williams squares are balanced; shuffled
    orders generally are not. `random_orders` and the square counts come from the plan when
    the source records it (null otherwise); the counts are the smallest and largest over
    workers and cells."""

    balanced: bool | None  # None: nothing to count (one test, or no predecessors known)
    detail: BalanceDetail  # the counts behind the verdict: report/words/diagnostics.py says them
    random_orders: str | None
    runs: int  # random-arm runs counted
    tests: int
    pair_min: int | None  # times an ordered pair of different tests was adjacent, fewest and most
    pair_max: int | None
    position_min: int | None  # times a test sat at a position, fewest and most
    position_max: int | None
    square_rows: int | None = None  # Williams orders: rows of one square
    complete_squares: int | None = None  # Williams orders: complete squares, over all workers


@dataclass(frozen=True)
class Trend:
    test: str
    metric: str
    arm: str
    n: int
    spearman_rho: float | None
    p: float | None
    p_adjusted: float | None = None
    significant: bool | None = None


class Rows(Sequence[_Row], Generic[_Row]):
    """An immutable sequence of diagnostic rows (PositionEffect, Carryover or Trend) stored as
    columns of JSON-ready values (None where a number is undefined); a row object is built only
    when it is looked at. A paper-scale analysis has tens of thousands of rows, which the JSON
    output then encodes column by column (report/json.py) without making any.

    Compares equal to a tuple (or Rows) holding the same rows.
    """

    __slots__ = ("kind", "names", "columns", "_n")

    def __init__(self, kind: type[_Row], columns: dict[str, Sequence[Any]]) -> None:
        self.kind = kind
        self.names = tuple(f.name for f in fields(kind))  # type: ignore[arg-type]
        missing = set(self.names) - set(columns)
        if missing:
            raise ValueError(f"Rows of {kind.__name__}: no column for {', '.join(sorted(missing))}")
        self.columns = tuple(list(columns[name]) for name in self.names)
        lengths = {len(c) for c in self.columns}
        if len(lengths) > 1:
            raise ValueError(f"Rows of {kind.__name__}: columns of different lengths {sorted(lengths)}")
        self._n = lengths.pop() if lengths else 0

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> _Row: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[_Row, ...]: ...
    def __getitem__(self, index: int | slice) -> _Row | tuple[_Row, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("row index out of range")
        return self.kind(*(c[index] for c in self.columns))

    def __iter__(self) -> Iterator[_Row]:
        return map(self.kind, *self.columns)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Rows, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Rows({self.kind.__name__}, {self._n} rows)"

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts (field name -> value), without building row objects."""
        names = self.names
        return [dict(zip(names, values)) for values in zip(*self.columns)]


@dataclass(frozen=True)
class _WorkersOfTest:
    test: str
    metric: str
    workers: int


@dataclass(frozen=True)
class FleetRow(AcrossLevels, _WorkersOfTest):
    """Do the workers measure the same thing? One test and metric across its workers (all values
    of both arms of each worker), as AcrossLevels; `outliers`: the workers whose values differ
    from all the others' pooled (see analyze/fleet.py)."""

    outliers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Diagnostics:
    interleaving: Interleaving | None
    position_effects: Sequence[PositionEffect] = ()
    carryover: Sequence[Carryover] = ()
    trends: Sequence[Trend] = ()
    workers: dict[str, Any] | None = None  # software hashes per worker when they differ
    # A fleet's diagnostics (data from more than one worker); None otherwise.
    fleet: Sequence[FleetRow] | None = None
    identity: Identity | None = None
    carryover_balance: CarryoverBalance | None = None  # whether the carry-over estimates are balanced


@dataclass(frozen=True)
class Combined:
    """How the top-level rows combine blocks whose levels differ: the workers of a fleet and the
    treatment cells (factor levels, measurement contexts; analyze/cells.py). workers: the workers
    that hold rows (1: not a fleet); cells: the treatment cells (1: none, or not stratified by
    them); method: how (analyze/strata.py)."""

    workers: int
    method: str
    cells: int = 1

    @property
    def fleet(self) -> bool:
        """More than one worker: the analysis has per-worker verdicts and fleet diagnostics."""
        return self.workers > 1


@dataclass(frozen=True)
class WorkerVerdicts:
    """One worker's own analysis: its rows, corrected within the worker's family; from a
    journal, the runs it did and the distinct boot ids among them (a reboot reset gives each
    run its own); None when the source does not say."""

    worker: str
    order_matters: bool
    alpha_corrected: float | None
    tests: tuple[TestVerdict, ...]
    runs: int | None = None
    boots: int | None = None

    @property
    def summary(self) -> Summary:
        """The worker's primary comparisons as counts and names (analyze/summary.py)."""
        from benchsage.analyze.summary import summarize

        return summarize(self.tests)


@dataclass(frozen=True)
class Sequential:
    """The looks of a sequential experiment (`stop = "sequential"`).

    summary: the JSON's "sequential" object (looks, stopped_at_runs, max_runs, method, ...);
    decisions: by (test, metric), its decision ("effect", "no-effect" or None) and the runs per
    arm on each worker when it was made, as of the last look.
    """

    summary: Mapping[str, Any]
    decisions: Mapping[tuple[str, str], tuple[str | None, int | None]]

    def row(self, test: str, metric: str) -> dict[str, Any]:
        """A test row's "decided" and "decided_at_runs" (null for a metric outside the family)."""
        decided, at_runs = self.decisions.get((test, metric), (None, None))
        return {"decided": decided, "decided_at_runs": at_runs}


@dataclass(frozen=True)
class Analysis:
    """Everything `benchsage analyze` concludes about one data set."""

    tool_version: str
    alpha: float
    correction: str
    alpha_corrected: float | None
    ci_method: str
    ci_level: float
    ci_case_rule: str
    order_matters: bool
    tests: tuple[TestVerdict, ...]
    # Notes of analyze/notes.py and the importers' warnings (text), each once; report/words/ says them.
    warnings: tuple[Any, ...] = ()
    diagnostics: Diagnostics | None = None
    sources: tuple[str, ...] = ()
    excluded: int = 0
    provenance: dict[str, Any] = field(default_factory=dict)
    # Data from more than one worker or treatment cell: how the rows combine them (None: pooled,
    # Kruskal-Wallis); a fleet's workers (more than one): each worker's own verdict.
    combined: Combined | None = None
    workers: tuple[WorkerVerdicts, ...] = ()
    # Treatments (analyze/treatments/): None when the data has none of that kind; the JSON
    # then has no such key.
    comparisons: tuple[ComparisonRow, ...] | None = None
    context_effects: tuple[ContextEffect, ...] | None = None
    observer: tuple[ObserverEffect, ...] | None = None
    factorial: tuple[FactorialRow, ...] | None = None
    # Response curves of swept tests (analyze/curves.py); None without sweeps, and the JSON
    # then has no "curves" or "curve_comparisons" key.
    curves: CurveAnalysis | None = None
    # A sequential experiment's looks; None otherwise, and the JSON has no "sequential" key.
    sequential: Sequential | None = None
    # The trial table the analysis read: its values (rows), and the runs they come from.
    values: int = 0
    runs: int = 0
    # Tests with trials that did not succeed, in test order (empty when every trial succeeded
    # or the source does not say).
    failed_tests: tuple[FailedTest, ...] = ()

    @property
    def fleet(self) -> bool:
        """Data from more than one worker (not merely stratified by treatment cell)."""
        return self.combined is not None and self.combined.fleet

    @property
    def significant_tests(self) -> tuple[TestVerdict, ...]:
        return tuple(v for v in self.tests if v.primary and v.significant)

    @property
    def summary(self) -> Summary:
        """The verdict as counts and names (analyze/summary.py)."""
        from benchsage.analyze.summary import summarize

        return summarize(self.tests, self.failed_tests)

    @property
    def verdict(self) -> str:
        """The answer in one word: vocabulary.VERDICTS (the JSON's "verdict")."""
        return self.summary.verdict

    @property
    def tests_failed(self) -> bool:
        """Some test failed in every trial or in more than half of them (exit status 4)."""
        return any(f.broken for f in self.failed_tests)
