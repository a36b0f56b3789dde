"""The words of the notes on test rows and of the analysis's warnings (report/words/notes.py)."""

from __future__ import annotations

import dataclasses
import inspect
import sys
from pathlib import Path

import numpy as np

from benchsage.analyze import notes
from benchsage.analyze.identity import IdentityDiffers, IdentityDifference, compare_workers, identity_warnings
from benchsage.analyze.measurement import RssAtFloor, RssFloor
from benchsage.analyze.notes import (
    AllEqual,
    EmptyArm,
    FileChanged,
    FileDiffers,
    NoiseWarned,
    NonFinite,
    NoStrata,
    NoValues,
    OnTest,
    SettingChanged,
    SettingDiffers,
    SnapshotMissing,
    TooFewForCI,
    TooFewToTest,
    WorkersDiffer,
    ZeroFixedMean,
)
from benchsage.analyze.order import analyze_table
from benchsage.report.words import said, say
from benchsage.report.words.registry import _WORDS
from benchsage.store.table import TrialTable

sys.path.insert(0, str(Path(__file__).parents[2] / "analyze"))
from fleet_data import snapshot  # noqa: E402

NOTE_KINDS = [
    kind for _, kind in inspect.getmembers(notes, inspect.isclass) if dataclasses.is_dataclass(kind) and kind.__module__ == notes.__name__
] + [RssAtFloor, IdentityDiffers]


def test_every_kind_of_note_has_words() -> None:
    assert len(NOTE_KINDS) >= 18
    assert [kind.__name__ for kind in NOTE_KINDS if kind not in _WORDS] == []


def test_why_fields_of_a_test_row_are_null() -> None:
    table = TrialTable.from_columns(
        test=["few"] * 9 + ["flat"] * 12 + ["one-armed"] * 7 + ["ok"] * 20,
        arm=["fixed"] * 3 + ["random"] * 6 + ["fixed"] * 6 + ["random"] * 6 + ["fixed"] * 7 + ["fixed", "random"] * 10,
        value=list(range(9)) + [4.5] * 12 + list(range(7)) + list(np.linspace(1, 2, 20)),
    )
    analysis = analyze_table(table)
    by = {v.test: said(v.notes) for v in analysis.tests}
    assert any("only 3 fixed value" in n and "at least 5" in n for n in by["few"])
    assert any("3 fixed values are too few for a 95% exact-binomial CI" in n for n in by["few"])
    assert any("all 12 values are equal (4.5)" in n for n in by["flat"])
    assert any("no values in the random arm" in n for n in by["one-armed"])
    warnings = said(analysis.warnings)
    assert len(warnings) == 3
    assert any(w.startswith("few (value): only 3 fixed value") for w in warnings)
    assert any(w.startswith("flat (value): all 12 values") for w in warnings)


def test_each_note_of_a_test_row() -> None:
    assert say(EmptyArm("fixed")) == "no values in the fixed arm: nothing to compare"
    assert say(TooFewToTest(3, 6, 5)) == "only 3 fixed values: Kruskal-Wallis needs at least 5 per arm"
    assert say(TooFewToTest(1, 1, 5)) == "only 1 fixed and 1 random value: Kruskal-Wallis needs at least 5 per arm"
    assert say(AllEqual(12, 4.5)) == "all 12 values are equal (4.5): Kruskal-Wallis is undefined"
    assert say(NoStrata()) == (
        "no worker has values in both arms, or each worker's values are all equal: the stratified test compares the arms within workers"
    )
    assert say(TooFewForCI("random", 1, 0.95, "exact-binomial", 6)) == (
        "1 random value are too few for a 95% exact-binomial CI of the median (at least 6 needed)"
    )
    assert say(ZeroFixedMean()) == "the fixed-arm mean is 0: Δ% is undefined"


def test_the_data_warnings() -> None:
    assert say(NonFinite(2)) == "2 values that are not finite numbers (NaN or infinity) were left out"
    assert say(NonFinite(1)) == "1 value that are not finite numbers (NaN or infinity) were left out"
    assert say(NoValues()) == "no trials to analyze: the data holds no values"
    assert say(OnTest("t", "m", (EmptyArm("random"), ZeroFixedMean()))) == (
        "t (m): no values in the random arm: nothing to compare; the fixed-arm mean is 0: Δ% is undefined"
    )


def test_max_rss_at_the_floor() -> None:
    at = RssAtFloor(8000.0, RssFloor(8000.0, 8000.0, 8000.0), has_peak_memory=False)
    assert say(at).startswith("median 8,000 KiB is at the floor of what wait4 can show (8,000 KiB, the max_rss of /bin/true")
    assert "peak_memory would show it (a cgroup per trial: see `benchsage env`)" in say(at)
    ranged = RssAtFloor(7000.0, RssFloor(7600.0, 7500.0, 7700.0), has_peak_memory=True)
    assert say(OnTest("t", "max_rss", (ranged,))) == (
        "t (max_rss): median 7,000 KiB is at the floor of what wait4 can show (7,500–7,700 KiB, the max_rss of /bin/true "
        "spawned the same way): the trial's own memory is at most that, and max_rss cannot tell how much; "
        "read peak_memory for the trial's own memory"
    )


