"""The identity diagnostic: which stable snapshot fields and files differ between workers."""

from __future__ import annotations

import sys
from pathlib import Path

from benchsage.analyze.identity import IdentityDiffers, compare_workers, identity_warnings
from benchsage.analyze.notes import SnapshotMissing
from benchsage.report.json import identity_json

sys.path.insert(0, str(Path(__file__).parent))
from fleet_data import snapshot  # noqa: E402


def test_identical_workers_despite_transient_fields() -> None:
    # Different host, boot id, time, load, pid: all differ by nature and are not compared.
    snaps = {r: snapshot(f"n{r % 3}", r) for r in range(9)}
    identity = compare_workers(snaps, {r: f"n{r % 3}" for r in range(9)})
    assert identity is not None
    assert identity.identical is True and identity.differences == () and identity.workers == ("n0", "n1", "n2")
    assert identity_warnings(identity) == []


def test_files_compare_relative_to_each_workers_folder() -> None:
    a = snapshot("a", 0)
    b = {**snapshot("b", 1), "dir": "/home/me/exp", "files": {"/home/me/exp/bin/app": "1" * 64, "/usr/bin/python3": "2" * 64}}
    identity = compare_workers({0: a, 1: b}, {0: "a", 1: "b"})
    assert identity is not None and identity.identical is True


def test_differences_files_first_then_settings_then_other_fields() -> None:
    a = {**snapshot("a", 0), "cgroup": "v2", "energy_counter": 123.4}
    b = {**snapshot("b", 1, kernel="6.5.0", app="f" * 64, governor="powersave"), "cgroup": "v1", "energy_counter": 99.0}
    c = {**snapshot("c", 2), "cgroup": "v2", "energy_counter": 5.0}
    del c["files"]["/usr/bin/python3"]
    identity = compare_workers({0: a, 1: b, 2: c}, {0: "a", 1: "b", 2: "c"}, data_workers=["a", "b", "c", "d"])
    assert identity is not None and identity.identical is False
    assert [d.what for d in identity.differences] == ["file /usr/bin/python3", "file bin/app", "governor", "kernel", "cgroup"]
    assert identity.differences[0].values == {"a": "sha256:" + "2" * 64, "b": "sha256:" + "2" * 64, "c": None}
    assert identity.missing == ("d",)
    assert identity_warnings(identity) == [*(IdentityDiffers(d) for d in identity.differences), SnapshotMissing(("d",))]
    assert identity_json(identity)["differences"][3] == {"what": "kernel", "values": {"a": "6.1.0-18-amd64", "b": "6.5.0", "c": "6.1.0-18-amd64"}}


def test_workers_from_the_snapshots_and_nothing_to_compare() -> None:
    assert compare_workers({}) is None
    assert compare_workers({0: snapshot("a", 0), 1: snapshot("a", 1)}) is None  # one worker
    identity = compare_workers({0: snapshot("a", 0), 1: snapshot("b", 1, kernel="x"), 2: None})
    assert identity is not None and identity.workers == ("a", "b") and [d.what for d in identity.differences] == ["kernel"]
