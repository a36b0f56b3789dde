"""The sweep levels the journal records become a "sweep:NAME" dimension of every row, in the
sweeps' declared order, and a tidy file's sweep:NAME column reads back the same."""

from __future__ import annotations

from pathlib import Path

from benchsage.store.importers.tidy import read_tidy, treatment_columns
from benchsage.store.sweeps import sweep_levels


def test_each_sweep_gives_each_test_its_level() -> None:
    meta = {"sweeps": [{"name": "b", "levels": ["x", "y"]}, {"name": "a", "levels": [1, 2]}],
            "test_sweeps": {"t[b=x,a=1]": {"b": "x", "a": "1"}, "u[a=2]": {"a": 2}}}
    assert sweep_levels(meta, ["warm", "t[b=x,a=1]", "u[a=2]"]) == {
        "sweep:b": [None, "x", None], "sweep:a": [None, "1", "2"]}
    assert sweep_levels({}, ["warm"]) == {}


def test_a_tidy_file_with_a_sweep_column_has_that_dimension(tmp_path: Path) -> None:
    assert treatment_columns(["test", "order", "value", "sweep:conns", "sweep:", "factor:a"]) == ("sweep:conns", "factor:a")
    path = tmp_path / "t.csv"
    rows = [f"{t},{arm},{v},{level}" for arm in ("fixed", "random") for t, level in (("w[conns=2]", "2"), ("w[conns=8]", "8"), ("x", ""))
            for v in (1.0, 1.1)]
    path.write_text("test,order,value,sweep:conns\n" + "\n".join(rows) + "\n")
    table = read_tidy(path)
    names, codes = table.levels("sweep:conns")
    assert names == ("2", "8")
    assert {table.test_names[t]: c for t, c in zip(table.test, codes)} == {"w[conns=2]": 0, "w[conns=8]": 1, "x": -1}
