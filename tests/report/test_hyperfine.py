"""hyperfine's export formats of an experiment (report/hyperfine.py): against hyperfine's own
output of the same times (its real files in data/hyperfine/), read by hyperfine's own scripts,
and read back from real experiments with the journal's values as the reference."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchsage.analyze.pipeline import analyze_loaded
from benchsage.analyze.verdict import Analysis
from benchsage.api import analyze_sources
from benchsage.report.hyperfine import hyperfine_csv, hyperfine_json, hyperfine_json_text, hyperfine_markdown
from benchsage.report.words import verdict_sentence
from benchsage.store.journal import journal_path
from benchsage.store.table import MetricInfo, TrialTable

DATA = Path(__file__).parent / "data" / "hyperfine"
FIXTURES = ("two", "scan", "list", "one", "seconds")
NULL = "–"


# -- hyperfine's own output of the same times ---------------------------------------------------


def hyperfine_results(name: str) -> list[dict[str, Any]]:
    return json.loads((DATA / f"{name}.json").read_text())["results"]


def from_hyperfine(name: str) -> tuple[Analysis, TrialTable]:
    """hyperfine's runs of data/hyperfine/NAME.json as a trial table (each command a test, its
    times in the order they ran, alternately in the fixed and random arm; each trial's user and
    system time the command's means), and its analysis."""
    results = hyperfine_results(name)
    cols: dict[str, list[Any]] = {k: [] for k in ("test", "arm", "value", "metric", "time")}
    sweeps: dict[str, list[str | None]] = {f"sweep:{p}": [] for p in results[0].get("parameters", {})}
    clock = 0.0
    for r in results:
        for i, t in enumerate(r["times"]):
            for metric, value in (("wall_time", t), ("user_time", r["user"]), ("sys_time", r["system"])):
                cols["test"].append(r["command"])
                cols["arm"].append("fixed" if i % 2 == 0 else "random")
                cols["value"].append(value)
                cols["metric"].append(metric)
                cols["time"].append(clock)
                for p in sweeps:
                    sweeps[p].append(r["parameters"][p.removeprefix("sweep:")])
            clock += 1.0
    table = TrialTable.from_columns(**cols, treatments=sweeps or None,
                                    provenance={"commands": {r["command"]: r["command"] for r in results}})
    return analyze_loaded(table), table


def table_rows(markdown: str) -> list[list[str]]:
    """The cells of a Markdown table's lines (a "|" escaped as "\\|" stays in its cell)."""
    return [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in markdown.splitlines() if line.startswith("|")]


@pytest.mark.parametrize("name", FIXTURES)
def test_the_json_results_are_hyperfines_with_its_fields_and_numbers(name: str) -> None:
    analysis, table = from_hyperfine(name)
    ours = hyperfine_json(analysis, table)["results"]
    theirs = hyperfine_results(name)
    assert [list(r) for r in ours] == [list(r) for r in theirs]  # the same keys in the same order (parameters only in a scan)
    for o, t in zip(ours, theirs):
        assert o["command"] == t["command"]
        assert o["times"] == t["times"] and o["exit_codes"] == t["exit_codes"]
        assert o.get("parameters") == t.get("parameters")
        for key in ("mean", "stddev", "median", "user", "system", "min", "max"):
            assert o[key] == (None if t[key] is None else pytest.approx(t[key], rel=1e-12, abs=1e-15)), key


def test_one_value_has_no_stddev_as_hyperfine_writes_it() -> None:
    analysis, table = from_hyperfine("one")
    (result,) = hyperfine_json(analysis, table)["results"]
    assert result["stddev"] is None and result["times"] == [result["mean"]]
    assert '"stddev": null' in hyperfine_json_text(analysis, table)
    (row,) = csv.DictReader(io.StringIO(hyperfine_csv(analysis, table)))
    assert row["stddev"] == "0"  # hyperfine's CSV writes 0 where its JSON has null
    assert "±" not in hyperfine_markdown(analysis, table)


@pytest.mark.parametrize("name", FIXTURES)
def test_the_markdown_table_has_hyperfines_header_unit_and_numbers(name: str) -> None:
    analysis, table = from_hyperfine(name)
    ours = hyperfine_markdown(analysis, table)
    theirs = (DATA / f"{name}.md").read_text()
    assert ours.splitlines()[:2] == theirs.splitlines()[:2]  # header (with hyperfine's unit) and alignment
    mine, its = table_rows(ours), table_rows(theirs)
    assert len(mine) == len(its)
    for m, t in zip(mine[2:], its[2:]):
        assert m[:4] == t[:4]  # command, mean ± stddev, min, max: hyperfine's text of the same times
    medians = [r["median"] for r in hyperfine_results(name)]
    assert mine[2 + int(np.argmin(medians))][4] == "1.00"  # relative to the fastest median


