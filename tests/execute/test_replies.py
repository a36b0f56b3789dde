"""The controller against a hostile agent: a real `benchsage run` whose second worker's agent is
the real one behind a proxy (evil_agent.py) that tampers with one reply. Whatever the reply,
that worker is lost with one line naming it and what was wrong, the other worker finishes,
the run exits 3 without a traceback, and what was measured before the bad reply is kept.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from childpeak import measured, outcome  # noqa: E402

EVIL = Path(__file__).with_name("evil_agent.py")
PYTHON = sys.executable
OUTPUT_LIMIT = 1024  # the smallest the spec allows: the line caps below are derived from it

SPEC = f"""
[experiment]
name = "replies"
runs = 2
seed = 1
output_limit = {OUTPUT_LIMIT}
{{pinned}}

[reset]
command = "true"

[[test]]
name = "a"
command = "echo 1"

[[test]]
name = "b"
command = "true"

[[worker]]
name = "good"
kind = "command"
transport = ["env", "W=good"]
python = "{PYTHON}"

[[worker]]
name = "evil"
kind = "command"
transport = {{transport}}
python = "{PYTHON}"
"""

RUNS = 4  # per worker: 2 per arm
TRIALS = 2  # per run


def start(tmp_path: Path, *evil: str, pinned: str = "") -> subprocess.Popen:
    """`benchsage run` with the evil worker doing `evil`; its own peak RSS is recorded for
    `peak_rss_kib` (tests/childpeak.py)."""
    transport = json.dumps([PYTHON, str(EVIL), *evil, "--"])
    (tmp_path / "spec.toml").write_text(SPEC.format(transport=transport, pinned=pinned))
    command = measured([sys.executable, "-m", "benchsage", "run", "spec.toml", "-o", "out", "--quiet"], tmp_path / "usage")
    return subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def experiment(tmp_path: Path, *evil: str, pinned: str = "") -> tuple[int, str]:
    """(exit status, stderr) of `benchsage run` with the evil worker doing `evil`."""
    proc = start(tmp_path, *evil, pinned=pinned)
    _, stderr = proc.communicate(timeout=300)
    return proc.returncode, stderr.decode()


def done(tmp_path: Path) -> dict[str, tuple[int, int]]:
    """worker -> (finished runs, their trials) in the journal."""
    conn = sqlite3.connect(f"file:{tmp_path / 'out' / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        runs = dict(conn.execute("SELECT worker, COUNT(*) FROM runs WHERE status = 'done' GROUP BY worker").fetchall())
        trials = dict(conn.execute("""SELECT t.worker, COUNT(*) FROM trials t JOIN attempts a ON a.id = t.attempt_id
                                      WHERE a.status = 'done' GROUP BY t.worker""").fetchall())
    finally:
        conn.close()
    return {w: (runs.get(w, 0), trials.get(w, 0)) for w in ("good", "evil")}


def lost_line(status: int, stderr: str) -> str:
    """The one error line of a run in which a worker was lost (exit 3, no traceback)."""
    assert status == 3, stderr
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("benchsage: error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def lost_at_trial_5(tmp_path: Path, problem: str, *evil: str) -> None:
    """The evil worker's 5th trial (the first of its 3rd run) gets a bad reply: it is lost
    saying `problem`, its 2 runs before are kept, the good worker finishes."""
    status, stderr = experiment(tmp_path, "--on", "trial:5", *evil)
    line = lost_line(status, stderr)
    assert f"1 of 2 workers lost (evil: worker evil: {problem}); the other 1 finished" in line, line
    assert done(tmp_path) == {"good": (RUNS, RUNS * TRIALS), "evil": (2, 2 * TRIALS)}


def test_a_result_with_an_exit_status_of_another_type(tmp_path: Path) -> None:
    lost_at_trial_5(tmp_path, "the agent's reply to 'run' has 'exit_status' = 'x', expected an integer",
                    "--set", 'result.exit_status="x"')


def test_a_result_without_its_wall_time(tmp_path: Path) -> None:
    lost_at_trial_5(tmp_path, "the agent's reply to 'run' has no 'wall_time'", "--del", "result.wall_time")


def test_a_result_whose_wall_time_is_not_a_number(tmp_path: Path) -> None:
    lost_at_trial_5(tmp_path, "the agent's reply to 'run' has 'wall_time' = NaN, expected a finite number of seconds",
                    "--set", "result.wall_time=NaN")


def test_a_result_with_more_output_than_output_limit(tmp_path: Path) -> None:
    lost_at_trial_5(tmp_path, f"the agent's reply to 'run' has 'stdout' of 2000 bytes, more than output_limit ({OUTPUT_LIMIT})",
                    "--stdout", "2000")


def test_a_reply_that_answers_another_request(tmp_path: Path) -> None:
    # The protocol has one request in flight: a reply is paired with its request by its shape.
    lost_at_trial_5(tmp_path, "the agent's reply to 'run' has no 'result' (it holds 'pong')", "--replace", '{"pong": 1.5}')


def test_a_reply_nobody_asked_for(tmp_path: Path) -> None:
    # One reply too many after trial 4: the request for trial 5 finds it waiting.
    status, stderr = experiment(tmp_path, "--on", "trial:4", "--extra", '{"pong": 1.5}')
    line = lost_line(status, stderr)
    assert "1 of 2 workers lost (evil: worker evil: the agent sent a line nobody asked for ('{\"pong\": 1.5}'); connection dropped)" in line, line
    assert done(tmp_path) == {"good": (RUNS, RUNS * TRIALS), "evil": (2, 2 * TRIALS)}


def test_a_result_line_without_end(tmp_path: Path) -> None:
    """A result that never ends is cut at the line cap a result can reach with output_limit
    (two full output tails in base64 and the rest), not read until memory runs out."""
    from benchsage.execute.replies import result_limit

    count = tmp_path / "sent"
    status, stderr = experiment(tmp_path, "--on", "trial:5", "--endless", '{"result": {"stdout": "', "--count", str(count))
    line = lost_line(status, stderr)
    cap = result_limit(OUTPUT_LIMIT, ())
    assert f"(evil: worker evil: the agent's reply to 'run' is longer than {cap} bytes; connection dropped)" in line, line
    assert done(tmp_path) == {"good": (RUNS, RUNS * TRIALS), "evil": (2, 2 * TRIALS)}
    assert cap < int(count.read_text()) < cap + (4 << 20)  # the controller stopped reading at the cap (pipes hold the rest)


def test_a_hello_with_text_where_a_list_of_cpus_belongs(tmp_path: Path) -> None:
    status, stderr = experiment(tmp_path, "--set", 'hello.measurement.cpus_online="0-3"', pinned='cpus = "0"')
    line = lost_line(status, stderr)
    assert line == ("benchsage: error: worker evil: the agent's hello has 'measurement.cpus_online' = '0-3', expected a "
                    "list of CPU numbers; nothing ran"), line


def peak_rss_kib(proc: subprocess.Popen, tmp_path: Path) -> int:
    """The peak RSS of the controller `start` began (it and what it waited for), once it ended."""
    proc.wait(timeout=300)
    return outcome(tmp_path / "usage")[1]


def test_a_hello_without_end_is_cut_at_its_cap_in_bounded_memory(tmp_path: Path) -> None:
    """An agent that streams its hello without end: the controller gives up at the hello's cap
    (no waiting for the hello's timeout), and its memory stays where a controller whose
    transport fails at once has it."""
    from benchsage.execute.replies import HELLO_LIMIT

    quiet = start(tmp_path, "--silent")
    baseline = peak_rss_kib(quiet, tmp_path)
    quiet.communicate()
    count = tmp_path / "sent"
    proc = start(tmp_path, "--endless", '{"benchsage-agent": 1, "hello": {"host": "', "--count", str(count))
    peak = peak_rss_kib(proc, tmp_path)
    _, stderr = proc.communicate()
    line = lost_line(3, stderr.decode())
    assert f"worker evil: a line of more than {HELLO_LIMIT} bytes where the agent's hello belongs" in line, line
    assert peak < baseline + 16 * 1024, (peak, baseline)
    assert HELLO_LIMIT < int(count.read_text()) < HELLO_LIMIT + (4 << 20)


@pytest.mark.parametrize("on, change, problem", [
    ("snapshot:3", ["--set", "snapshot.boot_id=5"], "the agent's reply to 'snapshot' has 'snapshot.boot_id' = 5, expected text"),
    ("snapshot:3", ["--set", "snapshot.load_average=[1, Infinity]"],
     "the agent's reply to 'snapshot' has 'snapshot.load_average[1]' = Infinity, expected a finite number"),
])
def test_a_snapshot_of_the_wrong_shape(tmp_path: Path, on: str, change: list[str], problem: str) -> None:
    """The 3rd run's snapshot is bad: the worker is lost before its 3rd run measures anything."""
    status, stderr = experiment(tmp_path, "--on", on, *change)
    line = lost_line(status, stderr)
    assert f"1 of 2 workers lost (evil: worker evil: {problem}); the other 1 finished" in line, line
    assert done(tmp_path) == {"good": (RUNS, RUNS * TRIALS), "evil": (2, 2 * TRIALS)}


def test_a_collectors_value_that_is_not_a_number_loses_the_group(tmp_path: Path) -> None:
    """A worker with roles: the server's agent closes the 5th trial's window with NaN for its
    collector. The group (pair1) is lost naming its server's host; its 2 runs before are kept."""
    transport = json.dumps([PYTHON, str(EVIL), "--on", "window:10", "--set", "values.busy=NaN", "--"])
    (tmp_path / "spec.toml").write_text(f"""
[experiment]
name = "roles"
runs = 2
seed = 1

[[test]]
name = "a"
command = "echo 1"
role = "client"

[[test]]
name = "b"
command = "true"
role = "client"

[[collector]]
name = "busy"
role = "server"
kind = "cpu"

[[worker]]
name = "pair1"
[worker.roles.server]
kind = "command"
transport = {transport}
python = "{PYTHON}"
[worker.roles.client]
kind = "local"
python = "{PYTHON}"
""")
    proc = subprocess.run([sys.executable, "-m", "benchsage", "run", "spec.toml", "-o", "out", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    line = lost_line(proc.returncode, proc.stderr)
    assert ("worker pair1/server: the agent's reply to 'window' has 'values.busy' = NaN, expected a finite number; "
            "2 finished runs (4 trials) are kept in out") in line, line


def test_what_a_host_prints_on_stderr_reaches_the_message_without_acting_on_the_terminal(tmp_path: Path) -> None:
    """A transport that fails printing an escape sequence (clear the screen) and a carriage
    return: the one error line names them as escapes."""
    (tmp_path / "spec.toml").write_text(SPEC.format(
        pinned="", transport=json.dumps(["sh", "-c", r"printf 'over\r\033[2Jboom\n' >&2; exit 1", "--"])))
    proc = subprocess.run([sys.executable, "-m", "benchsage", "run", "spec.toml", "-o", "out", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    line = lost_line(proc.returncode, proc.stderr)
    assert "\x1b" not in proc.stderr and "\r" not in proc.stderr
    assert "worker evil: the agent did not start on sh -c" in line and "(over\\r\\x1b[2Jboom); nothing ran" in line, line


def test_a_bad_reply_to_the_init_loses_the_worker_before_its_first_run(tmp_path: Path) -> None:
    transport = json.dumps([PYTHON, str(EVIL), "--on", "run:1", "--set", 'result.exit_status="x"', "--"])
    (tmp_path / "spec.toml").write_text(SPEC.format(pinned="", transport=transport) + '\n[init]\ncommand = "true"\n')
    proc = subprocess.run([sys.executable, "-m", "benchsage", "run", "spec.toml", "-o", "out", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    line = lost_line(proc.returncode, proc.stderr)
    assert ("1 of 2 workers lost (evil: worker evil: the agent's reply to 'run' has 'exit_status' = 'x', expected an integer); "
            "the other 1 finished") in line, line
    assert done(tmp_path) == {"good": (RUNS, RUNS * TRIALS), "evil": (0, 0)}
