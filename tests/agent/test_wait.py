"""Waiting for a trial against real processes: timeouts that kill the whole group, pipes a
grandchild keeps open, bounded output tails, the clock, and an agent that blocks, never polls."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.agent.wait import NO_PIDFD_ENV, Tail
from benchsage.execute.local import LocalWorker
from benchsage.execute.worker import ProcessRequest

sys.path.insert(0, str(Path(__file__).parent))
from proctools import PYTHON38, gone, needs_python38  # noqa: E402
from proctools import trial as run  # noqa: E402


def test_timeout_kills_the_whole_group_including_a_grandchild(tmp_path: Path) -> None:
    r = run("sleep 30 & echo $! > grandchild.pid; sleep 30", tmp_path, timeout=0.5)
    assert r.timed_out and r.exit_status == -signal.SIGKILL and not r.ok
    assert 0.5 <= r.wall_time < 10
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    assert gone(grandchild)


def test_grandchild_holding_stdout_does_not_hang_the_controller(tmp_path: Path) -> None:
    r = run("(sleep 20; echo late) & echo $! > bg.pid; echo early", tmp_path, timeout=15)
    background = int((tmp_path / "bg.pid").read_text())
    try:
        # The controller returned while the background job still holds the pipe.
        assert not gone(background, within=0)
        assert r.stdout == b"early\n" and r.exit_status == 0 and not r.timed_out
    finally:
        os.kill(background, signal.SIGKILL)


def test_output_written_just_before_exit_is_kept(tmp_path: Path) -> None:
    r = run("head -c 200000 /dev/zero | tr '\\0' x; printf END", tmp_path)
    assert r.stdout.endswith(b"END") and len(r.stdout) == 200003


def test_tail_is_kept_and_dropped_bytes_counted(tmp_path: Path) -> None:
    r = run("seq 1 100000; seq 1 1000 >&2", tmp_path, output_limit=12)
    assert r.stdout == b"\n99999\n100000\n"[-12:]
    total = sum(len(f"{i}\n") for i in range(1, 100001))
    assert r.stdout_dropped == total - 12
    assert r.stderr == b"998\n999\n1000\n"[-12:]
    r0 = run("echo hello", tmp_path, output_limit=0)
    assert r0.stdout == b"" and r0.stdout_dropped == 6


@given(
    chunks=st.lists(st.binary(min_size=0, max_size=300), max_size=40),
    limit=st.integers(min_value=0, max_value=700),
)
@settings(max_examples=200, deadline=None)
def test_tail_property(chunks: list[bytes], limit: int) -> None:
    tail = Tail(limit)
    for c in chunks:
        tail.add(c)
    data = b"".join(chunks)
    kept, dropped = tail.result()
    expected = data[len(data) - min(limit, len(data)) :]
    assert kept == expected and dropped == len(data) - len(expected)


def test_huge_output_keeps_controller_memory_small(tmp_path: Path) -> None:
    # A separate interpreter so that its peak RSS is the capture's alone.
    script = textwrap.dedent(
        """
        import resource, sys
        from benchsage.agent.spawn import run_process
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        r = run_process("yes | head -c 300000000; printf END; yes e | head -c 50000000 >&2",
                        sys.argv[1], output_limit=1 << 20)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(base, peak, len(r["stdout"]), r["stdout_dropped"], len(r["stderr"]), r["stderr_dropped"],
              r["stdout"][-3:].decode(), r["exit_status"])
        """
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, check=True, timeout=120)
    base, peak, n_out, dropped_out, n_err, dropped_err, end, status = out.stdout.split()
    assert (int(n_out), int(dropped_out)) == (1 << 20, 300_000_003 - (1 << 20))
    assert (int(n_err), int(dropped_err)) == (1 << 20, 50_000_000 - (1 << 20))
    assert end == b"END" and status == b"0"
    # 350 MB went through; the controller grew by a few MiB of buffers at most.
    assert int(peak) - int(base) < 32 * 1024


def test_wall_time_and_epoch_times(tmp_path: Path) -> None:
    before = time.time()
    r = run("sleep 0.2", tmp_path)
    after = time.time()
    assert r.ok and 0.2 <= r.wall_time < 5
    # started and ended are the trial clock's, put on the wall clock at the trial's end: a step of the wall clock
    # meanwhile (this virtual machine's clock was once stepped 0.4 ms back during the trial) moves them with it.
    step = 0.005
    assert before - step <= r.started <= r.ended <= after + step
    assert r.ended - r.started >= 0.2


def test_controller_blocks_instead_of_polling(tmp_path: Path) -> None:
    cpu = time.process_time()
    r = run("sleep 2", tmp_path)
    spent = time.process_time() - cpu
    assert r.ok and r.wall_time >= 2
    assert spent < 0.05, f"controller used {spent * 1000:.1f} ms of CPU during a 2 s trial"


def test_interrupt_kills_the_trial_and_reraises(tmp_path: Path) -> None:
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(KeyboardInterrupt):
            run("sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; sleep 30", tmp_path)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert gone(int((tmp_path / "bg.pid").read_text()))
    assert gone(int((tmp_path / "sh.pid").read_text()))


def _catches_sigchld(pid: int) -> bool:
    """Whether process `pid` has a handler for SIGCHLD (its SigCgt mask, /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGCHLD - 1) & 1)
    raise AssertionError(f"no SigCgt line for pid {pid}")


@pytest.mark.parametrize("python", [
    pytest.param(sys.executable, id="this-python"),
    pytest.param(PYTHON38, id="python3.8", marks=needs_python38),
])
def test_without_pidfds_every_exit_is_heard_however_soon_it_comes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  python: str) -> None:
    # The agent waits through its SIGCHLD self-pipe, as on Python 3.8 or a kernel before 5.3.
    monkeypatch.setenv(NO_PIDFD_ENV, "1")
    with LocalWorker(python=[python]) as worker:
        agent = worker.connect()["pid"]
        assert _catches_sigchld(agent)  # installed before the agent's first child
        cwd = str(tmp_path)
        # Trials that are gone almost at once, one after another: none may be missed (a false
        # timeout, or an agent that hangs past the reply's deadline).
        for k in range(300):
            r = worker.run(ProcessRequest("/bin/true", cwd, timeout=20, trial=k % 3 == 0))
            assert r.ok and not r.timed_out and r.spawn == "exec" and r.wall_time < 10, (k, r)
        assert worker.run(ProcessRequest("exit 3", cwd, timeout=20)).exit_status == 3
        failed = worker.run(ProcessRequest("/bin/true", str(tmp_path / "missing"), timeout=20))
        assert failed.error is not None and "working directory" in failed.error
        assert worker.run(ProcessRequest("true", cwd, timeout=20)).ok  # right after a child that never started
        late = worker.run(ProcessRequest("sleep 5", cwd, timeout=0.3))
        assert late.timed_out and 0.3 <= late.wall_time < 5
        assert worker.run(ProcessRequest("echo done", cwd, timeout=20)).stdout == b"done\n"
