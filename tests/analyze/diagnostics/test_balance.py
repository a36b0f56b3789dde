"""The carry-over balance diagnostic: counted from the random arm's actual orders, true for
complete Williams squares, false for shuffled orders, incomplete squares and missing trials."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchsage.analyze.diagnostics import carryover_balance, diagnose
from benchsage.analyze.diagnostics.notes import Balanced, IncompleteSquare, IncompleteSquares, NotBalanced, OneTest, ShuffledOrders
from benchsage.analyze.pipeline import analyze_loaded
from benchsage.design.plan import make_plan, worker_seed
from benchsage.design.williams import Squares
from benchsage.vocabulary import RANDOM, WILLIAMS
from benchsage.store.table import TrialTable
from benchsage.report.json import analysis_json_text


def table_of(plans: dict[str, object], *, metrics: tuple[str, ...] = ("wall_time",), drop: set[tuple[str, int, int]] = frozenset(),
             random_orders: str | None = WILLIAMS) -> TrialTable:
    """The trials of each worker's plan (values are noise), one row per trial and metric;
    `drop` leaves out the trials (worker, run index, position), as failed trials are."""
    rng = np.random.default_rng(0)
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "predecessor", "worker", "metric")}
    run_id = 0
    for worker, plan in plans.items():
        for r in plan.runs:  # type: ignore[attr-defined]
            names = plan.describe_order(r)  # type: ignore[attr-defined]
            for pos, name in enumerate(names):
                if (worker, r.index, pos) in drop:
                    continue
                for metric in metrics:
                    cols["test"].append(name)
                    cols["arm"].append(r.arm)
                    cols["value"].append(float(rng.normal(100, 1)))
                    cols["run"].append(run_id)
                    cols["position"].append(pos)
                    cols["predecessor"].append(names[pos - 1] if pos else None)
                    cols["worker"].append(worker)
                    cols["metric"].append(metric)
            run_id += 1
    provenance = {"random_orders": random_orders} if random_orders else {}
    return TrialTable.from_columns(**cols, primary=np.ones(len(cols["value"]), dtype=bool), provenance=provenance)


NAMES = tuple(f"t{i}" for i in range(5))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_complete_williams_squares_are_balanced(n: int) -> None:
    names = NAMES[:n] if n <= 5 else (*NAMES, "t5")
    rows = n if n % 2 == 0 else 2 * n
    b = carryover_balance(table_of({"local": make_plan(names, 2 * rows, 3, WILLIAMS)}, metrics=("wall_time", "ops")))
    assert b is not None and b.balanced is True, b
    each = 2 * rows // n
    assert (b.pair_min, b.pair_max, b.position_min, b.position_max) == (each, each, each, each)
    assert b.runs == 2 * rows and b.tests == n and b.square_rows == rows and b.complete_squares == 2
    assert b.detail == Balanced(2 * rows, 1, each, each, each, each, complete_squares=2, square_rows=rows)


def test_shuffled_orders_are_reported_unbalanced() -> None:
    b = carryover_balance(table_of({"local": make_plan(NAMES, 20, 3)}, random_orders="shuffle"))
    assert b is not None and b.balanced is False and b.random_orders == "shuffle"
    assert b.pair_min < b.pair_max and b.square_rows is None and b.complete_squares is None
    assert b.detail == NotBalanced(20, 1, b.pair_min, b.pair_max, b.position_min, b.position_max, cause=ShuffledOrders())


def test_an_incomplete_square_is_named() -> None:
    b = carryover_balance(table_of({"local": make_plan(NAMES[:4], 10, 3, WILLIAMS)}))
    assert b is not None and b.balanced is False
    assert (b.square_rows, b.complete_squares) == (4, 2)
    assert b.detail == NotBalanced(10, 1, 2, 3, 2, 3, cause=IncompleteSquare(Squares(4, 2, 2), 10))


def test_a_missing_trial_unbalances_the_estimates() -> None:
    plan = make_plan(NAMES[:4], 8, 3, WILLIAMS)
    a_random_run = next(r.index for r in plan.runs if r.arm == RANDOM)
    b = carryover_balance(table_of({"local": plan}, drop={("local", a_random_run, 2)}))
    assert b is not None and b.balanced is False and b.complete_squares == 2
    assert b.detail == NotBalanced(8, 1, 1, 2, 1, 2, missing=1)


def test_each_worker_is_counted_on_its_own() -> None:
    # Two workers, their own squares, different numbers of complete squares: balanced on each.
    plans = {"a": make_plan(NAMES[:4], 4, worker_seed(9, "a", 2), WILLIAMS), "b": make_plan(NAMES[:4], 8, worker_seed(9, "b", 2), WILLIAMS)}
    b = carryover_balance(table_of(plans))
    assert b is not None and b.balanced is True and b.runs == 12 and b.complete_squares == 3
    assert b.detail == Balanced(12, 2, 1, 2, 1, 2, complete_squares=3, square_rows=4)


def test_workers_with_an_incomplete_last_square_are_counted() -> None:
    plans = {"a": make_plan(NAMES[:4], 6, worker_seed(9, "a", 2), WILLIAMS), "b": make_plan(NAMES[:4], 8, worker_seed(9, "b", 2), WILLIAMS)}
    b = carryover_balance(table_of(plans))
    assert b is not None and b.balanced is False
    assert b.detail == NotBalanced(14, 2, 1, 2, 1, 2, cause=IncompleteSquares(complete=3, rows=4, incomplete=1, workers=2))


def test_without_the_plan_the_data_still_says() -> None:
    # A tidy import knows no random_orders: no squares, the balance still counted.
    b = carryover_balance(table_of({"local": make_plan(NAMES[:4], 8, 3, WILLIAMS)}, random_orders=None))
    assert b is not None and b.balanced is True and b.random_orders is None and b.complete_squares is None
    assert b.detail == Balanced(8, 1, 2, 2, 2, 2)


def test_one_test_and_unknown_predecessors() -> None:
    one = TrialTable.from_columns(test=["a"] * 10, arm=["fixed", "random"] * 5, value=np.arange(10.0), run=list(range(10)), position=[0] * 10)
    b = carryover_balance(one)
    assert b is not None and b.balanced is None and b.detail == OneTest()
    nothing = TrialTable.from_columns(test=["a", "b"] * 5, arm=["random"] * 10, value=np.arange(10.0))
    assert carryover_balance(nothing) is None


def test_the_analysis_json_carries_it_beside_the_carryover_rows() -> None:
    table = table_of({"local": make_plan(NAMES[:4], 8, 3, WILLIAMS)})
    d = diagnose(table)
    assert d is not None and d.carryover_balance is not None and d.carryover_balance.balanced is True
    doc = json.loads(analysis_json_text(analyze_loaded(table)))
    balance = doc["diagnostics"]["carryover_balance"]
    assert balance["balanced"] is True and balance["random_orders"] == "williams" and balance["complete_squares"] == 2
    assert set(doc["diagnostics"]) >= {"interleaving", "position_effects", "carryover", "trends"}  # additive


def test_many_tests_few_runs_count_only_the_cells_that_occur() -> None:
    # Far more cells than trials (40,000 tests would make 1.6e9 pair cells): only the cells
    # that occur are counted, with the same fewest and most as a dense count.
    from benchsage.analyze.diagnostics.balance import _cell_range

    rng = np.random.default_rng(1)
    worker, cell = rng.integers(0, 2, 5000), rng.integers(0, 300, 5000)
    dense = _cell_range(worker, cell, 300, 2)
    sparse = _cell_range(worker, cell * 1000, 300_000_000, 2)
    assert np.array_equal(dense[1], sparse[1]) and sparse[0].tolist() == [0, 0]
    full = _cell_range(np.zeros(6, dtype=np.int64), np.array([0, 1, 2, 0, 1, 2]) * 10**6, 3 * 10**6, 1)
    assert full[0].tolist() == [0] and full[1].tolist() == [2]
    names = tuple(f"t{i}" for i in range(1200))
    b = carryover_balance(table_of({"local": make_plan(names, 4, 3, WILLIAMS)}))
    assert b is not None and b.balanced is False and b.pair_min == 0 and b.pair_max == 1 and b.position_max == 1
    assert b.detail == NotBalanced(4, 1, 0, 1, 0, 1, cause=IncompleteSquare(Squares(1200, 0, 4), 4))