@pytest.mark.parametrize("name", FIXTURES)
def test_the_csv_has_hyperfines_columns_and_its_number_text(name: str) -> None:
    analysis, table = from_hyperfine(name)
    ours = list(csv.reader(io.StringIO(hyperfine_csv(analysis, table))))
    theirs = list(csv.reader(io.StringIO((DATA / f"{name}.csv").read_text())))
    assert ours[0] == theirs[0]
    header = theirs[0]
    for o, t in zip(ours[1:], theirs[1:], strict=True):
        row_o, row_t = dict(zip(header, o)), dict(zip(header, t))
        assert row_o["command"] == row_t["command"]
        parameters = [k for k in header if k.startswith("parameter_")]
        assert [row_o[k] for k in parameters] == [row_t[k] for k in parameters]
        for key in ("min", "max", "user", "system"):  # the same doubles: the same text, Rust's (0, 0.00004, no exponent)
            assert row_o[key] == row_t[key], key
        for key in ("mean", "stddev", "median"):
            assert float(row_o[key]) == pytest.approx(float(row_t[key]), rel=1e-12, abs=1e-15)
            assert "e" not in row_o[key].lower()


def test_numbers_are_written_as_hyperfine_writes_them() -> None:
    """Every number of hyperfine's CSVs, read as a double, is written back as the same text."""
    from benchsage.report.hyperfine import _number

    for name in FIXTURES:
        rows = list(csv.DictReader(io.StringIO((DATA / f"{name}.csv").read_text())))
        for row in rows:
            for key in ("mean", "stddev", "median", "user", "system", "min", "max"):
                assert _number(float(row[key])) == row[key]
    assert [_number(x) for x in (0.0, 1.0, 16.5, 4.227485299797035e-05, 1e-7)] == ["0", "1", "16.5", "0.00004227485299797035", "0.0000001"]


def test_a_table_in_milliseconds_is_written_in_seconds() -> None:
    times = [12.0, 13.0, 11.0, 14.0]
    table = TrialTable.from_columns(test=["a"] * 4, arm=["fixed", "random"] * 2, value=times, metric=["wall_time"] * 4,
                                    time=[0.0, 1.0, 2.0, 3.0], metrics_info={"wall_time": MetricInfo("wall_time", "ms")})
    (result,) = hyperfine_json(analyze_loaded(table), table)["results"]
    assert result["times"] == pytest.approx([0.012, 0.013, 0.011, 0.014])
    assert result["mean"] == pytest.approx(0.0125) and result["min"] == pytest.approx(0.011)
    assert result["user"] is None and result["command"] == "a"  # no CPU times recorded; no command: the test's name


# -- hyperfine's scripts --------------------------------------------------------------------------


