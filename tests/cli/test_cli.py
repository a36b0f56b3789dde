"""The `benchsage` command as users script it: exit codes, one-line errors, JSON on stdout."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchsage.agent.cgroups import probe

SPEC = """
[experiment]
name = "cli"
runs = 12
seed = 3

[reset]
command = "rm -f state"

[[test]]
name = "first-writer"
command = "test -e state && echo 'ops: 200' || {{ touch state; echo 'ops: 100'; }}"
[[test.metric]]
name = "ops"
regex = 'ops: ([0-9]+)'
unit = "ops/s"
better = "higher"

[[test]]
name = "steady"
command = "touch state; echo 'ops: 50'"
[[test.metric]]
name = "ops"
regex = 'ops: ([0-9]+)'
"""


# Metrics per trial: one declared; wall_time, user_time, sys_time, max_rss; and where the agent
# has cgroups (root on this machine), peak_memory and cpu_time of the whole tree.
METRICS = 5 + (2 if probe().method else 0)


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300
    )


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess]:
    root = tmp_path_factory.mktemp("cli")
    spec = root / "experiment.toml"
    spec.write_text(SPEC.replace("{{", "{").replace("}}", "}"))
    result = bench("run", str(spec), "-o", str(root / "out"), "--json", "--fail-on-effect", cwd=root)
    return root, root / "out", result


def test_run_json_is_only_json_and_fail_on_effect(experiment) -> None:
    root, out, result = experiment
    doc = json.loads(result.stdout)  # stdout holds nothing but the JSON
    assert result.returncode == 1, result.stderr  # an order effect was found and --fail-on-effect was given
    assert doc["tool"]["name"] == "benchsage" and doc["order_matters"] is True
    assert doc["directory"] == str(out)
    by = {(t["test"], t["metric"]): t for t in doc["tests"]}
    # first-writer: always first in the fixed order (100); second in some random orders, after
    # steady has created the state (200).
    fw = by[("first-writer", "ops")]
    assert fw["primary"] and fw["n_fixed"] == 12 and fw["n_random"] == 12 and fw["median_fixed"] == 100
    assert by[("steady", "ops")]["kw_p"] is None  # all values equal: no p-value, and a warning says why
    assert any("steady" in w for w in doc["warnings"])
    assert by[("steady", "wall_time")]["primary"] is False
    assert "run" in result.stderr  # progress went to stderr


def test_analyze_directory_matches_run_output(experiment) -> None:
    root, out, result = experiment
    again = bench("analyze", str(out), "--json", cwd=root)
    assert again.returncode == 0
    a, b = json.loads(result.stdout), json.loads(again.stdout)
    assert [t["kw_p"] for t in a["tests"]] == [t["kw_p"] for t in b["tests"]]


def test_terminal_output_without_a_terminal_has_no_ansi(experiment) -> None:
    root, out, _ = experiment
    text = bench("analyze", str(out), cwd=root)
    assert text.returncode == 0 and "\x1b[" not in text.stdout
    assert "first-writer" in text.stdout and "Order matters" in text.stdout


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_round_trips_through_the_tidy_importer(experiment, fmt: str) -> None:
    root, out, _ = experiment
    target = root / f"trials.{fmt}"
    done = bench("export", str(out), "--format", fmt, "-o", str(target), cwd=root)
    assert done.returncode == 0, done.stderr
    if fmt == "csv":
        with open(target) as fh:
            table = list(csv.DictReader(fh))
        assert {"test", "order", "metric", "value", "run", "position", "worker", "time", "status"} <= set(table[0])
        assert len(table) == 48 * METRICS  # 48 trials x (1 declared + the harness metrics)
        reanalysed = bench("analyze", str(target), "--format", "tidy", "--json", cwd=root)
        assert reanalysed.returncode == 0, reanalysed.stderr
        doc = json.loads(reanalysed.stdout)
        fw = next(t for t in doc["tests"] if t["test"] == "first-writer" and t["metric"] == "ops")
        assert fw["n_fixed"] == 12 and fw["median_fixed"] == 100
    elif fmt == "jsonl":
        lines = [json.loads(line) for line in target.read_text().splitlines()]
        assert len(lines) == 48 * METRICS and {line["order"] for line in lines} == {"fixed", "random"}
    else:
        import pyarrow.parquet as pq

        assert pq.read_table(target).num_rows == 48 * METRICS


def test_plan_prints_runs_and_estimate(tmp_path: Path, experiment) -> None:
    root, _, _ = experiment
    spec = root / "experiment.toml"
    done = bench("plan", str(spec), "--json", cwd=root)
    assert done.returncode == 0
    doc = json.loads(done.stdout)
    assert doc["total_runs"] == 24 and doc["seed"] == 3 and len(doc["runs"]) == 24
    assert not list(root.glob("results"))  # plan executes nothing
    text = bench("plan", str(spec), cwd=root)
    assert "first-writer" in text.stdout and "Duration" in text.stdout


@pytest.mark.parametrize(
    "args, expected",
    [
        (["run", "missing.toml"], "spec file not found"),
        (["analyze", "nowhere"], "nowhere"),
        (["run", "bad.toml"], "invalid TOML"),
        (["run", "unknown.toml"], "unknown key 'tset'"),
        (["analyze", "x", "--alpha", "2"], "--alpha"),
        (["export", "nowhere", "-o", "x.csv"], "nowhere"),
        (["frobnicate"], "No such command"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, args: list[str], expected: str) -> None:
    (tmp_path / "bad.toml").write_text("[experiment\n")
    (tmp_path / "unknown.toml").write_text('[experiment]\nname = "x"\n[[tset]]\ncommand = "true"\n')
    done = bench(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in done.stderr


def test_version_and_help(tmp_path: Path) -> None:
    import benchsage

    assert benchsage.__version__ in bench("--version", cwd=tmp_path).stdout
    helped = bench("--help", cwd=tmp_path)
    assert helped.returncode == 0 and all(c in helped.stdout for c in ("run", "resume", "plan", "analyze", "report", "export", "env"))


def test_analysis_csv_for_spreadsheets(experiment) -> None:
    root, out, _ = experiment
    target = root / "verdicts.csv"
    done = bench("analyze", str(out), "--csv", str(target), cwd=root)
    assert done.returncode == 0, done.stderr
    with open(target) as fh:
        rows = list(csv.DictReader(fh))
    fw = next(r for r in rows if r["test"] == "first-writer" and r["metric"] == "ops")
    assert fw["significant"] == "True" and float(fw["median_fixed"]) == 100 and fw["ci_case"] in {"1", "2", "3"}
    assert len(rows) == 2 * METRICS  # 2 tests x (1 declared + the harness metrics)


def test_analyze_warns_when_runs_saw_different_settings(experiment, tmp_path: Path) -> None:
    import shutil
    import sqlite3

    root, out, _ = experiment
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    with sqlite3.connect(copy / "journal.sqlite") as conn:
        rows = conn.execute("SELECT id, snapshot FROM attempts ORDER BY id").fetchall()
        for attempt_id, snapshot in rows[:5]:
            snap = json.loads(snapshot)
            snap["governor"] = "powersave"
            snap["files"] = {path: "0" * 64 for path in snap.get("files", {})} or {"/usr/bin/true": "0" * 64}
            conn.execute("UPDATE attempts SET snapshot = ? WHERE id = ?", (json.dumps(snap), attempt_id))
    done = bench("analyze", str(copy), "--json", cwd=root)
    warnings = json.loads(done.stdout)["warnings"]
    assert any("governor differs between runs" in w and "powersave" in w for w in warnings), warnings


LEFTOVER_SPEC = """
[experiment]
name = "leftovers"
runs = 6
seed = 1

