"""Williams orders through the command line: `plan --json` shows what `run` and `resume` record,
the journal's random-arm orders are rows of randomized Williams squares (on each worker its
own), the diagnostics say the carry-over is balanced, and bad values are one line, exit 2."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

from benchsage.design.plan import make_plan, worker_seed
from benchsage.vocabulary import WILLIAMS
from benchsage.design.experiment import plan_experiment
from benchsage.execute.create import create_experiment
from benchsage.spec import load_spec

PYTHON = shutil.which("python3") or sys.executable

SPEC = f"""
[experiment]
name = "williams"
runs = 8
seed = 21
random_orders = "williams"

[[worker]]
name = "one"
kind = "command"
transport = ["env", "BENCHSAGE_VIA=one"]
python = "{PYTHON}"

[[worker]]
name = "two"
kind = "command"
transport = ["env", "BENCHSAGE_VIA=two"]
python = "{PYTHON}"

[[test]]
name = "a"
command = "true"

[[test]]
name = "b"
command = "true --b"

[[test]]
name = "c"
command = "echo c"

[[test]]
name = "d"
command = "echo d"
"""

NAMES = ("a", "b", "c", "d")


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def recorded(directory: Path) -> tuple[dict, dict[str, list[tuple[str, list[str]]]]]:
    conn = sqlite3.connect(directory / "journal.sqlite")
    try:
        meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
        names = [t for (t,) in conn.execute("SELECT name FROM tests ORDER BY id")]
        runs: dict[str, list[tuple[str, list[str]]]] = {}
        for worker, arm, order in conn.execute("SELECT worker, arm, test_order FROM runs ORDER BY id"):
            runs.setdefault(worker, []).append((arm, [names[i] for i in json.loads(order)]))
    finally:
        conn.close()
    return meta, runs


def assert_williams_squares(orders: list[list[str]]) -> None:
    """Each block of 4 consecutive random orders is a Williams square of the 4 tests: every
    test once at each position, every ordered pair of different tests adjacent once."""
    assert len(orders) % 4 == 0
    for k in range(0, len(orders), 4):
        block = orders[k : k + 4]
        assert all(sorted(order) == list(NAMES) for order in block)
        assert Counter((t, p) for order in block for p, t in enumerate(order)) == {(t, p): 1 for t in NAMES for p in range(4)}
        assert Counter(zip_pairs(block)) == {(x, y): 1 for x in NAMES for y in NAMES if x != y}


def zip_pairs(block: list[list[str]]) -> list[tuple[str, str]]:
    return [(x, y) for order in block for x, y in zip(order, order[1:])]


def test_plan_run_and_diagnostics_with_williams_orders(tmp_path: Path) -> None:
    spec = tmp_path / "experiment.toml"
    spec.write_text(SPEC)
    planned = bench("plan", str(spec), "--json", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    doc = json.loads(planned.stdout)
    assert doc["random_orders"] == "williams" and doc["squares"] == {"rows": 4, "complete": 2, "extra_runs": 0}
    text = bench("plan", str(spec), cwd=tmp_path).stdout
    assert "Williams squares" in text and "2 complete Williams squares of 4 rows" in text

    done = bench("run", str(spec), "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    meta, runs = recorded(tmp_path / "out")
    assert meta["random_orders"] == "williams" and meta["seed"] == 21
    for w in doc["workers"]:
        # What ran is what `plan --json` showed, and what the plan derives from the worker's seed.
        assert runs[w["name"]] == [(r["arm"], r["order"]) for r in w["runs"]]
        plan = make_plan(NAMES, 8, worker_seed(21, w["name"], 2), WILLIAMS)
        assert [(r.arm, plan.describe_order(r)) for r in plan.runs] == runs[w["name"]]
        assert_williams_squares([order for arm, order in runs[w["name"]] if arm == "random"])
    # Each worker its own squares.
    assert [o for a, o in runs["one"] if a == "random"] != [o for a, o in runs["two"] if a == "random"]

    balance = json.loads(done.stdout)["diagnostics"]["carryover_balance"]
    assert balance["balanced"] is True and balance["random_orders"] == "williams"
    assert balance["runs"] == 16 and balance["complete_squares"] == 4 and balance["square_rows"] == 4
    assert (balance["pair_min"], balance["pair_max"], balance["position_min"], balance["position_max"]) == (2, 2, 2, 2)
    shown = bench("analyze", "out", "--all", cwd=tmp_path)
    assert shown.returncode == 0 and "Carry-over balance: balanced" in shown.stdout


def test_resume_carries_out_the_recorded_williams_plan(tmp_path: Path) -> None:
    spec_path = tmp_path / "experiment.toml"
    spec_path.write_text(SPEC.replace("runs = 8", "runs = 6"))
    planned = json.loads(bench("plan", str(spec_path), "--json", cwd=tmp_path).stdout)
    assert planned["squares"] == {"rows": 4, "complete": 1, "extra_runs": 2}
    # The journal is written before anything runs (as when a run is killed before its first
    # trial); resume carries out that plan.
    spec = load_spec(spec_path)
    journal = create_experiment(spec, plan_experiment(spec), str(tmp_path / "out"))
    journal.close()
    done = bench("resume", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    meta, runs = recorded(tmp_path / "out")
    assert meta["random_orders"] == "williams"
    for w in planned["workers"]:
        assert runs[w["name"]] == [(r["arm"], r["order"]) for r in w["runs"]]
    balance = json.loads(done.stdout)["diagnostics"]["carryover_balance"]
    assert balance["balanced"] is False and balance["complete_squares"] == 2
    assert "incomplete last square" in balance["detail"]
    text = bench("analyze", "out", "--all", cwd=tmp_path).stdout
    assert "Carry-over balance: not balanced" in text


def test_shuffled_runs_record_their_orders_too(tmp_path: Path) -> None:
    spec = tmp_path / "experiment.toml"
    spec.write_text(SPEC.replace('random_orders = "williams"\n', "").replace("runs = 8", "runs = 5"))
    planned = json.loads(bench("plan", str(spec), "--json", cwd=tmp_path).stdout)
    assert planned["random_orders"] == "shuffle" and planned["squares"] is None
    done = bench("run", str(spec), "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    meta, runs = recorded(tmp_path / "out")
    assert meta["random_orders"] == "shuffle"
    for w in planned["workers"]:
        assert runs[w["name"]] == [(r["arm"], r["order"]) for r in w["runs"]]
    balance = json.loads(done.stdout)["diagnostics"]["carryover_balance"]
    assert balance["balanced"] is False and balance["random_orders"] == "shuffle"


def test_bad_random_orders_are_one_line_exit_2(tmp_path: Path) -> None:
    cases = {
        "latin.toml": ('[experiment]\nname = "x"\nrandom_orders = "latin"\n[[test]]\ncommand = "true"\n[[test]]\ncommand = "false"\n',
                       "key 'random_orders' must be \"shuffle\" or \"williams\", got 'latin'"),
        "one.toml": ('[experiment]\nname = "x"\nrandom_orders = "williams"\n[[test]]\ncommand = "true"\n',
                     "key 'random_orders' = \"williams\" needs at least 2 tests"),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        for command in ("plan", "run"):
            done = bench(command, name, *(["-o", "out"] if command == "run" else []), cwd=tmp_path)
            assert done.returncode == 2 and done.stdout == ""
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and expected in lines[0] and name in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
