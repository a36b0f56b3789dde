"""Williams orders: random-arm orders in which first-order carry-over is balanced.

Williams (1949), "Experimental designs balanced for the estimation of residual effects of
treatments", Aust. J. Sci. Res. A 2(3): for n tests, the Latin square whose first row is
0, 1, n-1, 2, n-2, 3, ... and whose row i adds i to every entry (mod n) puts each test at
each position once and, for even n, makes each test immediately follow each other test
exactly once. For odd n no single square does that; the square and its mirror (every row
reversed), 2n rows, make each ordered pair adjacent exactly twice and each test sit at each
position twice.

The randomized design (Bate & Jones 2006, "The construction of nearly balanced and nearly
optimal designs for crossover trials") permutes the test labels and the order of the rows at
random, which keeps both balances. The random arm cycles through the rows of one randomized
square, then draws a new one: the balance holds over every complete square.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np


def square_rows(n: int) -> int:
    """Rows of the Williams design for n tests: n for even n, 2n (the square and its mirror)
    for odd n."""
    if n < 2:
        raise ValueError("a Williams design needs at least 2 tests")
    return n if n % 2 == 0 else 2 * n


def williams_square(n: int) -> np.ndarray:
    """The standard Williams design for n tests, as a (square_rows(n), n) array of test indices."""
    rows = square_rows(n)
    first = np.empty(n, dtype=np.int64)
    # 0, 1, n-1, 2, n-2, ...: even places count up from 0, odd places down from n (mod n).
    j = np.arange(n)
    first[0::2] = (-(j[0::2] // 2)) % n
    first[1::2] = (j[1::2] + 1) // 2
    square = (first[None, :] + np.arange(n)[:, None]) % n
    if rows == n:
        return square
    return np.concatenate([square, square[:, ::-1]])


def randomized_square(n: int, rng: np.random.Generator) -> np.ndarray:
    """williams_square(n) with the test labels permuted and the rows shuffled, both from rng."""
    labels = rng.permutation(n)
    rows = rng.permutation(square_rows(n))
    return labels[williams_square(n)[rows]]


def williams_orders(n: int, rng: np.random.Generator) -> Iterator[tuple[int, ...]]:
    """Random-arm orders, one per run, endlessly: the rows of a randomized square, then of a new
    one. A square is drawn only when its first row is needed."""
    while True:
        for row in randomized_square(n, rng):
            yield tuple(int(i) for i in row)


@dataclass(frozen=True)
class Squares:
    """How a number of random runs fill Williams squares of `rows` rows each."""

    rows: int  # rows of one square: n for even n, 2n for odd n
    complete: int  # complete squares
    extra: int  # runs of an incomplete last square (0: every square complete)

    @classmethod
    def of(cls, runs: int, n: int) -> "Squares":
        rows = square_rows(n)
        return cls(rows, runs // rows, runs % rows)

    def describe(self, runs: int) -> str:
        """One sentence for plans and analyses: how many complete squares, and whether the
        carry-over is balanced over the runs."""
        count = f"{self.complete} complete Williams square{'s' if self.complete != 1 else ''} of {self.rows} rows"
        if self.extra == 0:
            return f"{runs} random runs = {count}: each test follows each other test equally often"
        fits = [self.rows * k for k in (self.complete, self.complete + 1) if k > 0]
        filled = (f"{runs} random runs = {count} and {self.extra} rows of another" if self.complete
                  else f"{runs} random runs fill {self.extra} of the {self.rows} rows of one Williams square")
        return (f"{filled}: carry-over is balanced only over complete squares "
                f"(runs = {' or '.join(map(str, fits))} per arm would complete them)")
