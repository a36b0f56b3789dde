"""Each test's wall times as hyperfine summarises them (analyze/timings.py), against numpy on the
values gathered one test at a time, whatever order the table's rows come in."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.analyze.timings import per_test_timings
from benchsage.store.table import TrialTable


@st.composite
def trials(draw: st.DrawFn) -> tuple[list[str], list[float], list[float], list[float]]:
    """Trials of up to three tests in a shuffled row order: (test, start, wall time, user time) each."""
    n = draw(st.integers(1, 30))
    tests = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    starts = draw(st.lists(st.floats(0, 1e6), min_size=n, max_size=n, unique=True))
    walls = draw(st.lists(st.floats(1e-6, 10), min_size=n, max_size=n))
    users = draw(st.lists(st.floats(0, 10), min_size=n, max_size=n))
    return tests, starts, walls, users


@settings(max_examples=100, deadline=None)
@given(trials())
def test_statistics_are_numpys_on_each_tests_times_in_start_order(data: tuple[list[str], list[float], list[float], list[float]]) -> None:
    tests, starts, walls, users = data
    n = len(tests)
    table = TrialTable.from_columns(test=tests * 2, arm=["fixed"] * (2 * n), value=walls + users,
                                    metric=["wall_time"] * n + ["user_time"] * n, time=starts * 2)
    got = {t.test: t for t in per_test_timings(table)}
    assert list(got) == list(table.test_names)
    for name, t in got.items():
        mine = sorted((s, w) for tt, s, w in zip(tests, starts, walls) if tt == name)
        times = np.array([w for _, w in mine])
        assert t.times == tuple(times.tolist())
        assert t.mean == pytest.approx(np.mean(times), rel=1e-12)
        assert t.median == np.median(times) and t.min == times.min() and t.max == times.max()
        assert t.stddev == (pytest.approx(np.std(times, ddof=1), rel=1e-9, abs=1e-300) if len(times) > 1 else None)
        assert t.user == pytest.approx(np.mean([u for tt, u in zip(tests, users) if tt == name]), rel=1e-12, abs=1e-300)
        assert t.system is None and t.command == name and t.parameters == {} and t.unit == "s"


def test_a_test_without_values_has_no_statistics_and_keeps_its_place() -> None:
    table = TrialTable.from_columns(test=["a", "b", "a"], arm=["fixed"] * 3, value=[1.0, np.nan, 3.0], metric=["wall_time"] * 3,
                                    time=[0.0, 1.0, 2.0])
    a, b = per_test_timings(table)
    assert (a.test, a.times, a.mean, a.stddev) == ("a", (1.0, 3.0), 2.0, pytest.approx(np.sqrt(2.0)))
    assert (b.test, b.times, b.mean, b.stddev, b.median, b.min, b.max, b.user) == ("b", (), None, None, None, None, None, None)


def test_commands_and_sweep_levels_come_from_the_provenance_else_the_tables_sweep_dimensions() -> None:
    table = TrialTable.from_columns(
        test=["w[n=2]", "w[n=10]", "warm"], arm=["fixed"] * 3, value=[1.0, 2.0, 3.0], metric=["wall_time"] * 3,
        treatments={"sweep:n": ["2", "10", None], "sweep:m": ["x", "x", None]},
        provenance={"commands": {"w[n=2]": "w 2", "w[n=10]": "w 10"}})
    two, ten, warm = per_test_timings(table)
    assert (two.command, two.parameters) == ("w 2", {"m": "x", "n": "2"})
    assert list(ten.parameters) == ["m", "n"]  # sorted by name, as hyperfine's parameters are
    assert (warm.command, warm.parameters) == ("warm", {})
    recorded = TrialTable.from_columns(test=["w[n=2]"], arm=["fixed"], value=[1.0], metric=["wall_time"],
                                       provenance={"test_sweeps": {"w[n=2]": {"n": "2"}}})
    assert per_test_timings(recorded)[0].parameters == {"n": "2"}
