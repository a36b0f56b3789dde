"""max_rss at the spawner's floor: a note on the test's max_rss row and one warning per test,
when its median is within 10% of the floor the runs' snapshots record (or below it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.analyze.measurement import FLOOR_MARGIN, RssAtFloor, RssFloor, _medians, rss_floor, rss_floor_notes
from benchsage.analyze.notes import OnTest
from benchsage.analyze.order import analyze_table
from benchsage.analyze.pipeline import Options, analyze_loaded
from benchsage.api import analyze_sources
from benchsage.store.table import TrialTable, concat
from benchsage.report.json import analysis_json_text

sys.path.insert(0, str(Path(__file__).parent))
from measured_data import FLOOR_KIB, write_measured  # noqa: E402


def rss_table(medians: dict[str, float], floors: list[int] | None, *, peak: bool = False) -> TrialTable:
    """max_rss values of each test around its median (both arms) in runs 0-11, whose snapshots
    have the `floors` in turn."""
    rows: dict[str, list] = {k: [] for k in ("test", "metric", "arm", "value", "run")}
    for name, median in medians.items():
        for i, value in enumerate(median + np.array([-4.0, -2.0, 0.0, 0.0, 2.0, 4.0] * 2)):
            for metric, v in (("max_rss", value),) + ((("peak_memory", 300.0 + i),) if peak else ()):
                rows["test"].append(name)
                rows["metric"].append(metric)
                rows["arm"].append("fixed" if i % 2 else "random")
                rows["value"].append(v)
                rows["run"].append(i)
    snapshots = {i: {"max_rss_floor_kib": floors[i % len(floors)]} for i in range(12)} if floors else {}
    return TrialTable.from_columns(primary=[False] * len(rows["value"]), provenance={"snapshots": snapshots}, **rows)


def at_floor(warnings: Sequence[Any]) -> list[OnTest]:
    """The warnings that a test's max_rss is at the floor."""
    return [w for w in warnings if isinstance(w, OnTest) and any(isinstance(n, RssAtFloor) for n in w.notes)]


def test_within_ten_percent_of_the_floor_or_below_it_is_at_the_floor() -> None:
    floor = 8000
    table = rss_table({"below": 6000.0, "at": 8000.0, "just": floor * (1 + FLOOR_MARGIN) - 5, "above": floor * 1.2}, [floor])
    verdicts, warnings = rss_floor_notes(table, analyze_table(table).tests)
    noted = {v.test for v in verdicts if v.notes}
    assert noted == {"below", "at", "just"}
    assert [w.test for w in warnings] == ["below", "at", "just"]  # one per test, in the tests' order
    (at,) = [v for v in verdicts if v.test == "at"]
    assert at.notes[-1] == RssAtFloor(median=8000.0, floor=RssFloor(8000.0, 8000.0, 8000.0), has_peak_memory=False)
    assert warnings[1] == OnTest("at", "max_rss", (at.notes[-1],))


def test_the_note_points_to_peak_memory_where_it_was_measured() -> None:
    table = rss_table({"t": 7000.0}, [7500, 7600, 7700], peak=True)
    verdicts, (warning,) = rss_floor_notes(table, analyze_table(table).tests)
    assert warning == OnTest("t", "max_rss", (RssAtFloor(7000.0, RssFloor(7600.0, 7500.0, 7700.0), has_peak_memory=True),))
    assert [v.metric for v in verdicts if v.notes] == ["max_rss"]  # peak_memory's own row says nothing


def test_nothing_without_a_recorded_floor() -> None:
    """Imported files and journals older than the agent have no floor: no note, no guess."""
    for floors in (None, [], [0]):
        table = rss_table({"t": 100.0}, floors)
        tests = analyze_table(table).tests
        assert rss_floor_notes(table, tests) == (tests, [])
    other = TrialTable.from_columns(test=["t"] * 10, arm=["fixed", "random"] * 5, value=np.ones(10), metric=["ops"] * 10,
                                    provenance={"snapshots": {0: {"max_rss_floor_kib": 8000}}})
    tests = analyze_table(other).tests
    assert rss_floor_notes(other, tests) == (tests, [])