HYPERFINE_REPO = Path(os.environ.get("BENCHSAGE_HYPERFINE_REPO") or "/work/.mirror/sharkdp+hyperfine/repo")


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hyperfine's scripts/ from its repository (a checkout or a git directory); skipped, saying
    why, where it is not here."""
    out = tmp_path_factory.mktemp("hyperfine-scripts")
    for name in ("plot_whisker.py", "plot_histogram.py", "plot_parametrized.py", "plot_progression.py", "advanced_statistics.py",
                 "welch_ttest.py"):
        checkout = HYPERFINE_REPO / "scripts" / name
        if checkout.is_file():
            (out / name).write_bytes(checkout.read_bytes())
            continue
        shown = subprocess.run(["git", "--git-dir", str(HYPERFINE_REPO), "show", f"HEAD:scripts/{name}"], capture_output=True)
        if shown.returncode != 0:
            pytest.skip(f"hyperfine's repository is not at {HYPERFINE_REPO}: set BENCHSAGE_HYPERFINE_REPO to a checkout of "
                        "github.com/sharkdp/hyperfine to run its scripts")
        (out / name).write_bytes(shown.stdout)
    return out


def run_script(scripts: Path, name: str, *args: str | Path) -> subprocess.CompletedProcess:
    # Agg: no display; matplotlib, numpy and scipy are in the test environment (pyqt6, also listed
    # by the plotting scripts, is only needed to show a window, never with -o).
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, str(scripts / name), *map(str, args)], capture_output=True, text=True, env=env,
                          cwd=scripts, timeout=120)


PLOTS = (("plot_whisker.py", "two"), ("plot_histogram.py", "two"), ("plot_parametrized.py", "scan"))


@pytest.mark.slow
@pytest.mark.parametrize(("script", "experiment"), PLOTS)
def test_hyperfines_plots_draw_benchsages_json_as_they_draw_hyperfines(
        scripts: Path, script: str, experiment: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    ours = tmp_path / "benchsage.json"
    ours.write_text(exported(request.getfixturevalue(experiment)).json_text, encoding="utf-8")
    image = tmp_path / "benchsage.png"
    done = run_script(scripts, script, ours, "-o", image)
    if done.returncode != 0:  # does the script draw hyperfine's own JSON here? The message says which failed
        control = run_script(scripts, script, DATA / f"{experiment}.json", "-o", tmp_path / "hyperfine.png")
        assert control.returncode != 0, f"{script} draws hyperfine's {experiment}.json but not benchsage's: {done.stderr}"
        pytest.fail(f"{script} draws neither hyperfine's JSON nor benchsage's here: {control.stderr}")
    assert image.stat().st_size > 1000


def test_hyperfines_statistics_script_reads_the_journals_numbers(scripts: Path, two: Path, tmp_path: Path) -> None:
    ours = tmp_path / "benchsage.json"
    ours.write_text(exported(two).json_text, encoding="utf-8")
    done = run_script(scripts, "advanced_statistics.py", ours, "--time-unit", "millisecond")
    assert done.returncode == 0, done.stderr
    printed = {m.group(1): {k: float(v) for k, v in re.findall(r"^  (\w+):\s+([\d.]+)(?: ms)?$", m.group(2), re.M)}
               for m in re.finditer(r"^Command '(.*)'\n((?:  .*\n)+)", done.stdout, re.M)}
    for command, times in journal_times(two).items():
        ms = np.asarray(times) * 1e3
        assert printed[command]["runs"] == len(ms) == 10
        assert printed[command]["mean"] == pytest.approx(round(float(np.mean(ms)), 3), abs=1e-9)
        assert printed[command]["stddev"] == pytest.approx(round(float(np.std(ms, ddof=1)), 3), abs=1e-9)
        assert printed[command]["median"] == pytest.approx(round(float(np.median(ms)), 3), abs=1e-9)
    assert run_script(scripts, "advanced_statistics.py", DATA / "two.json").returncode == 0


def test_hyperfines_welch_test_reads_two_commands(scripts: Path, two: Path, tmp_path: Path) -> None:
    from scipy import stats

    ours = tmp_path / "benchsage.json"
    ours.write_text(exported(two).json_text, encoding="utf-8")
    done = run_script(scripts, "welch_ttest.py", ours)
    assert done.returncode == 0, done.stderr
    short, long = journal_times(two).values()
    t, p = stats.ttest_ind(short, long, equal_var=False)
    assert f"t = {t:.3}, p = {p:.3}" in done.stdout


# -- real experiments ------------------------------------------------------------------------------


TWO = """
[experiment]
name = "sleeps"
runs = 5
seed = 3

[[test]]
name = "short"
command = "sleep 0.01"

[[test]]
name = "long"
command = "sleep 0.02"

[[compare]]
a = "long"
b = "short"
"""

SCAN = """
[experiment]
name = "scan"
runs = 2
seed = 4

[[sweep]]
name = "n"
levels = [1, 2, 3]

[[test]]
name = "sleep"
command = "sleep 0.0{n}"
"""

FAILING = """
[experiment]
name = "failing"
runs = 2
seed = 5

[[test]]
name = "fine"
command = "true"