[[test]]
name = "daemon"
command = "sh -c 'setsid sleep 30 & echo started'"

[[test]]
name = "quiet"
command = "true"
"""


def _processes_in(folder: Path) -> list[int]:
    """Processes whose working directory is `folder` or below it (the trials ran there)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd == str(folder) or cwd.startswith(f"{folder}/"):
            found.append(int(pid))
    return found


def test_a_test_that_leaves_a_process_running_is_named_and_nothing_survives(tmp_path: Path) -> None:
    (tmp_path / "leftovers.toml").write_text(LEFTOVER_SPEC)
    out = tmp_path / "out"
    done = bench("run", "leftovers.toml", "-o", str(out), "--json", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    time.sleep(0.5)
    assert _processes_in(tmp_path) == []  # every setsid sleep was killed before the next trial
    doc = json.loads(done.stdout)
    named = "daemon: 12 of 12 trials left processes running (12 in all), killed before the next trial: a leftover would perturb"
    assert [w for w in doc["warnings"] if "left processes running" in w and w.startswith(named)] == [
        w for w in doc["warnings"] if "left processes running" in w]
    assert any(w.startswith(named) for w in doc["warnings"])
    # Both tests hold less memory than the agent's floor: said once for each.
    floor = [w for w in doc["warnings"] if "is at the floor of what wait4 can show" in w]
    assert sorted(w.split(" ")[0] for w in floor) == ["daemon", "quiet"]
    by = {(t["test"], t["metric"]): t for t in doc["tests"]}
    # (Spawned by posix_spawn, every trial of a test below the floor reports the floor itself, so
    # the note that its values are all equal may come first.)
    assert floor[1].removeprefix("quiet (max_rss): ") in by[("quiet", "max_rss")]["notes"] and not by[("quiet", "wall_time")]["notes"]
    text = bench("analyze", str(out), "--no-diagnostics", "--all", cwd=tmp_path).stdout
    assert named in text and "quiet (max_rss): median" in text
    # Without --all the leftovers are said (they concern the primary metric's trials), the notes on max_rss are not.
    plain = bench("analyze", str(out), "--no-diagnostics", cwd=tmp_path).stdout
    assert named in plain and "quiet (max_rss): median" not in plain and "notes on other metrics: add --all" in plain
    if probe().method:  # root here: the agent has cgroups, so peak_memory and cpu_time are there, with units
        assert by[("daemon", "peak_memory")]["unit"] == "KiB" and by[("daemon", "cpu_time")]["unit"] == "s"
        assert all(w.endswith("read peak_memory for the trial's own memory") for w in floor)
        assert re.search(r"^daemon +peak_memory +6/6 +[0-9.]+ (KiB|MiB) ", text, re.M)
        assert re.search(r"^quiet +cpu_time +6/6 +[0-9.]+ (ns|µs|ms|s) ", text, re.M)
    else:
        assert ("daemon", "peak_memory") not in by and "peak_memory" not in text.split("Warnings")[0]
    html = tmp_path / "report.html"
    assert bench("report", str(out), "-o", str(html), cwd=tmp_path).returncode == 0
    assert named in html.read_text(encoding="utf-8")


def test_env_says_how_trials_are_measured_here(tmp_path: Path) -> None:
    from benchsage.execute.local import LocalWorker

    worker = LocalWorker()
    try:
        agent = worker.connect()["measurement"]
    finally:
        worker.close()
    done = bench("env", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    measurement = json.loads(done.stdout)["measurement"]
    assert measurement["agent"] == agent  # exactly what the agent of an experiment sees
    aspects = {a["name"]: a for a in measurement["aspects"]}
    assert list(aspects) == ["cgroups", "leftovers", "energy", "cpus"]
    assert aspects["cgroups"]["value"] == (agent["cgroup"] or "none")
    assert aspects["cpus"]["data"]["allowed"] == agent["cpus_allowed"]
    text = bench("env", cwd=tmp_path).stdout
    assert "How trials are measured here (as the local agent sees it)" in text
    assert "Trial cgroups (peak_memory, cpu_time)" in text and "Each trial here records wall_time" in text
    if agent["cpus_isolated"] == [] and len(agent["cpus_allowed"]) > 1:
        assert f'cpus = "{agent["cpus_allowed"][-1]}"' in text and "no CPU is isolated" in text
    # Cgroups turned off for the agent: env says so and how leftovers are found instead.
    off = subprocess.run([sys.executable, "-m", "benchsage", "env", "--json"], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "BENCHSAGE_CGROUPS": "off"}, timeout=300)
    aspects = {a["name"]: a for a in json.loads(off.stdout)["measurement"]["aspects"]}
    assert aspects["cgroups"]["state"] == "off" and "BENCHSAGE_CGROUPS=off" in aspects["cgroups"]["advice"]
    assert aspects["leftovers"]["data"]["method"] == "subreaper"


def test_the_command_line_comparison_defaults_are_the_analysis_defaults() -> None:
    # `benchsage analyze` passes no TreatmentOptions (imports nothing for them) when only its
    # defaults were given: they must be the analysis's own.
    from benchsage.analyze.treatments import TreatmentOptions
    from benchsage.cli import COMPARE_DEFAULTS, _treatments

    assert (TreatmentOptions().compare_method, TreatmentOptions().ratio_ci) == COMPARE_DEFAULTS
    assert _treatments((), *COMPARE_DEFAULTS) is None
    assert _treatments((), "touati", COMPARE_DEFAULTS[1]) == TreatmentOptions(compare_method="touati")


def test_the_progress_bar_is_not_redrawn_between_every_two_trials(tmp_path: Path) -> None:
    """A redraw of the bar costs the controller 1-2 ms, three times the harness's own gap between
    two trials: on a terminal it is redrawn at most once a second, and its last frame still
    counts every trial."""
    sys.path.insert(0, str(Path(__file__).parent))
    from terminal import on_a_terminal

    tests = "".join(f'[[test]]\nname = "t{i}"\ncommand = "/bin/true"\n' for i in range(5))
    (tmp_path / "experiment.toml").write_text(f'[experiment]\nname = "bar"\nruns = 20\nseed = 1\n[reset]\ncommand = "true"\n{tests}')
    started = time.monotonic()
    status, drawn = on_a_terminal("run", "experiment.toml", "-o", "out", cwd=tmp_path)
    took = time.monotonic() - started
    assert status == 0, drawn
    frames = [f for f in re.split(r"[\r\n]+", drawn) if "/200 trials" in f]
    assert "200/200 trials" in frames[-1]
    assert len(frames) <= took + 4  # one a second at most, and those of its start and end (one per trial before: 200)


@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_bad_spec_is_said_before_the_statistics_are_loaded(tmp_path: Path, command: str) -> None:
    """A typo costs the user a tenth of a second, not the half second numpy and scipy take to load."""
    (tmp_path / "experiment.toml").write_text('[experiment]\nname = "x"\nrunz = 3\n[[test]]\ncommand = "true"\n')
    probe = ("import sys\nfrom benchsage.cli import main\ntry:\n    main([sys.argv[1], 'experiment.toml'])\nexcept SystemExit as exc:\n"
             "    print(exc.code, 'scipy' in sys.modules, 'numpy' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe, command], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["2", "False", "False"], done.stdout + done.stderr
    assert "unknown key 'runz'" in done.stderr or "runz" in done.stderr
