"""Ctrl-C while a worker's connection is being started (in a reconnect, or after a reboot) and
while a worker waits for a sequential look: `benchsage run` exits within seconds, keeps every
finished trial, and `benchsage resume` finishes the rest.

The worker is a `command` transport on this machine. Its first connection carries the agent;
a trial of the first run kills that agent (the connection is lost), and the transport's second
connection stalls: it writes a hand-shake file and sleeps instead of starting the agent. The
test sends SIGINT once that file exists; later connections start the agent again, so that
`resume` can finish.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXIT_BOUND = 15.0  # seconds from SIGINT to exit; benchsage promises 5, the margin is for a busy machine
STALL = 300  # seconds the stalled connection would wait: far past the hello timeout (60 s)


def transport(folder: Path, name: str, stall: bool) -> list[str]:
    """With `stall`, connection 2 of worker `name` stalls (after writing `stalled-NAME`); the
    others start the agent, whose pid they leave in `agent-NAME.pid`."""
    script = (
        f'cd {folder} && n=$(cat connects-{name} 2>/dev/null || echo 0); n=$((n+1)); echo $n > connects-{name}; '
        + (f'if [ "$n" -eq 2 ]; then echo $$ > stalled-{name}; sleep {STALL}; exit 1; fi; ' if stall else '')
        + f'echo $$ > agent-{name}.pid; exec "$@"'
    )
    return ["sh", "-c", script, "transport"]


@pytest.fixture(autouse=True)
def no_stalled_transport_left(tmp_path: Path):
    """A failing test leaves no stalled transport behind (its process group holds the sleep)."""
    yield
    for stalled in tmp_path.glob("stalled-*"):
        try:
            os.killpg(int(stalled.read_text()), signal.SIGKILL)
        except (ValueError, ProcessLookupError, PermissionError):
            pass


def worker(folder: Path, name: str, stall: bool = True) -> str:
    return (f'[[worker]]\nname = "{name}"\nkind = "command"\ntransport = {json.dumps(transport(folder, name, stall))}\n'
            f'python = "{sys.executable}"\nreconnect_timeout = {STALL}\n')


# The first time it runs (on the worker whose agent it may kill), it kills that agent.
DROP = '[[test]]\nname = "drop"\ncommand = "[ -e dropped ] || {{ : > dropped; kill -9 $(cat agent-{name}.pid); }}"\n'
QUICK = '[[test]]\nname = "quick"\ncommand = "true"\n'


def start(*args: str, cwd: Path) -> subprocess.Popen:
    # PYTHONFAULTHANDLER: a run that does not exit in time is ended with SIGABRT, and the
    # failure shows where each of its threads was.
    return subprocess.Popen([sys.executable, "-m", "benchsage", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONFAULTHANDLER": "1"})


def wait_for(predicate, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"benchsage exited ({proc.returncode}) first: {proc.stderr.read().decode()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the state to interrupt was not reached in time")
        time.sleep(0.02)


def query(out: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{out / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def interrupt(proc: subprocess.Popen, times: int = 1) -> tuple[float, str]:
    """SIGINT (`times` in a row, as an impatient user does), then the seconds until the process
    exited and its stderr."""
    sent = time.monotonic()
    for _ in range(times):
        proc.send_signal(signal.SIGINT)
    try:
        _, stderr = proc.communicate(timeout=EXIT_BOUND)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            _, stderr = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, stderr = proc.communicate()
        raise AssertionError(f"benchsage run did not exit within {EXIT_BOUND:g} s of SIGINT; its threads:\n"
                             f"{stderr.decode(errors='replace')[-6000:]}") from None
    elapsed = time.monotonic() - sent
    print(f"SIGINT to exit: {elapsed:.2f} s")
    return elapsed, stderr.decode()


def check_interrupted(stderr: str, status: int, again: bool = False) -> None:
    assert "Traceback" not in stderr
    errors = [line for line in stderr.strip().splitlines() if line.startswith("benchsage: error:")]
    if again and status == 130:  # the second Ctrl-C came after the workers had stopped, while the CLI exits
        assert errors == ["benchsage: error: aborted"], stderr
        return
    assert status == 3, stderr  # README: 3, the experiment could not finish; what was measured is kept
    assert len(errors) == 1 and "interrupted" in errors[0] and "benchsage resume" in errors[0], stderr


def finished_trials(out: Path) -> set[tuple[int, int]]:
    """(run, test) of every trial of a finished attempt."""
    return set(query(out, "SELECT t.run_id, t.test_id FROM trials t JOIN attempts a ON a.id = t.attempt_id "
                          "WHERE a.status = 'done'"))


@pytest.mark.parametrize("reset", ["command", "reboot"])
def test_ctrl_c_while_a_connection_is_being_started(tmp_path: Path, reset: str) -> None:
    """command: the agent is lost during run 1 and the reconnect stalls. reboot: the reset of
    run 1 reboots (a new boot id in a file) and the connection after it stalls."""
    if reset == "command":
        spec = ('[experiment]\nname = "stall"\nruns = 2\nseed = 3\n' + worker(tmp_path, "w")
                + DROP.format(name="w") + QUICK)
    else:
        spec = ('[experiment]\nname = "stall"\nruns = 2\nseed = 3\n' + worker(tmp_path, "w")
                + f"boot_id = 'cat {tmp_path}/boot'\n"
                + f'[reset]\nkind = "reboot"\ncommand = "date +%s%N > {tmp_path}/boot"\ntimeout = {STALL}\n'
                + QUICK + '[[test]]\nname = "other"\ncommand = "true"\n')
        (tmp_path / "boot").write_text("first\n")
    (tmp_path / "experiment.toml").write_text(spec)
    out = tmp_path / "out"
    proc = start("run", "experiment.toml", "-o", str(out), "--quiet", cwd=tmp_path)
    wait_for(lambda: (tmp_path / "stalled-w").exists(), proc)
    twice = reset == "command"  # and a second Ctrl-C at once: no traceback
    elapsed, stderr = interrupt(proc, times=2 if twice else 1)
    check_interrupted(stderr, proc.returncode, again=twice)
    assert elapsed < EXIT_BOUND
    kept = finished_trials(out)
    assert query(out, "SELECT COUNT(*) FROM trials WHERE attempt_id IN (SELECT id FROM attempts WHERE status = 'done')")[0][0] == len(kept)

    resumed = start("resume", str(out), "--quiet", "--json", cwd=tmp_path)
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err.decode()
    after = finished_trials(out)
    assert kept <= after and len(after) == 4 * 2  # 4 runs, 2 tests: every run done once, nothing lost
    assert query(out, "SELECT COUNT(*) FROM runs WHERE status = 'done'")[0][0] == 4


def test_ctrl_c_while_a_worker_waits_for_a_sequential_look(tmp_path: Path) -> None:
    """Worker `steady` finishes every run below the first look and waits there for the runs of
    `flaky`, whose agent was lost in its first run and whose reconnect stalls."""
    spec = ('[experiment]\nname = "stall-look"\nruns = 10\nseed = 4\nstop = "sequential"\nlooks = 2\nmin_effect = 50.0\n'
            + worker(tmp_path, "steady", stall=False) + worker(tmp_path, "flaky")
            + '[[test]]\nname = "drop"\ncommand = "[ -e dropped ] || [ ! -e agent-flaky.pid ] || '
              '{ : > dropped; kill -9 $(cat agent-flaky.pid); }"\n'
            + QUICK)
    # Only flaky's agent is killed, by whichever worker runs `drop` first once it is up.
    (tmp_path / "experiment.toml").write_text(spec)
    out = tmp_path / "out"
    proc = start("run", "experiment.toml", "-o", str(out), "--quiet", cwd=tmp_path)

    def steady_waits() -> bool:
        if not (tmp_path / "stalled-flaky").exists() or not (out / "journal.sqlite").exists():
            return False
        try:  # the 5 pairs of runs below the first look (5 runs per arm) are done
            return query(out, "SELECT COUNT(*) FROM runs WHERE worker = 'steady' AND status = 'done'")[0][0] >= 10
        except sqlite3.Error:
            return False

    wait_for(steady_waits, proc)
    assert query(out, "SELECT COUNT(*) FROM looks")[0][0] == 0  # the look waits for flaky's runs
    elapsed, stderr = interrupt(proc)
    check_interrupted(stderr, proc.returncode)
    kept = finished_trials(out)
    assert len(kept) >= 20

    resumed = start("resume", str(out), "--quiet", "--json", cwd=tmp_path)
    _, err = resumed.communicate(timeout=180)
    assert resumed.returncode == 0, err.decode()
    after = finished_trials(out)
    assert kept <= after
    statuses = dict(query(out, "SELECT status, COUNT(*) FROM runs GROUP BY status"))
    assert set(statuses) <= {"done", "not-needed"} and sum(statuses.values()) == 40, statuses
    assert len(after) == 2 * statuses["done"]  # every run carried out has both trials, once