def test_workers_that_differ() -> None:
    note = WorkersDiffer(3, 4, (61.23, "b", "wall_time"), (("node3", 3), ("node1", 1)))
    assert say(note) == (
        "the workers' results differ in 3 of 4 tests (fleet diagnostic); largest spread 61.2% (b [wall_time]); "
        "outliers: node3 (3 tests), node1 (1 test): compare results between workers with care; the combined verdict is stratified by worker"
    )
    assert say(WorkersDiffer(1, 1, None, ())) == (
        "the workers' results differ in 1 of 1 tests (fleet diagnostic): compare results between workers with care; "
        "the combined verdict is stratified by worker"
    )


def test_the_identity_warnings() -> None:
    a = {**snapshot("a", 0), "cgroup": "v2", "energy_counter": 123.4}
    b = {**snapshot("b", 1, kernel="6.5.0", app="f" * 64, governor="powersave"), "cgroup": "v1", "energy_counter": 99.0}
    c = {**snapshot("c", 2), "cgroup": "v2", "energy_counter": 5.0}
    del c["files"]["/usr/bin/python3"]
    identity = compare_workers({0: a, 1: b, 2: c}, {0: "a", 1: "b", 2: "c"}, data_workers=["a", "b", "c", "d"])
    warnings = said(identity_warnings(identity))
    assert warnings[1].startswith(f"workers ran different versions of bin/app: sha256:{'1' * 12} on a, c; sha256:{'f' * 12} on b")
    assert warnings[0].startswith(f"workers ran different versions of /usr/bin/python3: sha256:{'2' * 12} on a, b; missing on c")
    assert "workers differ in governor: 'performance' on a, c; 'powersave' on b" in warnings
    assert "workers differ in kernel: '6.1.0-18-amd64' on a, c; '6.5.0' on b" in warnings
    assert "workers differ in cgroup: 'v2' on a, c; 'v1' on b" in warnings
    assert warnings[-1] == "no environment snapshot from worker d: whether it ran the same software cannot be checked"
    assert warnings[1].endswith("(differences between these workers may come from the software, not the machines)")
    assert say(SnapshotMissing(("d", "e"))) == "no environment snapshot from workers d, e: whether it ran the same software cannot be checked"
    changed = IdentityDifference("file bin/app", {"a": "sha256:" + "1" * 64, "b": f"sha256:{'1' * 64} / sha256:{'7' * 64}"})
    assert say(IdentityDiffers(changed)).startswith(
        f"workers ran different versions of bin/app: sha256:{'1' * 12} on a; sha256:{'1' * 12} / sha256:{'7' * 12} on b"
    )


def test_the_snapshot_warnings() -> None:
    assert say(SettingDiffers("governor", (("performance", 12), ("powersave", 8)))) == (
        "governor differs between runs: 'performance' in 12 runs, 'powersave' in 8 runs"
    )
    assert say(SettingDiffers("governor", (("performance", 3), (None, 2)), (("a", "performance"), ("b", None)))) == (
        "governor differs between runs: 'performance' in 3 runs, unknown in 2 runs (by worker: a 'performance', b unknown)"
    )
    assert say(SettingChanged("turbo", "node2", ((True, 3), (False, 1)))) == "turbo boost changed between runs on worker node2: True in 3 runs, False in 1 run"
    assert say(SettingChanged("cpu_idle", "w", (("C6 133 us; PM QoS limit 0 us", 2), ("C6 133 us", 1)))) == (
        "CPU idle states changed between runs on worker w: 'C6 133 us; PM QoS limit 0 us' in 2 runs, 'C6 133 us' in 1 run"
    )
    assert say(NoiseWarned("load", 3, 10, "3.00 1.00 0.50 (8 CPUs)")) == "load average warned before 3 of 10 runs (e.g. 3.00 1.00 0.50 (8 CPUs))"
    assert say(FileChanged("/exp/lib.so", "", "c", (("1" * 64, 1), ("3" * 64, 1)))) == (
        "/exp/lib.so changed between runs on worker c: 111111111111 in 1 run, 333333333333 in 1 run"
    )
    assert say(FileChanged("app", "context 2", "w", (("1" * 64, 2), (None, 1)))) == (
        "app changed between runs of context 2 on worker w: 111111111111 in 2 runs, missing in 1 run"
    )
    differs = FileDiffers("/exp/bench", "", (("a", ("1" * 64,)), ("b", ("2" * 64,)), ("c", (None,)), ("d", ("1" * 64,))))
    assert say(differs) == "/exp/bench differs between workers: 111111111111 on a, d; 222222222222 on b; missing on c"
    assert say(FileDiffers("app", "context 1", (("a", ("1" * 64,)), ("b", ("2" * 64,))))) == (
        "app differs between workers in runs of context 1: 111111111111 on a; 222222222222 on b"
    )


def test_warnings_that_read_the_same_are_said_once() -> None:
    assert said([NoValues(), "no trials to analyze: the data holds no values", NonFinite(1)], once=True) == [
        "no trials to analyze: the data holds no values",
        "1 value that are not finite numbers (NaN or infinity) were left out",
    ]
