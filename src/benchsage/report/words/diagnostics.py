"""The words of the design diagnostics: why the arms count as interleaved in time or not, and
whether the random arm's carry-over is balanced (analyze/diagnostics/notes.py holds the data).

The sentences name the counts and the test behind each judgement, so that a reader can check
it against the runs.
"""

from __future__ import annotations

from benchsage.analyze.diagnostics.notes import (
    ArmFirst, Balanced, IncompleteSquare, IncompleteSquares, InterleavingDetail, NoRunStarts, NotBalanced, NotInterleaved,
    OneArm, OneTest, OnWorker, RunsTest, RunsWithoutStart, ShuffledOrders, WorkersInterleaved,
)
from benchsage.report.words.registry import count, said, say, words

# -- interleaving ------------------------------------------------------------------------------


@words(NoRunStarts)
def _no_run_starts(note: NoRunStarts) -> str:
    return "no run start times in the data: cannot tell whether the arms were interleaved"


@words(OneArm)
def _one_arm(note: OneArm) -> str:
    """'only fixed runs (10): the other arm ran elsewhere or not at all'."""
    return f"only {note.arm} runs ({note.runs}): the other arm ran elsewhere or not at all"


@words(ArmFirst)
def _arm_first(note: ArmFirst) -> str:
    """'all 50 fixed runs precede all 50 random runs'."""
    return f"all {note.n_first} {note.first} runs precede all {note.n_then} {note.then} runs"


@words(RunsTest)
def _runs_test(note: RunsTest) -> str:
    """'15 fixed and 15 random runs are interleaved in time: 16 stretches of one arm, 16.0
    expected by chance (Wald-Wolfowitz runs test, one-sided p = 0.5)'."""
    state = "interleaved" if note.interleaved else "clustered"
    test = (f"{note.stretches} stretches of one arm, {note.expected:.1f} expected by chance "
            f"(Wald-Wolfowitz runs test, one-sided p = {note.p:.3g})")
    return f"{note.n_fixed} fixed and {note.n_random} random runs are {state} in time: {test}"


@words(OnWorker)
def _on_worker(note: OnWorker) -> str:
    """'worker w0: only fixed runs (10): ...'."""
    return f"worker {note.worker}: {say(note.judgement)}"


@words(WorkersInterleaved)
def _workers_interleaved(note: WorkersInterleaved) -> str:
    return f"{note.interleaved} of {note.workers} workers interleaved"


@words(RunsWithoutStart)
def _runs_without_start(note: RunsWithoutStart) -> str:
    return f"{count(note.runs, 'run')} without a start time left out"


@words(InterleavingDetail)
def _interleaving_detail(note: InterleavingDetail) -> str:
    """The parts, problems first, separated by semicolons."""
    return "; ".join(said(note.parts))


@words(NotInterleaved)
def _not_interleaved(note: NotInterleaved) -> str:
    return f"the arms were not interleaved in time ({say(note.detail)}): drift over time can look like an order effect"


# -- carry-over balance ------------------------------------------------------------------------


def _where(runs: int, workers: int) -> str:
    """'the 24 random runs', or for a fleet 'the 24 random runs of 2 workers (counted per worker)'."""
    return f"the {runs} random runs" if workers == 1 else f"the {runs} random runs of {workers} workers (counted per worker)"


def _span(low: int, high: int) -> str:
    """'3', or '1-2 (per worker)' when the workers' counts differ."""
    return str(low) if low == high else f"{low}-{high} (per worker)"


@words(OneTest)
def _one_test(note: OneTest) -> str:
    return "one test: nothing carries over from one test to another"


@words(Balanced)
def _balanced(note: Balanced) -> str:
    """'balanced: in the 8 random runs each test came right after each other test 2 times and
    sat at each position 2 times (2 complete Williams squares of 4 rows)'."""
    text = (f"balanced: in {_where(note.runs, note.workers)} each test came right after each other test "
            f"{_span(note.pair_low, note.pair_high)} times and sat at each position {_span(note.position_low, note.position_high)} times")
    if note.complete_squares is not None:
        squares = f"{note.complete_squares} complete Williams square{'s' if note.complete_squares != 1 else ''}"
        text += f" ({squares} of {note.square_rows} rows)"
    return text


@words(NotBalanced)
def _not_balanced(note: NotBalanced) -> str:
    """'not balanced: in the 20 random runs a test came right after another 2-8 times and sat at
    a position 1-7 times; shuffled orders balance carry-over only on average (...)'."""
    text = (f"not balanced: in {_where(note.runs, note.workers)} a test came right after another "
            f"{note.pair_min}-{note.pair_max} times and sat at a position {note.position_min}-{note.position_max} times")
    if note.missing > 0:
        are = "s are" if note.missing != 1 else " is"
        text += f"; {note.missing} trial{are} missing (failed or not analysed), and their pairs count less"
    if note.repeats:
        text += "; some runs repeat a test"
    if note.cause is not None:
        text += "; " + say(note.cause)
    return text


@words(IncompleteSquare)
def _incomplete_square(note: IncompleteSquare) -> str:
    """The squares as a plan describes them: '10 random runs = 2 complete Williams squares of 4
    rows and 2 rows of another: ...'."""
    return note.squares.describe(note.runs)


@words(IncompleteSquares)
def _incomplete_squares(note: IncompleteSquares) -> str:
    return (f"{note.complete} complete Williams squares of {note.rows} rows, and "
            f"{note.incomplete} of {note.workers} workers have an incomplete last square: "
            "carry-over is balanced only over complete squares")


@words(ShuffledOrders)
def _shuffled_orders(note: ShuffledOrders) -> str:
    return "shuffled orders balance carry-over only on average (random_orders = \"williams\" balances it)"