[[test]]
name = "broken"
command = "false"
"""


def run_experiment(tmp_path_factory: pytest.TempPathFactory, name: str, spec: str, *exit_statuses: int) -> Path:
    root = tmp_path_factory.mktemp(name)
    (root / "spec.toml").write_text(spec)
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", "spec.toml", "-o", "out"], cwd=root, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode in (exit_statuses or (0,)), done.stderr
    return root / "out"


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_experiment(tmp_path_factory, "two", TWO)


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_experiment(tmp_path_factory, "scan", SCAN)


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_experiment(tmp_path_factory, "failing", FAILING, 4)


class Exported:
    def __init__(self, directory: Path) -> None:
        self.analysis, self.table = analyze_sources([str(directory)])
        self.json_text = hyperfine_json_text(self.analysis, self.table)
        self.markdown = hyperfine_markdown(self.analysis, self.table)
        self.csv = hyperfine_csv(self.analysis, self.table)


_exported: dict[Path, Exported] = {}


def exported(directory: Path) -> Exported:
    if directory not in _exported:
        _exported[directory] = Exported(directory)
    return _exported[directory]


def journal_trials(directory: Path) -> list[tuple[str, str, str, float, float, float]]:
    """(test, command, arm, wall, user, system) of every successful trial, in the order they started,
    read from the journal with SQL."""
    conn = sqlite3.connect(f"file:{journal_path(directory)}?mode=ro", uri=True)
    try:
        return conn.execute(
            """SELECT s.name, s.command, r.arm, t.wall_time, t.user_time, t.sys_time FROM trials t
               JOIN tests s ON t.test_id = s.id JOIN runs r ON t.run_id = r.id
               WHERE t.status = 'ok' ORDER BY t.started""").fetchall()
    finally:
        conn.close()


def journal_times(directory: Path) -> dict[str, list[float]]:
    """Each command's wall times in the order they ran, commands in the tests' declared order."""
    conn = sqlite3.connect(f"file:{journal_path(directory)}?mode=ro", uri=True)
    try:
        commands = [c for (c,) in conn.execute("SELECT command FROM tests ORDER BY id")]
    finally:
        conn.close()
    out: dict[str, list[float]] = {c: [] for c in commands}
    for _, command, _, wall, _, _ in journal_trials(directory):
        out[command].append(wall)
    return out


def test_the_json_read_back_holds_the_journals_times_and_statistics(two: Path, tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(exported(two).json_text, encoding="utf-8")
    results = json.loads(path.read_text(encoding="utf-8"))["results"]
    trials = journal_trials(two)
    assert [r["command"] for r in results] == ["sleep 0.01", "sleep 0.02"]  # the commands, in declared order
    for r in results:
        mine = [t for t in trials if t[1] == r["command"]]
        wall = np.array([t[3] for t in mine])
        assert r["times"] == wall.tolist() and len(wall) == 10  # both arms, in the order they ran
        assert r["exit_codes"] == [0] * 10
        assert r["mean"] == pytest.approx(np.mean(wall), rel=1e-12)
        assert r["stddev"] == pytest.approx(np.std(wall, ddof=1), rel=1e-12)
        assert r["median"] == np.median(wall) and r["min"] == wall.min() and r["max"] == wall.max()
        assert r["user"] == pytest.approx(np.mean([t[4] for t in mine]), rel=1e-12, abs=1e-15)
        assert r["system"] == pytest.approx(np.mean([t[5] for t in mine]), rel=1e-12, abs=1e-15)
        assert "parameters" not in r  # as hyperfine: only a parameter scan's results have parameters


def test_the_json_benchsage_object_holds_the_arms_verdict_and_claims(two: Path) -> None:
    e = exported(two)
    b = json.loads(e.json_text)["benchsage"]
    trials = journal_trials(two)
    assert b["directory"] == str(two) and b["seed"] == 3 and b["runs_per_arm"] == 5
    assert b["verdict"] == e.analysis.verdict and b["order_matters"] is e.analysis.order_matters
    assert [a["test"] for a in b["arms"]] == ["short", "long"]
    for a in b["arms"]:
        for arm in ("fixed", "random"):
            values = [t[3] for t in trials if t[0] == a["test"] and t[2] == arm]
            assert a[arm]["n"] == len(values) == 5
            assert a[arm]["median"] == pytest.approx(np.median(values), rel=1e-12)
        (row,) = [v for v in e.analysis.tests if v.test == a["test"] and v.metric == "wall_time"]
        assert (a["kw_p"], a["p_adjusted"], a["significant"]) == (row.kw_p, row.p_adjusted, row.significant)
        assert 0 <= a["kw_p"] <= 1
    (claim,) = b["comparisons"]
    long, short = (np.median([t[3] for t in trials if t[0] == name]) for name in ("long", "short"))
    assert (claim["a"], claim["b"], claim["metric"]) == ("long", "short", "wall_time")
    assert claim["ratio"] == pytest.approx(long / short, rel=1e-12)
    assert claim["ci"][0] < claim["ratio"] < claim["ci"][1] and claim["better"] == "b" and claim["p"] < 0.05
    assert len(b["runs"]) == 10 and {r["arm"] for r in b["runs"]} == {"fixed", "random"}
    assert all(sorted(r["order"]) == ["long", "short"] for r in b["runs"])
    assert b["failed_tests"] == []


def test_the_markdown_read_back_holds_the_journals_numbers_and_the_verdict(two: Path) -> None:
    e = exported(two)
    rows = table_rows(e.markdown)
    assert rows[0] == ["Command", "Mean [ms]", "Min [ms]", "Max [ms]", "Relative"]
    times = {c: np.asarray(t) * 1e3 for c, t in journal_times(two).items()}
    for row, (command, ms) in zip(rows[2:], times.items(), strict=True):
        assert row[0] == f"`{command}`"
        assert row[1:4] == [f"{np.mean(ms):.1f} ± {np.std(ms, ddof=1):.1f}", f"{ms.min():.1f}", f"{ms.max():.1f}"]
    short, long = (np.median(ms) for ms in times.values())
    assert rows[2][4] == "1.00"
    relative = re.fullmatch(r"(\d+\.\d\d) \[(\d+\.\d\d), (\d+\.\d\d)\]", rows[3][4])
    assert relative and relative.group(1) == f"{long / short:.2f}"
    assert float(relative.group(2)) <= long / short <= float(relative.group(3))
    lines = e.markdown.splitlines()
    assert lines[-1] == f"Order: {verdict_sentence(e.analysis)}"
    assert re.match(r"Order: (No order effect|Order matters)", lines[-1])
    assert lines[-2].startswith("Relative: each median over the fastest's, [95% interval]")


def test_the_csv_read_back_holds_the_journals_numbers(two: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(exported(two).csv)))
    assert list(rows[0]) == ["command", "mean", "stddev", "median", "user", "system", "min", "max"]
    trials = journal_trials(two)
    for row, (command, wall) in zip(rows, journal_times(two).items(), strict=True):
        assert row["command"] == command
        assert float(row["mean"]) == pytest.approx(np.mean(wall), rel=1e-12)
        assert float(row["stddev"]) == pytest.approx(np.std(wall, ddof=1), rel=1e-12)
        assert float(row["median"]) == np.median(wall) and float(row["min"]) == min(wall) and float(row["max"]) == max(wall)
        assert float(row["user"]) == pytest.approx(np.mean([t[4] for t in trials if t[1] == command]), rel=1e-12, abs=1e-15)


def test_a_parameter_scan_gives_each_level_its_result_and_parameter(scan: Path) -> None:
    e = exported(scan)
    results = json.loads(e.json_text)["results"]
    times = journal_times(scan)
    assert [r["command"] for r in results] == ["sleep 0.01", "sleep 0.02", "sleep 0.03"] == list(times)
    assert [r["parameters"] for r in results] == [{"n": "1"}, {"n": "2"}, {"n": "3"}]  # strings, as hyperfine writes them
    assert [r["times"] for r in results] == list(times.values())
    rows = list(csv.DictReader(io.StringIO(e.csv)))
    assert [(r["command"], r["parameter_n"]) for r in rows] == [("sleep 0.01", "1"), ("sleep 0.02", "2"), ("sleep 0.03", "3")]
    md = table_rows(e.markdown)
    assert [r[0] for r in md[2:]] == ["`sleep 0.01`", "`sleep 0.02`", "`sleep 0.03`"]
    medians = [np.median(t) for t in times.values()]
    assert [r[4] for r in md[2:]] == ["1.00", f"{medians[1] / medians[0]:.2f}", f"{medians[2] / medians[0]:.2f}"]  # no claims: no intervals
    assert "interval" not in e.markdown


def test_a_test_that_never_succeeded_is_a_result_without_times(failing: Path) -> None:
    e = exported(failing)
    data = json.loads(e.json_text)
    fine, broken = data["results"]
    assert (fine["command"], broken["command"]) == ("true", "false")
    assert fine["times"] == journal_times(failing)["true"] and len(fine["times"]) >= 1
    assert broken["times"] == [] and broken["exit_codes"] == []
    assert all(broken[k] is None for k in ("mean", "stddev", "median", "user", "system", "min", "max"))
    assert data["benchsage"]["verdict"] == "tests-failed"
    assert [f["test"] for f in data["benchsage"]["failed_tests"]] == ["broken"]
    md = table_rows(e.markdown)
    assert md[3] == ["`false`", NULL, NULL, NULL, NULL] and md[2][4] == "1.00"
    assert "Tests failed: broken" in e.markdown.splitlines()[-1]
    rows = list(csv.DictReader(io.StringIO(e.csv)))
    assert rows[1] == {"command": "false", **dict.fromkeys(("mean", "stddev", "median", "user", "system", "min", "max"), "")}
