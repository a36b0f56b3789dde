"""The tidy CSV importer: columns, runs per worker, predecessors through failed trials, garbage in."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchsage.errors import DataError
from benchsage.store.importers import read_tidy
from benchsage.store.importers import _csv
from benchsage.store.table import FIRST, FIXED_CODE, NO_PREDECESSOR_INFO, RANDOM_CODE, UNKNOWN


def write(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


HEADER = ["test", "order", "value", "metric", "run", "position", "worker", "time", "status"]


def test_reads_every_column(tmp_path: Path) -> None:
    f = write(
        tmp_path / "t.csv",
        HEADER,
        [
            ["a", "fixed", 1.5, "ms", "0", 0, "w1", 100.0, "ok"],
            ["b", "fixed", 2.5, "ms", "0", 1, "w1", 101.0, "ok"],
            ["b", "random", 3.5, "ms", "1", 0, "w1", 200.0, "ok"],
            ["a", "random", 4.5, "ms", "1", 1, "w1", 201.0, "ok"],
        ],
    )
    t = read_tidy(f)
    assert t.test_names == ("a", "b")
    assert t.metric_names == ("ms",)
    assert t.worker_names == ("w1",)
    assert list(t.arm) == [FIXED_CODE, FIXED_CODE, RANDOM_CODE, RANDOM_CODE]
    assert list(t.value) == [1.5, 2.5, 3.5, 4.5]
    assert list(t.position) == [0, 1, 0, 1]
    assert list(t.time) == [100.0, 101.0, 200.0, 201.0]
    assert t.run[0] == t.run[1] != t.run[2] == t.run[3]
    # a ran first in run 0, b after a; b first in run 1, a after b.
    assert list(t.predecessor) == [FIRST, 0, FIRST, 1]
    assert t.primary.all()
    assert t.excluded == 0 and t.warnings == ()
    assert t.sources == (str(f),)


def test_defaults_without_optional_columns(tmp_path: Path) -> None:
    f = write(tmp_path / "t.csv", ["test", "order", "value"], [["a", "fixed", 1], ["a", "random", 2]])
    t = read_tidy(f)
    assert t.metric_names == ("value",)
    assert t.worker_names == ("local",)
    assert (t.run == UNKNOWN).all() and (t.position == UNKNOWN).all()
    assert (t.predecessor == NO_PREDECESSOR_INFO).all()
    assert np.isnan(t.time).all()
    assert not t.has_runs


def test_runs_of_different_workers_stay_distinct(tmp_path: Path) -> None:
    # Both workers call their run "0": they are two runs, not one.
    f = write(
        tmp_path / "t.csv",
        ["test", "order", "value", "run", "position", "worker"],
        [["a", "fixed", 1, "0", 0, "w1"], ["a", "fixed", 2, "0", 0, "w2"], ["b", "fixed", 3, "0", 1, "w1"], ["a", "random", 4, "1", 0, "w1"]],
    )
    t = read_tidy(f)
    assert len(np.unique(t.run)) == 3
    assert t.run[0] != t.run[1]
    assert t.run[0] == t.run[2]
    assert list(t.predecessor) == [FIRST, FIRST, 0, FIRST]


def test_failed_trials_are_excluded_but_still_precede(tmp_path: Path) -> None:
    f = write(
        tmp_path / "t.csv",
        HEADER,
        [
            ["a", "fixed", "", "ms", "0", 0, "w", 1, "failed"],  # failed: no value
            ["b", "fixed", 2, "ms", "0", 1, "w", 2, "ok"],
            ["a", "random", "timeout!", "ms", "1", 0, "w", 3, "timeout"],  # garbage is fine when not ok
            ["b", "random", 4, "ms", "1", 1, "w", 4, "ok"],
        ],
    )
    t = read_tidy(f)
    assert len(t) == 2
    assert list(t.value) == [2.0, 4.0]
    # b still ran after a in both runs, though a failed.
    assert [t.test_names[p] for p in t.predecessor] == ["a", "a"]
    assert t.excluded == 2
    assert len(t.warnings) == 1
    assert "2 trials excluded" in t.warnings[0] and "failed: 1" in t.warnings[0] and "timeout: 1" in t.warnings[0]


def test_one_failed_trial_with_several_metrics_counts_once(tmp_path: Path) -> None:
    f = write(
        tmp_path / "t.csv",
        ["test", "order", "value", "metric", "run", "position", "status"],
        [
            ["a", "fixed", "", "m1", "0", 0, "failed"],
            ["a", "fixed", "", "m2", "0", 0, "failed"],
            ["a", "random", 1, "m1", "1", 0, "ok"],
            ["a", "random", 2, "m2", "1", 0, "ok"],
            ["a", "fixed", 3, "m1", "2", 0, "ok"],
        ],
    )
    t = read_tidy(f)
    assert t.excluded == 1
    assert "1 trials excluded" in t.warnings[0]


def test_test_names_stay_text(tmp_path: Path) -> None:
    f = write(tmp_path / "t.csv", ["test", "order", "value"], [["007", "fixed", 1], ["1e3", "random", 2]])
    assert read_tidy(f).test_names == ("007", "1e3")


def test_many_blocks_share_one_numbering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Many read blocks: labels first seen in later blocks, and codes consistent across blocks.
    monkeypatch.setattr(_csv, "_BLOCK_BYTES", 64 * 1024)
    rng = np.random.default_rng(3)
    n = 30_000
    tests = rng.integers(0, 500, n)
    rows = [[f"test-{t:03d}", "fixed" if i % 2 else "random", float(i), str(i // 5), i % 5] for i, t in enumerate(tests)]
    f = write(tmp_path / "big.csv", ["test", "order", "value", "run", "position"], rows)
    assert f.stat().st_size > 2 * _csv._BLOCK_BYTES
    t = read_tidy(f)
    assert len(t) == n
    names = np.array(t.test_names)[t.test]
    assert (names == np.array([r[0] for r in rows])).all()
    assert (t.value == np.arange(n)).all()
    assert len(np.unique(t.run)) == n // 5


def test_garbage_in_a_late_block_names_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_csv, "_BLOCK_BYTES", 64 * 1024)
    rows: list[list[object]] = [["t", "fixed" if i % 2 else "random", i] for i in range(40_000)]
    rows[30_000][2] = "12,5"
    f = write(tmp_path / "t.csv", ["test", "order", "value"], rows)
    with pytest.raises(DataError, match=r"line 30002, column 'value': '12,5' is not a number"):
        read_tidy(f)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("test,order,value\na,fixed,1\nb,random,fast\n", r"t\.csv: line 3, column 'value': 'fast' is not a number"),
        ("test,order,value\na,fixed,1\nb,random,\n", r"t\.csv: line 3, column 'value' is empty"),
        ("test,order,value\na,fixed,1\nb,random,nan\n", r"t\.csv: line 3, column 'value' is empty"),
        ("test,order,value\na,fixed,1\nb,random,inf\n", r"t\.csv: line 3, column 'value' holds inf, not a finite number"),
        ("test,order,value\na,fixed,1\nb,shuffled,2\n", r"t\.csv: line 3, column 'order': 'shuffled' is neither 'fixed' nor 'random'"),
        ("test,order,value\na,fixed,1\nb,Random,2\n", r"column 'order': 'Random' is neither"),
        ("test,value\na,1\n", r"t\.csv: missing required column\(s\) 'order'; found: test, value"),
        ("name,arm,val\na,fixed,1\n", r"missing required column\(s\) 'test', 'order', 'value'; found: name, arm, val"),
        ("", r"t\.csv: the file is empty"),
        ("\n\n  \n", r"t\.csv: the file is empty"),
        ("test,order,value\n", r"t\.csv: the file has a header but no rows"),
        ("test,order,value\na,fixed,1\nb,fixed,2\n", r"t\.csv: no analysable rows in the random arm \(2 fixed, 0 random\)"),
        ("test,order,value,status\na,fixed,1,ok\nb,random,2,failed\n", r"no analysable rows in the random arm \(1 fixed, 0 random\)"),
        ("test,order,value,position,run\na,fixed,1,1.5,0\nb,random,2,0,1\n", r"line 2, column 'position': 1.5 is not a whole number from 0 to 2147483646"),
        ("test,order,value,position,run\na,fixed,1,-1,0\nb,random,2,0,1\n", r"line 2, column 'position': -1 is not a whole number from 0 to 2147483646"),
        ("test,order,value,time\na,fixed,1,yesterday\nb,random,2,0\n", r"t\.csv: line 2, column 'time': 'yesterday' is not a number"),
        ("test,order,value,time,status\na,fixed,1,1,ok\nb,random,2,0,ok\nb,random,2,soon,failed\n", r"line 4, column 'time': 'soon'"),
        ("test,order,value\na,fixed,1,extra\n", r"t\.csv: cannot read as CSV: .*Expected 3 columns, got 4"),
    ],
)
def test_garbage_is_one_line_naming_file_and_place(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "t.csv"
    f.write_text(content)
    with pytest.raises(DataError, match=message) as err:
        read_tidy(f)
    assert "\n" not in str(err.value)


def test_binary_file(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(DataError, match=r"t\.csv: binary content, not a CSV file"):
        read_tidy(f)


def test_not_utf8(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_bytes("test,order,value\ncaf\xe9,fixed,1\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"t\.csv: not UTF-8 text"):
        read_tidy(f)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nope\.csv: no such file"):
        read_tidy(tmp_path / "nope.csv")


def test_one_arm_allowed_when_asked(tmp_path: Path) -> None:
    f = write(tmp_path / "t.csv", ["test", "order", "value"], [["a", "fixed", 1]])
    assert len(read_tidy(f, require_both_arms=False)) == 1


_names = st.sampled_from(["a", "b", "c d", "e,f", 'q"uote', "007"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(
            _names,
            st.sampled_from(["fixed", "random"]),
            st.floats(allow_nan=False, allow_infinity=False, width=64),
            st.sampled_from(["m1", "m2"]),
            st.sampled_from(["ok", "ok", "failed"]),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_round_trip(tmp_path: Path, rows: list[tuple[str, str, float, str, str]]) -> None:
    """What is written is read back exactly (float repr round-trips), ok rows only."""
    f = write(tmp_path / "rt.csv", ["test", "order", "value", "metric", "status"], [list(r) for r in rows])
    t = read_tidy(f, require_both_arms=False)
    ok = [r for r in rows if r[4] == "ok"]
    assert len(t) == len(ok)
    assert [t.test_names[i] for i in t.test] == [r[0] for r in ok]
    assert [("fixed", "random")[a] for a in t.arm] == [r[1] for r in ok]
    assert list(t.value) == [r[2] for r in ok]
    assert [t.metric_names[i] for i in t.metric] == [r[3] for r in ok]
    assert t.excluded == len(rows) - len(ok)


def _reference_ids(*codes: np.ndarray) -> np.ndarray:
    key = np.zeros(len(codes[0]), dtype=np.int64)
    for c in codes:
        key = key * (int(c.max()) + 1) + c
    return np.unique(key, return_inverse=True)[1].astype(np.int64).ravel()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 30)), min_size=1, max_size=60), st.booleans())
def test_combined_ids_match_the_sorted_combinations(pairs, nested):
    worker = np.array([w for w, _ in pairs], dtype=np.int32)
    run = np.array([r for _, r in pairs], dtype=np.int32)
    if nested:  # every run label under one worker: the linear path
        worker = (run % 3).astype(np.int32)
    assert np.array_equal(_csv.combined_ids(worker, run), _reference_ids(worker, run))


def test_fast_and_careful_readers_agree(tmp_path: Path) -> None:
    # Enough rows for several blocks of the careful reader; labels first seen in later blocks,
    # failed trials with empty values, empty optional cells.
    rng = np.random.default_rng(3)
    rows = []
    for i in range(60_000):
        status = "failed" if i % 997 == 0 else "ok"
        value = "" if status == "failed" else f"{rng.lognormal():.6g}"
        rows.append([f"t{(i * 7) % (50 + i // 1000)}", ("fixed", "random")[(i // 40) % 2], value, ("ms", "MB/s")[i % 2],
                     str(i // 40), i % 40, f"w{i // 20000}", "" if i % 13 == 0 else 1000.0 + i, status])
    f = write(tmp_path / "big.csv", HEADER, rows)
    found = _csv.header(f)
    want = _csv._Want(
        categorical=("test", "order", "metric", "run", "worker", "status"), numeric=("value", "time", "position"), lists=(),
        integer=("position",), status="status", is_ok=lambda s: s.strip().lower() == "ok", needed=("value",), strict=("time", "position"),
    )
    fast = _csv._read_fast(f, found, want)
    careful = _csv._read(f, found, want, as_text=False)
    assert fast is not None
    assert fast.n == careful.n and np.array_equal(fast.ok, careful.ok)
    assert fast.labels == careful.labels
    for c in careful.codes:
        assert np.array_equal(fast.codes[c], careful.codes[c])
    for c in careful.numbers:
        assert np.array_equal(fast.numbers[c], careful.numbers[c], equal_nan=True)


@pytest.mark.parametrize("blank", ["", " ", "\t", "\u3000"])
def test_blank_run_labels_mean_an_unknown_run(tmp_path: Path, blank: str) -> None:
    f = write(
        tmp_path / "t.csv",
        ["test", "order", "value", "run", "position"],
        [["a", "fixed", 1, "0", 0], ["b", "fixed", 2, "0", 1], ["a", "random", 3, blank, 0], ["b", "random", 4, "x-1", 0]],
    )
    t = read_tidy(f)
    assert t.run[0] == t.run[1] >= 0
    assert t.run[2] == UNKNOWN and t.predecessor[2] == NO_PREDECESSOR_INFO
    assert t.run[3] >= 0 and t.run[3] != t.run[0]
