"""TrialTable helpers: predecessors from (run, position), with and without rows in run order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.store.table import FIRST, NO_PREDECESSOR_INFO, derive_predecessors


def _reference(run: np.ndarray, position: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Straight from the definition: the test at (run, position - 1), first such row in file order."""
    at: dict[tuple[int, int], int] = {}
    for r, p, t in zip(run.tolist(), position.tolist(), test.tolist()):
        if r >= 0 and p >= 0:
            at.setdefault((r, p), t)
    out = []
    for r, p in zip(run.tolist(), position.tolist()):
        if r < 0 or p < 0:
            out.append(NO_PREDECESSOR_INFO)
        elif p == 0:
            out.append(FIRST)
        else:
            out.append(at.get((r, p - 1), NO_PREDECESSOR_INFO))
    return np.array(out, dtype=np.int32)


@st.composite
def _trials(draw):
    """Runs of trials in execution order; a trial may carry several metrics (rows); some
    trials are missing (gaps) and some rows lack a run or position."""
    runs, pos, tests = [], [], []
    for r in range(draw(st.integers(1, 6))):
        p = 0
        for _ in range(draw(st.integers(0, 8))):
            p += draw(st.sampled_from([0, 1, 1, 1, 2]))  # 0: another metric of the same trial
            t = draw(st.integers(0, 4))
            for _ in range(draw(st.integers(1, 2))):
                unknown = draw(st.integers(0, 20)) == 0
                runs.append(-1 if unknown else r)
                pos.append(p)
                tests.append(t)
    # Rows of one (run, position) share their test, as rows of one trial do.
    first: dict[tuple[int, int], int] = {}
    tests = [first.setdefault((r, p), t) if r >= 0 else t for r, p, t in zip(runs, pos, tests)]
    return np.array(runs, dtype=np.int64), np.array(pos, dtype=np.int32), np.array(tests, dtype=np.int32)


@settings(max_examples=200, deadline=None)
@given(_trials(), st.randoms(use_true_random=False))
def test_predecessors_in_order_and_shuffled(data, rnd):
    run, position, test = data
    expected = _reference(run, position, test)
    # In execution order: the linear pass.
    assert np.array_equal(derive_predecessors(run, position, test), expected)
    # Shuffled: the general path (sort and binary search) must agree row by row.
    perm = np.arange(len(run))
    rnd.shuffle(perm)
    shuffled = derive_predecessors(run[perm], position[perm], test[perm])
    assert np.array_equal(shuffled, expected[perm])


def test_predecessors_with_a_gap_and_a_new_run():
    run = np.array([0, 0, 0, 1, 1])
    position = np.array([0, 1, 3, 0, 1], dtype=np.int32)
    test = np.array([5, 6, 7, 8, 9], dtype=np.int32)
    assert derive_predecessors(run, position, test).tolist() == [FIRST, 5, NO_PREDECESSOR_INFO, FIRST, 8]


@settings(max_examples=200, deadline=None)
@given(_trials(), st.randoms(use_true_random=False))
def test_linear_pass_for_whole_runs_in_any_order(data, rnd):
    from benchsage.store.table import _predecessors_in_file_order

    run, position, test = data
    known = (run >= 0) & (position >= 0)
    run, position, test = run[known], position[known], test[known]
    if len(run) == 0:
        return
    # Whole runs, in a shuffled order of runs: what a file written by several workers looks like.
    ids = sorted(set(run.tolist()))
    rnd.shuffle(ids)
    rows = np.concatenate([np.flatnonzero(run == r) for r in ids])
    run, position, test = run[rows], position[rows], test[rows]
    out = np.where(position == 0, FIRST, NO_PREDECESSOR_INFO).astype(np.int32)
    linear = _predecessors_in_file_order(run, position, test, out)
    assert linear is not None and linear.dtype == np.int32
    assert np.array_equal(linear, _reference(run, position, test))
    assert np.array_equal(derive_predecessors(run, position, test), _reference(run, position, test))


def test_linear_pass_declines_split_runs_and_falling_positions():
    from benchsage.store.table import _predecessors_in_file_order

    test = np.array([1, 2, 3, 4], dtype=np.int32)
    split = (np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1], dtype=np.int32))
    falling = (np.array([0, 0, 0, 0]), np.array([0, 2, 1, 3], dtype=np.int32))
    for run, position in (split, falling):
        out = np.where(position == 0, FIRST, NO_PREDECESSOR_INFO).astype(np.int32)
        assert _predecessors_in_file_order(run, position, test, out) is None
        assert np.array_equal(derive_predecessors(run, position, test), _reference(run, position, test))
