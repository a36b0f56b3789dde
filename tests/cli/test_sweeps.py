"""A sweep end to end, as users run it: `run` journals one test per level, the fixed order keeps
the declared order, `export` carries a sweep:NAME column, `analyze --json` reads it all."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchsage.store.importers.benchsage import read_experiment
from benchsage.store.importers.tidy import read_tidy
from benchsage.store.journal import Journal

SPEC = """
[experiment]
name = "sweep"
runs = 2
seed = 5

[[sweep]]
name = "n"
levels = [1, 2, 10]

[[test]]
name = "warm"
command = "true"

[[test]]
name = "t"
command = "echo {n}"
env = {LEVEL = "{n}"}

[[test.metric]]
name = "echoed"
regex = '([0-9]+)'
"""


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("sweep")
    (root / "experiment.toml").write_text(SPEC)
    done = bench("run", "experiment.toml", "-o", "out", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    return root, root / "out"


def test_the_journal_holds_one_test_per_level_and_the_fixed_order_keeps_the_declared_order(experiment: tuple[Path, Path]) -> None:
    _, out = experiment
    journal = Journal.open(out, read_only=True)
    try:
        names = [t["name"] for t in journal.tests()]
        assert names == ["warm", "t[n=1]", "t[n=2]", "t[n=10]"]
        assert [t["command"] for t in journal.tests()][1:] == ["echo 1", "echo 2", "echo 10"]
        runs = journal.runs()
        assert {tuple(r["order"]) for r in runs if r["arm"] == "fixed"} == {(0, 1, 2, 3)}
        assert len(runs) == 4
        meta = journal.meta()
        assert meta["sweeps"] == [{"name": "n", "levels": ["1", "2", "10"]}]
        assert meta["test_sweeps"] == {"t[n=1]": {"n": "1"}, "t[n=2]": {"n": "2"}, "t[n=10]": {"n": "10"}}
    finally:
        journal.close()


def test_the_trial_table_carries_the_level_of_each_rows_test(experiment: tuple[Path, Path]) -> None:
    _, out = experiment
    table = read_experiment(out)
    names, codes = table.levels("sweep:n")
    assert names == ("1", "2", "10")
    level = {table.test_names[t]: (names[c] if c >= 0 else None) for t, c in zip(table.test, codes)}
    assert level == {"warm": None, "t[n=1]": "1", "t[n=2]": "2", "t[n=10]": "10"}
    echoed = table.metric_names.index("echoed")
    values = {table.test_names[t]: v for t, m, v in zip(table.test, table.metric, table.value) if m == echoed}
    assert values == {"t[n=1]": 1.0, "t[n=2]": 2.0, "t[n=10]": 10.0}
    assert table.provenance["sweeps"] == [{"name": "n", "levels": ["1", "2", "10"]}]


def test_export_writes_a_sweep_column_the_tidy_importer_reads_back(experiment: tuple[Path, Path]) -> None:
    root, out = experiment
    done = bench("export", "out", "--format", "csv", "-o", "trials.csv", cwd=root)
    assert done.returncode == 0, done.stderr
    with open(root / "trials.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert "sweep:n" in rows[0]
    assert {(r["test"], r["sweep:n"]) for r in rows} == {("warm", ""), ("t[n=1]", "1"), ("t[n=2]", "2"), ("t[n=10]", "10")}
    back = read_tidy(root / "trials.csv")
    names, codes = back.levels("sweep:n")
    assert names == ("1", "2", "10")
    assert {back.test_names[t]: (names[c] if c >= 0 else None) for t, c in zip(back.test, codes)}["t[n=10]"] == "10"


def test_analyze_json_treats_expanded_tests_as_tests_and_adds_no_treatment_analysis(experiment: tuple[Path, Path]) -> None:
    root, _ = experiment
    done = bench("analyze", "out", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert {r["test"] for r in doc["tests"]} == {"warm", "t[n=1]", "t[n=2]", "t[n=10]"}
    assert not {"factorial", "context_effects", "observer", "comparisons"} & set(doc)


def test_plan_shows_the_sweep(tmp_path: Path) -> None:
    (tmp_path / "experiment.toml").write_text(SPEC)
    done = bench("plan", "experiment.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "sweep n: 1, 2, 10 (3 levels; test t -> 3 tests)" in done.stdout
    assert "warm → t[n=1] → t[n=2] → t[n=10]" in done.stdout
