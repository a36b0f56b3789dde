"""Sequential stopping in the run loop, with real processes, real SQLite and real crashes: the
looks survive kill -9 and resume ends as an uninterrupted run does; a look a crash left untaken
is taken on resume before anything runs; on two workers a look counts the completed runs of
every worker and no worker runs past a look point before the look.
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from benchsage.execute.local import LocalWorker
from benchsage.execute.progress import QuietProgress
from benchsage.design.experiment import plan_experiment
from benchsage.execute.create import create_experiment
from benchsage.execute.runner import Runner
from benchsage.execute.session import spec_from_journal
from benchsage.spec import load_spec
from benchsage.store.journal import Journal

sys.path.insert(0, str(Path(__file__).parent))
from test_runner import count, rows, start_cli, wait_for  # noqa: E402  (the run loop's own test helpers)

pytestmark = pytest.mark.timing  # decisions taken from measured times

# `d` is fast only after `a` then `b` (each appends its name to a trace the reset empties): the
# fixed order always, a random order one time in six. Looks at 10, 20, 30 runs per arm; at 20
# d is decided "effect", a and b "no-effect", and the experiment stops (tests/cli/test_sequential.py).
SPEC = """
[experiment]
name = "sequential"
runs = 30
seed = 5
stop = "sequential"
looks = 3
min_effect = 10.0

[reset]
command = "{reset}: > trace"

[[test]]
name = "a"
command = "sleep 0.1; printf a >> trace"

[[test]]
name = "b"
command = "sleep 0.1; printf b >> trace"

[[test]]
name = "d"
command = "if [ \\"$(cat trace)\\" = ab ]; then sleep 0.02; else sleep 0.1; fi"
"""

DECIDED = {("a", "wall_time"): "no-effect", ("b", "wall_time"): "no-effect", ("d", "wall_time"): "effect"}


def decided_as_designed(record: dict) -> bool:
    """d decided "effect" and every test decided. a and b are "no-effect" on a quiet machine
    (tests/cli/test_sequential.py checks that); on a busy one their first-after-reset trials can
    be slow enough to be decided "effect" instead, which is not what these tests are about."""
    got = decisions(record)
    return set(got) == set(DECIDED) and got[("d", "wall_time")] == "effect" and None not in got.values()


def write_spec(folder: Path, text: str = SPEC.format(reset="")) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "experiment.toml"
    path.write_text(text)
    return path


def looks(directory: Path) -> list[tuple[int, int, float, dict]]:
    return [(i, n, t, json.loads(r)) for i, n, t, r in rows(directory, "SELECT id, runs, time, record FROM looks ORDER BY id")]


def decisions(record: dict) -> dict[tuple[str, str], str | None]:
    return {tuple(t["test"]): t["decided"] for t in record["tests"]}


def statuses(directory: Path) -> dict[int, str]:
    return dict(rows(directory, "SELECT id, status FROM runs"))


def execute(spec_path: Path, directory: Path) -> None:
    spec = load_spec(spec_path)
    journal = create_experiment(spec, plan_experiment(spec), str(directory))
    try:
        with LocalWorker() as worker:
            Runner(spec, journal, worker, QuietProgress()).execute()
    finally:
        journal.close()


def resume(directory: Path) -> None:
    journal = Journal.open(directory)
    try:
        with LocalWorker() as worker:
            Runner(spec_from_journal(journal), journal, worker, QuietProgress()).execute()
    finally:
        journal.close()


@pytest.mark.slow
def test_kill_9_then_resume_keeps_the_looks_and_ends_as_an_uninterrupted_run(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "a")
    out = tmp_path / "a" / "out"
    proc = start_cli("run", str(spec), "-o", str(out), "--quiet", cwd=tmp_path / "a")
    # Past the first look (10 runs per arm), inside a later run.
    wait_for(lambda: count(out, "SELECT COUNT(*) FROM looks") == 1 and count(out, "SELECT COUNT(*) FROM runs WHERE status = 'done'") >= 24,
             timeout=120)
    time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = looks(out)
    assert [(i, n) for i, n, _, _ in before] == [(0, 10)] and before[0][3]["stop"] is False
    resumed = start_cli("resume", str(out), "--json", cwd=tmp_path / "a")
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr.decode()
    assert b"resuming after look 1 of 3 at 10 runs per arm: 0 of 3 tests decided" in stderr
    after = looks(out)
    assert after[0] == before[0]  # the look taken before the crash, untouched and not taken again
    assert [(i, n) for i, n, _, _ in after] == [(0, 10), (1, 20)] and decided_as_designed(after[1][3])
    assert count(out, "SELECT COUNT(*) FROM attempts WHERE status = 'interrupted'") == 1
    doc = json.loads(stdout)

    # The same experiment, never interrupted, ends the same way: the same looks and decisions,
    # the same runs not needed.
    spec_b = write_spec(tmp_path / "b")
    execute(spec_b, tmp_path / "b" / "out")
    straight = looks(tmp_path / "b" / "out")
    assert [(i, n, r["decided"], r["stop"]) for i, n, _, r in straight] == [(i, n, r["decided"], r["stop"]) for i, n, _, r in after]
    assert decided_as_designed(straight[-1][3])
    assert statuses(out) == statuses(tmp_path / "b" / "out")
    assert sorted(set(statuses(out).values())) == ["done", "not-needed"]
    assert doc["sequential"]["stopped_at_runs"] == 20 and doc["sequential"]["looks"][0] == {
        "runs": 10, "decided": 0, "alpha_spent": before[0][3]["alpha_spent"]}


@pytest.mark.slow
def test_a_look_a_crash_left_untaken_is_taken_on_resume_before_any_run(tmp_path: Path, capsys) -> None:
    spec = write_spec(tmp_path)
    out = tmp_path / "out"
    execute(spec, out)
    (_, _, _, first), (_, _, _, stopping) = looks(out)
    assert stopping["stop"] is True
    ruled_out = {i for i, s in statuses(out).items() if s == "not-needed"}
    attempts = count(out, "SELECT COUNT(*) FROM attempts")
    # As if benchsage died after the run that completed 20 runs per arm, before its look.
    conn = sqlite3.connect(out / "journal.sqlite")
    with conn:
        conn.execute("DELETE FROM looks WHERE id = 1")
        conn.execute("UPDATE runs SET status = 'planned' WHERE status = 'not-needed'")
    conn.close()
    capsys.readouterr()
    resume(out)
    assert "look 2 of 3 at 20 runs per arm: 3 of 3 tests decided" in capsys.readouterr().err
    (_, _, _, again_first), (_, _, _, again) = looks(out)
    assert again_first == first and again == stopping  # the same values, the same decision
    assert count(out, "SELECT COUNT(*) FROM attempts") == attempts  # nothing ran
    assert {i for i, s in statuses(out).items() if s == "not-needed"} == ruled_out


PYTHON = shutil.which("python3") or sys.executable


@pytest.mark.slow
def test_two_workers_look_at_the_completed_runs_of_both(tmp_path: Path) -> None:
    # Worker "slow" resets for 0.3 s more, so "fast" reaches every look point first and waits.
    workers = f"""