def test_each_test_is_held_against_the_floor_of_its_own_runs() -> None:
    """Workers whose agents differ: each test against the floor of the runs it ran in."""
    n = 12
    table = TrialTable.from_columns(
        test=["a"] * n + ["b"] * n, metric=["max_rss"] * 2 * n, arm=["fixed", "random"] * n,
        value=[4100.0] * n + [9500.0] * n, run=list(range(2 * n)),
        provenance={"snapshots": {r: {"max_rss_floor_kib": 4000 if r < n else 9000} for r in range(2 * n)}},
    )
    _, warnings = rss_floor_notes(table, analyze_table(table).tests)
    assert [w.test for w in warnings] == ["a", "b"]  # b is not at the median floor of all runs (6,500 KiB)


def test_sources_analysed_together_use_the_floor_of_all_their_runs() -> None:
    """Combined sources renumber their runs: every test against the median floor of all runs."""
    a, b = rss_table({"t": 7000.0}, [7000]), rss_table({"u": 9000.0}, [9000])
    both = concat([a, b])
    assert rss_floor(both.provenance) == rss_floor({"parts": [{"snapshots": {0: {"max_rss_floor_kib": 9000}}},
                                                              {"snapshots": {5: {"max_rss_floor_kib": 7000}}}]})
    assert rss_floor(both.provenance).median == 8000
    _, warnings = rss_floor_notes(both, analyze_table(both).tests)
    assert [w.test for w in warnings] == ["t"]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.floats(-1e6, 1e6)), max_size=60))
def test_medians_by_group_match_numpy(pairs: list[tuple[int, float]]) -> None:
    group = np.array([g for g, _ in pairs], dtype=np.int64)
    value = np.array([v for _, v in pairs], dtype=np.float64)
    got = _medians(group, value, 5)
    for g in range(5):
        own = value[group == g]
        if len(own):
            assert got[g] == pytest.approx(float(np.median(own)), rel=1e-12, abs=1e-9)
        else:
            assert np.isnan(got[g])


def test_a_journal_analysis_says_it_once_per_test(tmp_path: Path) -> None:
    analysis, _ = analyze_sources([str(write_measured(tmp_path))], format="benchsage")
    floor_warnings = at_floor(analysis.warnings)
    assert [w.test for w in floor_warnings] == ["server", "tiny"]  # "big" holds far more
    assert all(w.notes[-1].has_peak_memory for w in floor_warnings)
    assert (floor_warnings[0].notes[-1].floor.low, floor_warnings[0].notes[-1].floor.high) == (FLOOR_KIB, FLOOR_KIB + 16)
    doc = json.loads(analysis_json_text(analysis))
    notes = {(t["test"], t["metric"]): t["notes"] for t in doc["tests"]}
    assert len(notes[("tiny", "max_rss")]) == 1 and "floor" in notes[("tiny", "max_rss")][0]
    assert notes[("big", "max_rss")] == [] and notes[("tiny", "peak_memory")] == []
    # Without peak_memory (no cgroups on the host) the note says what would show the memory.
    analysis, _ = analyze_sources([str(write_measured(tmp_path / "plain", measured=()))], format="benchsage")
    assert at_floor(analysis.warnings) and not any(w.notes[-1].has_peak_memory for w in at_floor(analysis.warnings))


def test_a_fleet_analysis_notes_the_combined_rows(tmp_path: Path) -> None:
    from fleet_data import write_fleet

    table_dir = write_fleet(tmp_path, {"node1": 1.0, "node2": 1.0}, runs_per_arm=3,
                            snapshots={"node1": {"max_rss_floor_kib": 4000}, "node2": {"max_rss_floor_kib": 4000}})
    analysis, table = analyze_sources([str(table_dir)], format="benchsage")
    assert analysis.combined is not None
    assert [w.test for w in at_floor(analysis.warnings)] == ["a", "b", "c"]
    again = analyze_loaded(table, Options(diagnostics=False))
    assert [w.test for w in at_floor(again.warnings)] == ["a", "b", "c"]
