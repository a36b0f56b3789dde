"""The plan: Algorithm 1's interleaving, fresh permutations, and determinism from the seed."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.design.plan import make_plan, worker_seed
from benchsage.vocabulary import FIXED, RANDOM, SHUFFLE, WILLIAMS

NAMES = tuple(f"t{i}" for i in range(6))


@given(runs=st.integers(1, 40), seed=st.integers(0, 2**63 - 1), k=st.integers(1, 8))
@settings(max_examples=60, deadline=None)
def test_plan_shape(runs: int, seed: int, k: int) -> None:
    names = tuple(f"t{i}" for i in range(k))
    plan = make_plan(names, runs, seed)
    assert len(plan.runs) == 2 * runs
    assert Counter(r.arm for r in plan.runs) == {FIXED: runs, RANDOM: runs}
    assert [r.index for r in plan.runs] == list(range(2 * runs))
    for r in plan.runs:
        assert sorted(r.order) == list(range(k))  # every run is a permutation of all tests
        if r.arm == FIXED:
            assert r.order == tuple(range(k))
    # Interleaved in pairs: each pair of consecutive runs holds one run of each arm.
    for i in range(0, 2 * runs, 2):
        assert {plan.runs[i].arm, plan.runs[i + 1].arm} == {FIXED, RANDOM}


def test_same_seed_same_plan_other_seed_other_plan() -> None:
    assert make_plan(NAMES, 10, 5) == make_plan(NAMES, 10, 5)
    assert make_plan(NAMES, 10, 5).runs != make_plan(NAMES, 10, 6).runs


def test_random_orders_vary_and_arm_order_is_random() -> None:
    plan = make_plan(NAMES, 200, 1)
    random_orders = [r.order for r in plan.runs if r.arm == RANDOM]
    assert len(set(random_orders)) > 150  # fresh permutations, not one reused order
    first_of_pair = Counter(plan.runs[i].arm for i in range(0, 400, 2))
    assert 70 < first_of_pair[FIXED] < 130  # a fair coin decides which arm goes first
    # Each test occupies every position in the random arm.
    positions = Counter((r.order[p], p) for r in plan.runs if r.arm == RANDOM for p in range(len(NAMES)))
    assert len(positions) == len(NAMES) ** 2


def test_shuffled_orders_are_what_they_always_were() -> None:
    # Plans of existing specs and seeds must not change: `random_orders` defaults to "shuffle",
    # which draws from the seed exactly as before Williams orders existed.
    plan = make_plan(tuple("abcd"), 4, 5)
    assert plan == make_plan(tuple("abcd"), 4, 5, SHUFFLE) and plan.random_orders == SHUFFLE and plan.squares is None
    assert [(r.arm, r.order) for r in plan.runs] == [
        (RANDOM, (2, 0, 3, 1)), (FIXED, (0, 1, 2, 3)), (FIXED, (0, 1, 2, 3)), (RANDOM, (2, 0, 1, 3)),
        (FIXED, (0, 1, 2, 3)), (RANDOM, (1, 3, 2, 0)), (FIXED, (0, 1, 2, 3)), (RANDOM, (2, 3, 0, 1)),
    ]


def test_williams_plan_is_deterministic_from_the_seed() -> None:
    assert make_plan(NAMES, 12, 5, WILLIAMS) == make_plan(NAMES, 12, 5, WILLIAMS)
    assert make_plan(NAMES, 12, 5, WILLIAMS).runs != make_plan(NAMES, 12, 6, WILLIAMS).runs
    assert make_plan(NAMES, 12, 5, WILLIAMS).runs != make_plan(NAMES, 12, 5).runs
    # Each worker of a fleet has its own seed, hence its own squares.
    a, b = (make_plan(NAMES, 12, worker_seed(5, w, 2), WILLIAMS) for w in ("a", "b"))
    assert [r.order for r in a.runs if r.arm == RANDOM] != [r.order for r in b.runs if r.arm == RANDOM]
