"""The notes of an analysis as data (analyze/notes.py): what each says about, and each once."""

from __future__ import annotations

from benchsage.analyze.identity import IdentityDiffers, IdentityDifference
from benchsage.analyze.notes import FileChanged, FileDiffers, NoiseWarned, NoValues, SettingChanged, SettingDiffers, distinct
from benchsage.analyze.snapshots import compare_snapshots


def test_equal_notes_are_kept_once_in_order() -> None:
    mapping = IdentityDiffers(IdentityDifference("kernel", {"a": "6.1", "b": "6.5"}))
    same = IdentityDiffers(IdentityDifference("kernel", {"a": "6.1", "b": "6.5"}))
    assert distinct(["x", NoValues(), mapping, "x", NoValues(), same]) == ["x", NoValues(), mapping]


def test_settings_that_differ_between_runs_with_their_runs() -> None:
    snaps = {f"a:run {i}": {"governor": "performance", "kernel": "6.1"} for i in range(3)}
    snaps |= {f"b:run {i}": {"governor": None, "kernel": "6.5"} for i in range(3, 5)}
    assert compare_snapshots(snaps) == [
        SettingDiffers("governor", (("performance", 3), (None, 2)), (("a", "performance"), ("b", None))),
        SettingDiffers("kernel", (("6.1", 3), ("6.5", 2)), (("a", "6.1"), ("b", "6.5"))),
    ]
    # Within a worker: the values of one are counted, and 1 is not "1".
    mixed = {"a:run 1": {"cpu_count": 1}, "a:run 2": {"cpu_count": "1"}, "a:run 3": {"cpu_count": 1}, "b:run 4": {"cpu_count": 2}}
    assert compare_snapshots(mixed, between_workers=False) == [SettingChanged("cpu_count", "a", ((1, 2), ("1", 1)))]


def test_idle_states_changed_by_a_reset_are_a_setting_that_changed() -> None:
    deep, held = "intel_idle / menu: POLL 0 us, C1 2 us, C6 133 us", "intel_idle / menu: POLL 0 us, C1 2 us, C6 133 us; PM QoS limit 0 us"
    snaps = {"a:run 1": {"cpu_idle": deep}, "a:run 2": {"cpu_idle": held}, "a:run 3": {"cpu_idle": held}}
    assert compare_snapshots(snaps) == [SettingDiffers("cpu_idle", ((held, 2), (deep, 1)))]
    assert compare_snapshots({**snaps, "b:run 4": {"cpu_idle": held}}, between_workers=False) == [
        SettingChanged("cpu_idle", "a", ((held, 2), (deep, 1)))]


def test_noise_and_files() -> None:
    snaps = {
        "a:run 1": {"noise": {"load": {"state": "warn", "value": "9.0"}}, "files": {"/x": "1" * 64}},
        "a:run 2": {"noise": {"load": {"state": "ok", "value": "0.1"}}, "files": {"/x": "2" * 64}},
        "b:run 3": {"files": {"/x": "1" * 64}},
    }
    assert compare_snapshots(snaps) == [
        NoiseWarned("load", 1, 2, "9.0"),
        FileChanged("/x", "", "a", (("1" * 64, 1), ("2" * 64, 1))),
        FileDiffers("/x", "", (("a", ("1" * 64, "2" * 64)), ("b", ("1" * 64,)))),
    ]
