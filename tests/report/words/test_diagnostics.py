"""The design diagnostics in words (report/words/diagnostics.py): the interleaving of the arms,
the carry-over balance and the warning that the arms were not interleaved, each note kind as
the analysis gives it (tests/analyze/diagnostics check the data)."""

from __future__ import annotations

import pytest

from benchsage.analyze.diagnostics import notes
from benchsage.analyze.diagnostics.notes import (
    ArmFirst, Balanced, IncompleteSquare, IncompleteSquares, InterleavingDetail, NoRunStarts, NotBalanced, NotInterleaved, OneArm,
    OneTest, OnWorker, RunsTest, RunsWithoutStart, ShuffledOrders, WorkersInterleaved,
)
from benchsage.design.williams import Squares
from benchsage.report.words import say
from benchsage.report.words.registry import _WORDS

PRECEDE = InterleavingDetail((ArmFirst("fixed", 50, "random", 50),))


@pytest.mark.parametrize("kind", notes.NOTES, ids=lambda k: k.__name__)
def test_every_kind_of_note_has_words(kind: type) -> None:
    assert kind in _WORDS


def test_every_note_class_is_listed() -> None:
    defined = {v for v in vars(notes).values() if isinstance(v, type) and v.__module__ == notes.__name__}
    assert defined == set(notes.NOTES)


def test_arms_one_after_the_other() -> None:
    assert say(PRECEDE) == "all 50 fixed runs precede all 50 random runs"
    assert say(ArmFirst("random", 3, "fixed", 4)) == "all 3 random runs precede all 4 fixed runs"


def test_the_runs_test_clustered_or_interleaved() -> None:
    clustered = RunsTest(False, 40, 40, 8, 41.0, 5.59e-14)
    assert say(clustered) == (
        "40 fixed and 40 random runs are clustered in time: 8 stretches of one arm, 41.0 expected by chance "
        "(Wald-Wolfowitz runs test, one-sided p = 5.59e-14)"
    )
    assert say(RunsTest(True, 10, 10, 20, 11.0, 1.0)) == (
        "10 fixed and 10 random runs are interleaved in time: 20 stretches of one arm, 11.0 expected by chance "
        "(Wald-Wolfowitz runs test, one-sided p = 1)"
    )


def test_workers_and_runs_without_a_start() -> None:
    one_arm = InterleavingDetail((OnWorker("w0", OneArm("fixed", 10)), OnWorker("w1", OneArm("random", 10))))
    assert say(one_arm) == (
        "worker w0: only fixed runs (10): the other arm ran elsewhere or not at all; "
        "worker w1: only random runs (10): the other arm ran elsewhere or not at all"
    )
    interleaved = RunsTest(True, 2, 2, 4, 3.0, 0.89)
    many = InterleavingDetail((*(OnWorker(f"w{i}", interleaved) for i in range(3)), WorkersInterleaved(5, 5)))
    assert say(many).startswith("worker w0: 2 fixed and 2 random runs are interleaved in time: 4 stretches of one arm, 3.0 expected")
    assert say(many).endswith("(Wald-Wolfowitz runs test, one-sided p = 0.89); 5 of 5 workers interleaved")
    untimed = InterleavingDetail((RunsTest(True, 4, 3, 5, 4.4, 0.686), RunsWithoutStart(1)))
    assert say(untimed).endswith("one-sided p = 0.686); 1 run without a start time left out")
    assert say(RunsWithoutStart(2)) == "2 runs without a start time left out"
    assert say(InterleavingDetail((NoRunStarts(),))) == "no run start times in the data: cannot tell whether the arms were interleaved"


def test_the_warning_that_the_arms_were_not_interleaved() -> None:
    assert say(NotInterleaved(PRECEDE)) == (
        "the arms were not interleaved in time (all 50 fixed runs precede all 50 random runs): "
        "drift over time can look like an order effect"
    )


def test_balanced_carryover() -> None:
    assert say(Balanced(8, 1, 2, 2, 2, 2, complete_squares=2, square_rows=4)) == (
        "balanced: in the 8 random runs each test came right after each other test 2 times "
        "and sat at each position 2 times (2 complete Williams squares of 4 rows)"
    )
    assert say(Balanced(12, 2, 1, 2, 1, 2, complete_squares=3, square_rows=4)) == (
        "balanced: in the 12 random runs of 2 workers (counted per worker) each test came right after each other test "
        "1-2 (per worker) times and sat at each position 1-2 (per worker) times (3 complete Williams squares of 4 rows)"
    )
    assert say(Balanced(8, 1, 2, 2, 2, 2)) == (
        "balanced: in the 8 random runs each test came right after each other test 2 times and sat at each position 2 times"
    )
    assert say(Balanced(4, 1, 1, 1, 1, 1, complete_squares=1, square_rows=4)).endswith("(1 complete Williams square of 4 rows)")


def test_unbalanced_carryover_and_why() -> None:
    assert say(NotBalanced(20, 1, 2, 6, 1, 8, cause=ShuffledOrders())) == (
        "not balanced: in the 20 random runs a test came right after another 2-6 times and sat at a position 1-8 times; "
        'shuffled orders balance carry-over only on average (random_orders = "williams" balances it)'
    )
    assert say(NotBalanced(10, 1, 2, 3, 2, 3, cause=IncompleteSquare(Squares(4, 2, 2), 10))) == (
        "not balanced: in the 10 random runs a test came right after another 2-3 times and sat at a position 2-3 times; "
        "10 random runs = 2 complete Williams squares of 4 rows and 2 rows of another: carry-over is balanced only over "
        "complete squares (runs = 8 or 12 per arm would complete them)"
    )
    assert say(NotBalanced(8, 1, 1, 2, 1, 2, missing=1)) == (
        "not balanced: in the 8 random runs a test came right after another 1-2 times and sat at a position 1-2 times; "
        "1 trial is missing (failed or not analysed), and their pairs count less"
    )
    assert "; 3 trials are missing (failed" in say(NotBalanced(8, 1, 1, 2, 1, 2, missing=3))
    assert say(NotBalanced(8, 1, 1, 2, 1, 2, repeats=True)).endswith("1-2 times; some runs repeat a test")
    assert say(NotBalanced(14, 2, 1, 2, 1, 2, cause=IncompleteSquares(3, 4, 1, 2))) == (
        "not balanced: in the 14 random runs of 2 workers (counted per worker) a test came right after another 1-2 times "
        "and sat at a position 1-2 times; 3 complete Williams squares of 4 rows, and 1 of 2 workers have an incomplete "
        "last square: carry-over is balanced only over complete squares"
    )
    many = say(NotBalanced(4, 1, 0, 1, 0, 1, cause=IncompleteSquare(Squares(1200, 0, 4), 4)))
    assert "0 complete" not in many and "4 of the 1200 rows" in many


def test_one_test() -> None:
    assert say(OneTest()) == "one test: nothing carries over from one test to another"
