"""Sequential stopping on a fleet of real OpenSSH servers on 127.0.0.1: the looks analyse each
worker's share of the runs with boundaries at the runs they analysed; a worker that crashes
does not hold the others back, and the message of a lost worker says what the others did.

The tests make their own order effect, as tests/cli/test_sequential.py does: `d` is fast only
when `a` and `b` ran before it in that order (each appends its name to the host's trace file,
which the reset empties), which the fixed order always does and a random order one time in six.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from journalcheck import count, rows

from benchsage.stats.sequential import SequentialDesign

pytestmark = pytest.mark.timing  # decisions taken from measured times

TESTS = """
[[test]]
name = "a"
command = "sleep 0.02$(shuf -i 0-9 -n 1); printf a >> trace-$BENCHSAGE_FAKE_HOST"

[[test]]
name = "b"
command = "sleep 0.02$(shuf -i 0-9 -n 1); printf b >> trace-$BENCHSAGE_FAKE_HOST"

[[test]]
name = "d"
command = "if [ \\"$(cat trace-$BENCHSAGE_FAKE_HOST)\\" = ab ]; then sleep 0.005; else sleep 0.03; fi"
"""


def write_spec(tmp_path: Path, fleet, hosts: list[str], *, runs: int, looks: int, min_effect: float, reset: str) -> Path:
    workers = "".join(
        f'[[worker]]\nkind = "ssh"\nhost = "{h}"\nssh_config = "{fleet.ssh_config}"\n'
        f"boot_id = '{fleet.boot_id_command}'\nreconnect_timeout = 2\n"
        for h in hosts
    )
    text = (f'[experiment]\nname = "sequential-fleet"\nruns = {runs}\nseed = 5\nstop = "sequential"\nlooks = {looks}\n'
            f'min_effect = {min_effect}\n\n[reset]\ncommand = """{reset}"""\n\n{workers}{TESTS}')
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return path


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def looks(out: Path) -> list[tuple[int, dict]]:
    return [(n, json.loads(r)) for n, r in rows(out, "SELECT runs, record FROM looks ORDER BY id")]


def statuses(out: Path) -> dict[tuple[str, str], int]:
    return {(w, s): n for w, s, n in rows(out, "SELECT worker, status, COUNT(*) FROM runs GROUP BY worker, status")}


TRACE = ": > trace-$BENCHSAGE_FAKE_HOST"


@pytest.mark.slow
def test_a_look_analyses_each_workers_share_with_boundaries_at_those_runs(fake_fleet, tmp_path: Path) -> None:
    # 3 workers of 10 runs per arm, 4 looks: the plan's looks fall at 8, 15, 23, 30 runs per arm
    # over the fleet, each worker's share rounded down to 2, 5, 7, 10. A look thus analyses 6,
    # 15, 21, 30 runs per arm, and its boundaries are those of 6, 15, 21, 30 of 30 (those of
    # 8, 15, 23, 30 would put the family-wise error above alpha).
    fleet = fake_fleet(3)
    spec = write_spec(tmp_path, fleet, fleet.hosts, runs=10, looks=4, min_effect=25.0,
                      reset=TRACE + "; case $BENCHSAGE_FAKE_HOST in node2) sleep 0.05;; node3) sleep 0.1;; esac")
    done = bench("run", str(spec), "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    taken = looks(out)
    assert len(taken) >= 2  # nothing can be decided from 6 runs per arm
    fractions = (6 / 30, 15 / 30, 21 / 30, 30 / 30)
    design = SequentialDesign(30, 4)
    for k, (point, record) in enumerate(taken):
        assert point == (2, 5, 7, 10)[k] and record["runs"] == 3 * point and record["information"] == fractions[k]
        assert record["missing_runs"] == []
        assert all(t["n_fixed"] == t["n_random"] == 3 * point for t in record["tests"])
        assert all(t["critical"] == design.critical(3, information=fractions[: k + 1])[k] for t in record["tests"])
    assert taken[0][1]["tests"][0]["critical"] != design.critical(3)[0]  # not the planned look at 8
    # Every worker ran exactly up to the look that stopped it; the rest is not needed.
    stopped = taken[-1][0]
    assert taken[-1][1]["stop"] is True
    for host in fleet.hosts:
        assert statuses(out).get((host, "done")) == 2 * stopped
    doc = json.loads(done.stdout)
    assert [look["runs"] for look in doc["sequential"]["looks"]] == [p for p, _ in taken]
    assert doc["sequential"]["stopped_at_runs"] == stopped


@pytest.mark.slow
def test_a_crashed_worker_does_not_hold_the_others_back_and_the_decision_is_reported(fake_fleet, tmp_path: Path) -> None:
    # node3 goes down for good in its first reset; node1 and node2 carry on, and their 20 pairs
    # each decide every test at the first look (40 of 120 runs per arm: the boundaries of 1/3).
    fleet = fake_fleet(3)
    crash = f'if [ "$BENCHSAGE_FAKE_HOST" = node3 ]; then {fleet.reboot} --stay-down; sleep 30; fi'
    spec = write_spec(tmp_path, fleet, fleet.hosts, runs=40, looks=2, min_effect=25.0, reset=f"{TRACE}; {crash}")
    done = bench("run", str(spec), "-o", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("benchsage: error: 1 of 3 workers lost (node3: worker node3: lost during run 1: ")
    assert ("; the other 2 stopped when every test was decided at look 1 of 2 (20 runs per arm), so the runs not carried "
            "out are not needed; 80 finished runs (240 trials) are kept in out; `benchsage analyze out` reports the result") in error
    out = tmp_path / "out"
    (point, record), = looks(out)
    assert point == 20 and record["runs"] == 40 and record["information"] == 40 / 120 and record["stop"] is True
    assert record["decided"] == 3 and {t["decided"] for t in record["tests"] if t["test"][0] == "d"} == {"effect"}
    assert sorted(record["missing_runs"]) == [r for (r,) in rows(out, "SELECT id FROM runs WHERE worker = 'node3' AND arm_index < 20")]
    assert "without 40 runs of node3 (lost)" in done.stderr
    assert statuses(out) == {("node1", "done"): 40, ("node1", "not-needed"): 40, ("node2", "done"): 40,
                             ("node2", "not-needed"): 40, ("node3", "not-needed"): 80}
    # Nothing is left to carry out: resume finds the experiment decided, with node3 back or not.
    fleet.boot("node3")
    again = bench("resume", "out", "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert rows(out, "SELECT COUNT(*) FROM attempts WHERE worker = 'node3'") == [(1,)]
    assert json.loads(again.stdout)["sequential"]["stopped_at_runs"] == 20


@pytest.mark.slow
def test_the_others_finish_and_the_last_look_waits_for_the_crashed_worker(fake_fleet, tmp_path: Path) -> None:
    # No order effect and a margin nobody can show: nothing is decided before the last look.
    # node2 goes down for good in its 13th reset (run 7 of an arm), after the first look at 5.
    fleet = fake_fleet(2)
    crash = (f'n=$(cat count-$BENCHSAGE_FAKE_HOST 2>/dev/null || echo 0); echo $((n + 1)) > count-$BENCHSAGE_FAKE_HOST; '
             f'if [ "$BENCHSAGE_FAKE_HOST" = node2 ] && [ "$n" -ge 12 ] && [ ! -e fixed ]; then {fleet.reboot} --stay-down; sleep 30; fi')
    spec = write_spec(tmp_path, fleet, fleet.hosts, runs=10, looks=2, min_effect=0.001, reset=f"{TRACE}; {crash}")
    spec.write_text(spec.read_text().replace('then sleep 0.005; else sleep 0.03; fi', 'then sleep 0.03; else sleep 0.03; fi'))
    done = bench("run", str(spec), "-o", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("benchsage: error: 1 of 2 workers lost (node2: worker node2: lost during run 13: ")
    assert ("; the other 1 finished, and the last look waits for the runs node2 did not carry out; 32 finished runs "
            "(96 trials) are kept in out; `benchsage resume out` continues exactly the missing runs") in error
    out = tmp_path / "out"
    assert [(p, r["runs"], r["stop"]) for p, r in looks(out)] == [(5, 10, False)]
    assert statuses(out) == {("node1", "done"): 20, ("node2", "done"): 12, ("node2", "failed"): 1, ("node2", "planned"): 7}
    # Back up and no longer crashing: resume carries out node2's 8 runs, then the last look.
    fleet.boot("node2")
    (tmp_path / "fixed").write_text("")
    again = bench("resume", "out", "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert [(p, r["runs"], r["information"], r["stop"]) for p, r in looks(out)] == [(5, 10, 0.5, False), (10, 20, 1.0, True)]
    assert statuses(out) == {("node1", "done"): 20, ("node2", "done"): 20}
    assert json.loads(again.stdout)["sequential"]["stopped_at_runs"] == 10


@pytest.mark.slow
def test_a_worker_that_reconnects_is_waited_for_at_a_look(fake_fleet, tmp_path: Path) -> None:
    # node2's host goes down in the middle of its first run and is back once node1 has reached
    # the first look point (3 runs per arm), within node2's reconnect timeout; node1 waits there
    # for node2's runs instead of stopping. Nothing can be decided (a margin of 0.001 %).
    fleet = fake_fleet(2)
    spec = write_spec(tmp_path, fleet, fleet.hosts, runs=6, looks=2, min_effect=0.001, reset=TRACE)
    spec.write_text(spec.read_text().replace("reconnect_timeout = 2", "reconnect_timeout = 30")
                    .replace("sleep 0.02$(", "sleep 0.3$("))
    proc = subprocess.Popen([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out", "--quiet"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    out = tmp_path / "out"
    deadline = time.monotonic() + 60
    while count(out, "SELECT COUNT(*) FROM trials WHERE worker = 'node2'") < 1:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    time.sleep(0.1)  # inside node2's second trial (b, 0.3 s and more)
    fleet.crash("node2")
    node1_done = "SELECT COUNT(*) FROM runs WHERE worker = 'node1' AND status = 'done'"
    while count(out, node1_done) < 6:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    time.sleep(1)  # time for another run of node1 (about 0.7 s), had it not waited
    assert count(out, node1_done) == 6  # at the look point
    fleet.boot("node2")
    _, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 0, stderr
    assert "worker node2: " in stderr and "reconnecting" in stderr
    assert statuses(out) == {("node1", "done"): 12, ("node2", "done"): 12}
    assert [(p, r["runs"], r["stop"]) for p, r in looks(out)] == [(3, 6, False), (6, 12, True)]
