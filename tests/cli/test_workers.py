"""Several workers on this machine through the `command` transport (any argv that runs a
command with stdin and stdout connected): the plan shows every worker, and what `run` records
is exactly that plan."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

PYTHON = shutil.which("python3") or sys.executable

SPEC = f"""
[experiment]
name = "workers"
runs = 3
seed = 11

[[worker]]
name = "via-env"
kind = "command"
transport = ["env", "BENCHSAGE_VIA=env"]
python = "{PYTHON}"

[[worker]]
name = "via-sh"
kind = "command"
transport = ["sh", "-c", "BENCHSAGE_VIA=sh exec \\"$@\\"", "transport"]
python = "{PYTHON}"

[[test]]
name = "where"
command = "echo \\"via: $BENCHSAGE_VIA\\" > via-$BENCHSAGE_VIA"

[[test]]
name = "quick"
command = "true"

[[test]]
name = "third"
command = "sleep 0.001"
"""


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_plan_shows_every_worker_and_run_carries_it_out(tmp_path: Path) -> None:
    spec = tmp_path / "experiment.toml"
    spec.write_text(SPEC)
    planned = bench("plan", str(spec), "--json", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    doc = json.loads(planned.stdout)
    assert [(w["name"], w["kind"]) for w in doc["workers"]] == [("via-env", "command"), ("via-sh", "command")]
    assert doc["total_runs"] == 12 and doc["total_trials"] == 36
    text = bench("plan", str(spec), cwd=tmp_path).stdout
    assert "2 workers" in text and "via-env" in text and "sh -c" in text and "in parallel" in text

    done = bench("run", str(spec), "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # Each transport really carried the agent: the test saw the variable its transport set.
    assert (tmp_path / "via-env").read_text() == "via: env\n" and (tmp_path / "via-sh").read_text() == "via: sh\n"
    conn = sqlite3.connect(tmp_path / "out" / "journal.sqlite")
    try:
        recorded = conn.execute("SELECT worker, arm, test_order FROM runs ORDER BY worker, id").fetchall()
        names = [t for (t,) in conn.execute("SELECT name FROM tests ORDER BY id")]
        spawns = {s for (s,) in conn.execute("SELECT DISTINCT spawn FROM trials")}
    finally:
        conn.close()
    for w in doc["workers"]:
        runs = [(arm, [names[i] for i in json.loads(order)]) for worker, arm, order in recorded if worker == w["name"]]
        assert runs == [(r["arm"], r["order"]) for r in w["runs"]]
    # The two workers drew different random orders from the one experiment seed.
    assert [r["order"] for r in doc["workers"][0]["runs"]] != [r["order"] for r in doc["workers"][1]["runs"]]
    assert spawns == {"shell", "exec"}


def test_a_transport_that_cannot_start_is_one_line_exit_2(tmp_path: Path) -> None:
    spec = tmp_path / "experiment.toml"
    spec.write_text(SPEC.replace('transport = ["env", "BENCHSAGE_VIA=env"]', 'transport = ["no-such-transport-program"]'))
    done = bench("run", str(spec), "-o", "out", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "worker via-env" in lines[0] and "no-such-transport-program" in lines[0]
    assert not (tmp_path / "out" / "journal.sqlite").exists()  # nothing ran, nothing half-written


def test_a_host_that_does_not_reboot_is_said_so_when_the_last_reconnect_runs_out_of_time(tmp_path: Path) -> None:
    """The reboot command exits 0 and the host stays up with its boot id; the reconnect attempt
    still going when the reset's time runs out (here: its transport stalls from the third
    connection on) is cut short by the deadline, which proves nothing about the host."""
    spec = tmp_path / "experiment.toml"
    stall = 'n=$(cat connects 2>/dev/null || echo 0); n=$((n+1)); echo $n > connects; [ "$n" -lt 3 ] || sleep 30; exec "$@"'
    spec.write_text(
        '[experiment]\nname = "no-reboot"\nruns = 1\nseed = 1\n'
        f'[[worker]]\nname = "stuck"\nkind = "command"\ntransport = ["sh", "-c", {json.dumps(stall)}, "transport"]\n'
        f'python = "{PYTHON}"\n'
        '[reset]\nkind = "reboot"\ncommand = "true"\ntimeout = 4\n'
        '[[test]]\nname = "quick"\ncommand = "true"\n'
    )
    done = bench("run", str(spec), "-o", "out", "--quiet", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert int((tmp_path / "connects").read_text()) >= 3  # the stalled attempt happened
    assert "the host did not reboot before run 1: it still answered with boot id" in done.stderr
    assert "the reboot command `true` exited 0" in done.stderr


def test_a_fleet_is_planned_before_it_exists_and_run_says_what_is_missing(tmp_path: Path) -> None:
    """The fleet example's ssh_config is written when its fake fleet starts: `plan` works before,
    and says what `run` will check; `run` stops on the missing file, one line, exit 2."""
    example = Path(__file__).resolve().parents[2] / "examples" / "fleet" / "experiment.toml"
    spec = tmp_path / "experiment.toml"
    spec.write_text(example.read_text())
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "fleet"]):
        subprocess.run(["git", *argv], cwd=tmp_path, check=True, capture_output=True)  # it deploys its commit
    planned = bench("plan", str(spec), cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    text = " ".join(planned.stdout.split())
    assert "`run` connects to every worker first (ssh node1, ssh node2, ssh node3)" in text
    assert text.count("`run` needs it") == 3
    doc = json.loads(bench("plan", str(spec), "--json", cwd=tmp_path).stdout)
    assert len(doc["run_checks"]) == 4 and doc["total_runs"] == 30
    assert doc["run_checks"][1] == (f"experiment.toml: [[worker]] #1: ssh_config '{tmp_path / 'fleet' / 'ssh_config'}' "
                                    "is not a file: `run` needs it")

    done = bench("run", str(spec), "-o", "out", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0] == (f"benchsage: error: experiment.toml: [[worker]] #1: ssh_config "
                                            f"'{tmp_path / 'fleet' / 'ssh_config'}' is not a file")
    assert not (tmp_path / "out").exists()
