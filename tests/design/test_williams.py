"""Williams orders: every row a permutation; over complete squares each test at each position
equally often and each ordered pair of different tests adjacent equally often; randomized by
the seed."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from benchsage.design.plan import make_plan
from benchsage.vocabulary import FIXED, RANDOM, WILLIAMS
from benchsage.design.williams import Squares, randomized_square, square_rows, williams_orders, williams_square

SEEDS = (0, 1, 7, 2**40 + 3, 2**63 - 1)


def balance(orders: list[tuple[int, ...]], n: int) -> tuple[Counter, Counter]:
    positions = Counter((test, p) for order in orders for p, test in enumerate(order))
    pairs = Counter((a, b) for order in orders for a, b in zip(order, order[1:]))
    return positions, pairs


def assert_balanced(orders: list[tuple[int, ...]], n: int, squares: int) -> None:
    rows = square_rows(n)
    positions, pairs = balance(orders, n)
    # Each test sits at each position rows / n times per square (1 for even n, 2 for odd n).
    assert positions == {(t, p): squares * rows // n for t in range(n) for p in range(n)}
    # Each ordered pair of different tests is adjacent rows / n times per square; no test follows itself.
    assert pairs == {(a, b): squares * rows // n for a in range(n) for b in range(n) if a != b}


@pytest.mark.parametrize("n", range(2, 10))
def test_standard_square_is_balanced(n: int) -> None:
    square = williams_square(n)
    assert square.shape == (n if n % 2 == 0 else 2 * n, n)
    assert_balanced([tuple(row) for row in square.tolist()], n, 1)


@pytest.mark.parametrize("n", range(2, 10))
@pytest.mark.parametrize("seed", SEEDS)
def test_randomized_squares_are_balanced_and_differ_by_seed(n: int, seed: int) -> None:
    rng = np.random.Generator(np.random.PCG64(seed))
    orders = williams_orders(n, rng)
    rows = square_rows(n)
    for squares in (1, 2, 3):
        drawn = [next(orders) for _ in range(rows)]
        assert all(sorted(order) == list(range(n)) for order in drawn)  # every row a permutation
        assert_balanced(drawn, n, 1)  # each square on its own
    other = randomized_square(n, np.random.Generator(np.random.PCG64(seed + 1)))
    again = randomized_square(n, np.random.Generator(np.random.PCG64(seed)))
    first = randomized_square(n, np.random.Generator(np.random.PCG64(seed)))
    assert np.array_equal(first, again)  # the seed decides the square
    if n > 2:  # 2 tests have only two squares (two row orders): other seeds may repeat one
        assert not np.array_equal(first, other)


def test_randomization_reaches_many_squares() -> None:
    # Labels and rows are both permuted: many distinct squares, and each test starts a run as
    # often as the others across seeds.
    squares = {randomized_square(5, np.random.Generator(np.random.PCG64(seed))).tobytes() for seed in range(200)}
    assert len(squares) > 150


@pytest.mark.parametrize("n", range(2, 10))
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_williams_plan_cycles_through_complete_squares(n: int, seed: int) -> None:
    rows = square_rows(n)
    names = tuple(f"t{i}" for i in range(n))
    plan = make_plan(names, 3 * rows, seed, WILLIAMS)
    assert plan.random_orders == WILLIAMS and plan.squares == Squares(rows, 3, 0)
    random_orders = [r.order for r in plan.runs if r.arm == RANDOM]
    assert all(r.order == tuple(range(n)) for r in plan.runs if r.arm == FIXED)
    assert_balanced(random_orders, n, 3)
    for k in range(3):  # each square of the random arm is balanced by itself
        assert_balanced(random_orders[k * rows : (k + 1) * rows], n, 1)
    # Interleaving is Algorithm 1's, as with shuffled orders.
    for i in range(0, len(plan.runs), 2):
        assert {plan.runs[i].arm, plan.runs[i + 1].arm} == {FIXED, RANDOM}


def test_incomplete_squares_are_counted() -> None:
    assert Squares.of(10, 4) == Squares(4, 2, 2)
    assert Squares.of(12, 3) == Squares(6, 2, 0)
    assert Squares.of(3, 5) == Squares(10, 0, 3)
    text = Squares.of(10, 4).describe(10)
    assert "2 complete Williams squares of 4 rows and 2 rows of another" in text and "8 or 12" in text
    assert "balanced only over complete squares" in text
    assert "each test follows each other test equally often" in Squares.of(8, 4).describe(8)
    assert "3 of the 10 rows" in Squares.of(3, 5).describe(3)


def test_williams_needs_two_tests() -> None:
    with pytest.raises(ValueError, match="at least 2 tests"):
        make_plan(("only",), 4, 1, WILLIAMS)
    with pytest.raises(ValueError, match="random_orders"):
        make_plan(("a", "b"), 4, 1, "latin")
