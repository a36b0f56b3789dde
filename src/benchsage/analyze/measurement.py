"""Checks of what a harness metric can show: max_rss at the floor that the spawner sets.

wait4's max_rss is the largest RSS the trial's process reached, and a process forked from the
agent is charged part of the agent's resident pages before it runs a line of its own: a trial
whose own memory is smaller shows that floor, whatever it does. Each run's snapshot records the
floor (`max_rss_floor_kib`: the max_rss of /bin/true spawned by the same agent).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

import numpy as np

from benchsage.analyze.notes import OnTest
from benchsage.analyze.verdict import TestVerdict
from benchsage.store.table import TrialTable

FLOOR_MARGIN = 0.10  # a median max_rss within 10% of the floor (or below it) is at the floor


@dataclasses.dataclass(frozen=True)
class RssFloor:
    """The floor of max_rss over the runs' snapshots (KiB): the median, and the range."""

    median: float
    low: float
    high: float


def _snapshots(provenance: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """Every run snapshot of a source, or of each combined source (provenance "parts")."""
    snaps = provenance.get("snapshots")
    if isinstance(snaps, Mapping):
        yield from (s for s in snaps.values() if isinstance(s, Mapping))
    for part in provenance.get("parts") or ():
        if isinstance(part, Mapping):
            yield from _snapshots(part)


def _floor_of(snapshot: Mapping[str, Any]) -> float | None:
    value = snapshot.get("max_rss_floor_kib")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def rss_floor(provenance: Mapping[str, Any]) -> RssFloor | None:
    """The max_rss a trial that does nothing gets from the agents that ran the experiment, from
    the runs' snapshots; None when no snapshot records it (imported files, older journals)."""
    floors = [f for f in map(_floor_of, _snapshots(provenance)) if f is not None]
    if not floors:
        return None
    return RssFloor(float(np.median(floors)), min(floors), max(floors))


def _run_floors(table: TrialTable, rows: np.ndarray) -> np.ndarray | None:
    """The floor of the run of each of `rows` (NaN where its snapshot has none), from a
    source's own snapshots; None for combined sources, whose run ids were renumbered."""
    snaps = table.provenance.get("snapshots")
    if not isinstance(snaps, Mapping) or not snaps:
        return None
    by_run = {int(run): _floor_of(s) for run, s in snaps.items() if isinstance(s, Mapping)}
    runs, inverse = np.unique(table.run[rows], return_inverse=True)
    floors = np.array([np.nan if by_run.get(int(r)) is None else by_run[int(r)] for r in runs], dtype=np.float64)
    return floors[inverse] if len(runs) else np.zeros(0)


@dataclasses.dataclass(frozen=True)
class RssAtFloor:
    """A test's median max_rss (KiB) is at the floor of what wait4 can show: the trial's own
    memory is at most that, and max_rss cannot tell how much. has_peak_memory: the test also
    has peak_memory, which shows the trial's own memory."""

    median: float
    floor: RssFloor
    has_peak_memory: bool


def rss_floor_notes(table: TrialTable, verdicts: tuple[TestVerdict, ...]) -> tuple[tuple[TestVerdict, ...], list[OnTest]]:
    """The verdicts with a note on each test's max_rss row whose median max_rss is within
    FLOOR_MARGIN of the spawner's floor (or below it), and one warning per such test.

    The floor a test is held against is the median floor of the runs it ran in (their
    snapshots'); for sources analysed together, the median floor of all their runs.
    """
    if "max_rss" not in table.metric_names or table.metric_info("max_rss").unit != "KiB":
        return verdicts, []
    floor = rss_floor(table.provenance)
    if floor is None:
        return verdicts, []
    rss = table.metric_names.index("max_rss")
    rows = np.flatnonzero((table.metric == rss) & np.isfinite(table.value))
    n_tests = len(table.test_names)
    floors = _run_floors(table, rows)
    if floors is None:  # combined sources: every test against the floor of all their runs
        medians = _medians(table.test[rows], table.value[rows], n_tests)
        test_floor = np.full(n_tests, floor.median)
    else:  # each test against the floor of the runs it ran in
        known = np.isfinite(floors)
        medians = _medians(table.test[rows[known]], table.value[rows[known]], n_tests)
        test_floor = _medians(table.test[rows[known]], floors[known], n_tests)
    at_floor = medians <= test_floor * (1.0 + FLOOR_MARGIN)  # False where either is NaN
    with_peak = np.zeros(n_tests, dtype=bool)
    if "peak_memory" in table.metric_names:
        with_peak[table.test[table.metric == table.metric_names.index("peak_memory")]] = True
    code = {name: i for i, name in enumerate(table.test_names)}
    out: list[TestVerdict] = []
    warnings: list[OnTest] = []
    for v in verdicts:
        i = code.get(v.test)
        if v.metric == "max_rss" and i is not None and at_floor[i]:
            note = RssAtFloor(float(medians[i]), floor, bool(with_peak[i]))
            v = dataclasses.replace(v, notes=(*v.notes, note))
            warnings.append(OnTest(v.test, v.metric, (note,)))
        out.append(v)
    return tuple(out), warnings


def _medians(group: np.ndarray, value: np.ndarray, n_groups: int) -> np.ndarray:
    """The median of `value` within each group 0..n_groups-1 (NaN for an empty group), with one sort."""
    order = np.lexsort((value, group))
    counts = np.bincount(group, minlength=n_groups)
    starts = np.cumsum(counts) - counts
    out = np.full(n_groups, np.nan)
    has = counts > 0
    lo = starts[has] + (counts[has] - 1) // 2
    hi = starts[has] + counts[has] // 2
    ordered = value[order]
    out[has] = (ordered[lo] + ordered[hi]) / 2.0
    return out
