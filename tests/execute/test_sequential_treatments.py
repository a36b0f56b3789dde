"""Sequential stopping with treatments, through `benchsage run` and `resume`: a context whose
build fails neither holds the looks back nor stops the workers early, and the last look waits
until resume has measured it; with observer levels the looks examine the baseline level, as the
order analysis does; no look ends the experiment before every treatment has a run in each arm.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timing  # decisions taken from measured times

TESTS = """
[[test]]
name = "a"
command = "sleep 0.02$(shuf -i 0-9 -n 1); printf a >> trace"

[[test]]
name = "b"
command = "sleep 0.02$(shuf -i 0-9 -n 1); printf b >> trace"

[[test]]
name = "d"
command = "if [ \\"$(cat trace)\\" = ab ]; then sleep 0.005; else sleep 0.03; fi"
"""

BUILD = '#!/bin/sh\n[ -e "broken-$1" ] && { echo "cannot link $1 first" >&2; exit 3; }\necho "$*" > built.txt\n'


def bench(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def query(out: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(out / "journal.sqlite")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def looks(out: Path) -> list[tuple[int, dict]]:
    return [(n, json.loads(r)) for n, r in query(out, "SELECT runs, record FROM looks ORDER BY id")]


@pytest.mark.slow
def test_a_failed_context_neither_holds_the_looks_back_nor_stops_the_workers(tmp_path: Path) -> None:
    (tmp_path / "build.sh").write_text(BUILD)
    spec = tmp_path / "experiment.toml"
    spec.write_text(
        '[experiment]\nname = "sequential-treatments"\nruns = 20\nseed = 4\nstop = "sequential"\nlooks = 2\nmin_effect = 25.0\n'
        '[reset]\ncommand = ": > trace"\n' + TESTS +
        '[context]\nvariants = 2\nlink_order = {objects = ["x.o", "y.o"], build = "sh build.sh {objects}"}\n'
        '[observer]\nlevels = {none = "", env = "env WRAPPED=1"}\n'
    )
    cells = json.loads(bench(tmp_path, "plan", str(spec), "--json").stdout)["treatments"]
    assert len(cells) == 4  # 2 contexts x 2 observer levels
    first = cells[0]["link_order"][0]
    broken = {c["context"] for c in cells if c["link_order"][0] == first}
    (tmp_path / f"broken-{first}").write_text("")

    failed = bench(tmp_path, "run", str(spec), "-o", "out")
    assert failed.returncode == 2, failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    assert "[context] key 'link_order': the build failed for" in last and "cannot link" in last
    assert last.endswith("fix the build, then `benchsage resume out` runs the skipped ones and takes the last look")
    out = tmp_path / "out"
    runs = query(out, "SELECT id, arm_index, status, treatment FROM runs ORDER BY id")
    context_of = {i: cells[t]["context"] for i, _a, _s, t in runs}
    # Every run of the other context was carried out: the skipped ones stopped nobody.
    assert {s for i, _a, s, _t in runs if context_of[i] in broken} == {"skipped"}
    assert {s for i, _a, s, _t in runs if context_of[i] not in broken} == {"done"}
    # The first look went ahead without the skipped runs, examining the baseline level's pairs
    # only; the last look waits for them.
    (point, record), = looks(out)
    baseline = {i for i, _a, _s, t in runs if cells[t]["observer"] == "none"}
    missing = sorted(i for i, a, _s, _t in runs if i in baseline and a < 10 and context_of[i] in broken)
    examined = sum(1 for i, a, s, _t in runs if i in baseline and a < 10 and s == "done") // 2
    assert point == 10 and missing and record["missing_runs"] == missing and record["stop"] is False
    assert record["runs"] == examined and all(t["n_fixed"] == examined for t in record["tests"])
    assert record["information"] == examined / 10  # of the 10 baseline pairs in the plan
    assert f"without {len(missing)} runs of contexts whose build failed" in failed.stderr

    os.remove(tmp_path / f"broken-{first}")
    resumed = bench(tmp_path, "resume", "out", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert {s for (s,) in query(out, "SELECT status FROM runs")} == {"done"}
    taken = looks(out)
    assert [(p, r["runs"], r["information"], r["stop"], r["missing_runs"]) for p, r in taken][1:] == [(20, 10, 1.0, True, [])]
    doc = json.loads(resumed.stdout)
    assert doc["sequential"]["stopped_at_runs"] == 20
    # The last look examined what the order analysis examines: the baseline level's 10 pairs.
    rows = {t["test"]: t for t in doc["tests"] if t["primary"]}
    assert {name: r["n_fixed"] for name, r in rows.items()} == {"a": 10, "b": 10, "d": 10}
    assert {t["test"][0]: t["n_fixed"] for t in taken[1][1]["tests"]} == {"a": 10, "b": 10, "d": 10}
    # On a failure, d's values by arm show what the look saw (a busy machine, or the carry-over lost).
    d_values = query(out, "SELECT r.arm, r.treatment, ROUND(t.wall_time, 4) FROM trials t JOIN runs r ON r.id = t.run_id JOIN attempts a ON "
                          "a.id = t.attempt_id WHERE a.status = 'done' AND t.test_id = 2 ORDER BY r.arm, r.treatment, t.wall_time")
    assert rows["d"]["decided"] == "effect", (json.dumps(rows["d"]), json.dumps(taken[1][1]["tests"]), d_values)


PYTHON = shutil.which("python3") or sys.executable


def test_no_look_ends_the_experiment_before_every_treatment_ran_in_each_arm(tmp_path: Path) -> None:
    # 8 contexts, 12 runs per arm on 3 workers, 2 looks: at the first look (6 runs per arm on
    # each worker, 18 in all) every test can be decided (a margin of 1000 %), but each worker
    # has measured 6 of the 8 contexts; the experiment goes on to the second look.
    workers = "".join(f'[[worker]]\nname = "w{k}"\nkind = "command"\ntransport = ["env", "W={k}"]\npython = "{PYTHON}"\n'
                      for k in (1, 2, 3))
    spec = tmp_path / "experiment.toml"
    spec.write_text(
        '[experiment]\nname = "sequential-cover"\nruns = 12\nseed = 6\nstop = "sequential"\nlooks = 2\nmin_effect = 1000.0\n'
        '[reset]\ncommand = "true"\n[[test]]\nname = "a"\ncommand = "sleep 0.01$(shuf -i 0-9 -n 1)"\n'
        '[[test]]\nname = "b"\ncommand = "sleep 0.01$(shuf -i 0-9 -n 1)"\n'
        '[context]\nvariants = 8\nenv_bytes = [0, 4096]\n' + workers
    )
    done = bench(tmp_path, "run", str(spec), "-o", "out", "--json")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    first, second = looks(out)
    assert first[0] == 6 and first[1]["decided"] == 2 and first[1]["stop"] is False
    assert "2 of 2 tests decided" in done.stderr
    assert "every test is decided, but the 8 treatments need a run in each arm first: going on to 12 runs per arm" in done.stderr
    assert second[0] == 12 and second[1]["stop"] is True
    assert query(out, "SELECT status, COUNT(*) FROM runs GROUP BY status") == [("done", 72)]
    doc = json.loads(done.stdout)
    assert doc["sequential"]["stopped_at_runs"] == 12
    assert {t["test"]: t["decided_at_runs"] for t in doc["tests"] if t["primary"] and t["decided"]} == {"a": 6, "b": 6}


@pytest.mark.slow
def test_an_experiment_decided_without_a_failed_context_says_its_runs_are_not_needed(tmp_path: Path) -> None:
    # Every link-order build fails on w1; w2 and w3 carry on, and their 20 pairs each decide
    # every test at the first look (40 of 120 runs per arm): the experiment stops there.
    workers = "".join(f'[[worker]]\nname = "w{k}"\nkind = "command"\ntransport = ["env", "W={k}"]\npython = "{PYTHON}"\n'
                      for k in (1, 2, 3))
    spec = tmp_path / "experiment.toml"
    spec.write_text(
        '[experiment]\nname = "sequential-decided"\nruns = 40\nseed = 2\nstop = "sequential"\nlooks = 2\nmin_effect = 25.0\n'
        '[reset]\ncommand = ": > trace$W"\n' + TESTS.replace("trace", "trace$W") +
        '[context]\nvariants = 2\nlink_order = {objects = ["x.o", "y.o"], build = \'[ "$W" != 1 ] && echo {objects} > built$W.txt\'}\n'
        + workers
    )
    done = bench(tmp_path, "run", str(spec), "-o", "out")
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "[context] key 'link_order': the build failed for c1 on worker w1 (exit status 1); c2 on worker w1 (exit status 1); " in last
    assert last.endswith("every test was decided at look 1 of 2 (20 runs per arm) without their runs, so they are not needed; "
                         "80 runs (240 trials) are measured in out; fix the build before measuring with these contexts again")
    out = tmp_path / "out"
    (point, record), = looks(out)
    assert (point, record["runs"], record["information"], record["decided"], record["stop"]) == (20, 40, 40 / 120, 3, True)
    assert [t["decided"] for t in record["tests"] if t["test"][0] == "d"] == ["effect"]
    assert sorted(query(out, "SELECT worker, status, COUNT(*) FROM runs GROUP BY worker, status")) == [
        ("w1", "not-needed", 80), ("w2", "done", 40), ("w2", "not-needed", 40), ("w3", "done", 40), ("w3", "not-needed", 40)]