[[worker]]
name = "fast"
kind = "command"
transport = ["env", "SLOW="]
python = "{PYTHON}"

[[worker]]
name = "slow"
kind = "command"
transport = ["env", "SLOW=1"]
python = "{PYTHON}"
"""
    # The workers share this folder: each keeps its own trace.
    text = SPEC.format(reset='if [ -n \\"$SLOW\\" ]; then sleep 0.3; fi; ').replace("trace", "trace$SLOW")
    spec = write_spec(tmp_path, text + workers)
    out = tmp_path / "out"
    proc = start_cli("run", str(spec), "-o", str(out), "--json", cwd=tmp_path)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr.decode()
    taken = looks(out)
    # Pooled over the two workers: 20 runs of 60 in all per arm at each worker's 10.
    assert [(n, r["tests"][0]["n_fixed"], r["tests"][0]["n_random"]) for _, n, _, r in taken][0] == (10, 20, 20)
    assert taken[-1][3]["stop"] is True and decided_as_designed(taken[-1][3])
    attempts = rows(out, """SELECT r.worker, r.arm_index, a.started, a.ended, a.status FROM attempts a
                            JOIN runs r ON a.run_id = r.id""")
    assert {w for w, *_ in attempts} == {"fast", "slow"}
    for _, point, when, _ in taken:
        needed = [a for a in attempts if a[1] < point]
        assert {w for w, *_ in needed} == {"fast", "slow"}
        assert len(needed) == 2 * 2 * point and all(a[4] == "done" and a[3] <= when for a in needed)
        assert all(a[2] >= when for a in attempts if a[1] >= point)  # no run past the point began before the look
    stopped = taken[-1][1]
    assert stopped < 30  # pooled, 20 values per arm at 10 runs per worker already decide d (one worker alone could not)
    not_needed = rows(out, "SELECT worker, COUNT(*) FROM runs WHERE status = 'not-needed' GROUP BY worker")
    assert sorted(not_needed) == [("fast", 2 * (30 - stopped)), ("slow", 2 * (30 - stopped))]
    doc = json.loads(stdout)
    assert doc["sequential"]["stopped_at_runs"] == stopped and doc["sequential"]["max_runs"] == 30
    assert "2 workers pooled" in doc["sequential"]["method"]
    assert "on each of 2 workers" in stderr.decode()


def test_a_worker_that_cannot_go_on_without_the_lost_one_did_not_finish(tmp_path: Path) -> None:
    # "w2"'s reset fails before its first run (it is lost); every link-order build fails on
    # "w1", so its runs are skipped. The first look (1 run per arm on each worker) has no pair of
    # runs to analyse and cannot be taken: w1 stops there, and the message says so.
    workers = "".join(f'[[worker]]\nname = "w{k}"\nkind = "command"\ntransport = ["env", "W={k}"]\npython = "{PYTHON}"\n'
                      for k in (1, 2))
    spec = write_spec(tmp_path, """
[experiment]
name = "held"
runs = 4
seed = 3
stop = "sequential"
looks = 4

[reset]
command = '[ "$W" != 2 ]'

[[test]]
name = "a"
command = "true"

[context]
variants = 2
link_order = {objects = ["x.o", "y.o"], build = '[ "$W" != 1 ] && echo {objects} > built.txt'}
""" + workers)
    proc = start_cli("run", str(spec), "-o", "out", cwd=tmp_path)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, stderr.decode()
    error = stderr.decode().strip().splitlines()[-1]
    assert error == ("benchsage: error: 1 of 2 workers lost (w2: worker w2: reset failed before run 1 (exit status 1)); "
                     "the other 1 did not finish (w1: 8 runs left; look 1 of 4 at 1 run per arm has no new pair of runs to "
                     "analyse without the missing ones); 0 finished runs (0 trials) are kept in out; "
                     "`benchsage resume out` continues exactly the missing runs")
    assert looks(tmp_path / "out") == []
    assert sorted(rows(tmp_path / "out", "SELECT worker, status, COUNT(*) FROM runs GROUP BY worker, status")) == [
        ("w1", "planned", 6), ("w1", "skipped", 2), ("w2", "failed", 1), ("w2", "planned", 7)]
