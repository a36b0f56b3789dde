"""The agent's trial capture against real processes: statuses, signals, timeouts, bounded output,
rusage, direct exec; and the agent as a process: bootstrap, old interpreters, controller gone."""

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

from benchsage.errors import WorkerSetupError
from benchsage.execute import agent
from benchsage.execute.agent import Tail as _Tail
from benchsage.execute.agent import plan_spawn, run_process
from benchsage.execute.local import LocalWorker
from benchsage.execute.worker import ProcessRequest, ProcessResult

sys.path.insert(0, str(Path(__file__).parent))
from proctools import gone  # noqa: E402


def run(command: str, cwd: Path, **kw: object) -> ProcessResult:
    """The agent's own capture function, in this process (the agent runs the same code)."""
    result = run_process(command, str(cwd), **kw)  # type: ignore[arg-type]
    return ProcessResult(**result)



def test_exit_status_and_streams(tmp_path: Path) -> None:
    r = run("echo out; echo err >&2; exit 3", tmp_path)
    assert r.exit_status == 3 and not r.timed_out and r.error is None
    assert r.stdout == b"out\n" and r.stderr == b"err\n"
    assert r.stdout_dropped == 0 and r.stderr_dropped == 0
    assert not r.ok
    assert run("true", tmp_path).ok


def test_killed_by_signal_gives_negative_status(tmp_path: Path) -> None:
    assert run("kill -TERM $$", tmp_path).exit_status == -signal.SIGTERM
    assert run("kill -KILL $$", tmp_path).exit_status == -signal.SIGKILL


def test_command_runs_as_written_in_cwd_with_added_env(tmp_path: Path) -> None:
    r = run('printf "%s|%s|%s" "$(pwd)" "$BENCHSAGE_X" "${PATH:+has-path}"', tmp_path, env={"BENCHSAGE_X": "a b'c"})
    assert r.stdout.decode() == f"{tmp_path}|a b'c|has-path"


def test_stdin_is_dev_null(tmp_path: Path) -> None:
    r = run("cat; echo done", tmp_path, timeout=10)
    assert r.stdout == b"done\n" and not r.timed_out


def test_trial_runs_in_its_own_process_group(tmp_path: Path) -> None:
    r = run("cut -d' ' -f5 /proc/$$/stat; echo $$", tmp_path)  # field 5: the process group
    pgid, pid = r.stdout.split()
    assert pgid == pid
    assert int(pgid) != os.getpgrp()


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
    tail = _Tail(limit)
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
        from benchsage.execute.agent import run_process
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


def test_rusage_of_a_cpu_burning_child(tmp_path: Path) -> None:
    # Arithmetic between rare clock reads, so that the time is user time, not system time.
    burn = (
        f"{sys.executable} -c 'import time\nx = 0\nwhile time.process_time() < 0.4:\n"
        f"    for i in range(100000): x += i'"
    )
    r = run(burn, tmp_path)
    assert r.ok and r.user_time > 0.2 and r.sys_time >= 0
    assert r.wall_time >= r.user_time * 0.9


def test_rusage_max_rss_of_a_200_mb_child(tmp_path: Path) -> None:
    r = run(f"{sys.executable} -c 'b = b\"x\" * (200 << 20)'", tmp_path)
    assert r.ok and r.max_rss > 200_000


def test_wall_time_and_epoch_times(tmp_path: Path) -> None:
    before = time.time()
    r = run("sleep 0.2", tmp_path)
    after = time.time()
    assert r.ok and 0.2 <= r.wall_time < 5
    assert before <= r.started <= r.ended <= after
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


def test_collects_results_files(tmp_path: Path) -> None:
    r = run("echo 42 > results.txt; mkdir -p sub; printf 1 > sub/r", tmp_path, collect=("results.txt", "sub/r", "missing.txt"))
    assert dict(r.files) == {"results.txt": b"42\n", "sub/r": b"1", "missing.txt": None}


def test_a_command_that_cannot_start_is_reported_not_raised(tmp_path: Path) -> None:
    r = run("true", tmp_path / "does-not-exist")
    assert r.error is not None and "does-not-exist" in r.error
    assert r.exit_status is None and not r.ok
    bad_env = run("true", tmp_path, env={"A": "x\0y"})
    assert bad_env.error is not None


def test_no_children_are_left_behind(tmp_path: Path) -> None:
    # In a fresh interpreter, so that no other test's children are counted.
    script = textwrap.dedent(
        """
        import os, sys
        from benchsage.execute.agent import run_process
        for _ in range(20):
            run_process("true", sys.argv[1])
        run_process("sleep 5", sys.argv[1], timeout=0.1)
        run_process("exit 1", sys.argv[1] + "/missing")
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            print("none")
        """
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, check=True, timeout=60)
    assert out.stdout == b"none\n"


def test_max_rss_is_the_trials_own_not_the_controllers(tmp_path: Path) -> None:
    # Linux charges a child, at exec, the peak RSS of the address space it was forked from. The
    # agent forks trials from a small process and lowers the child's recorded peak before exec,
    # so a tiny command reports far less than this (large) controller's own peak.
    import resource

    controller_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with LocalWorker() as worker:
        small = worker.run(ProcessRequest("true", str(tmp_path)))
        big = worker.run(ProcessRequest(f"{sys.executable} -c 'b = b\"x\" * (100 << 20)'", str(tmp_path)))
    assert small.ok and small.max_rss < controller_peak and small.max_rss < 16 * 1024
    assert big.ok and big.max_rss > 100 * 1024


@pytest.mark.parametrize(
    ("command", "how"),
    [
        ("sleep 0.01", "exec"),
        ("/bin/echo a b", "exec"),
        ("dd if=/dev/zero of=/dev/null count=1", "exec"),
        ("echo $HOME", "shell"),
        ("true | cat", "shell"),
        ("cd /tmp", "shell"),
        ("FOO=1 env", "shell"),
        ("ls *.txt", "shell"),
        ("printf 'a b'", "shell"),
        ("no-such-program-here", "shell"),
        ("", "shell"),
    ],
)
def test_commands_without_shell_syntax_are_execed_directly(command: str, how: str) -> None:
    assert plan_spawn(command, os.environ)[0] == how


def test_direct_exec_runs_the_program_itself(tmp_path: Path) -> None:
    r = run("sh -c 'echo $PPID'", tmp_path)  # quotes: shell syntax, so /bin/sh -c runs it
    assert r.spawn == "shell"
    r = run(f"{sys.executable} -c print(__import__('os').getppid())", tmp_path)
    assert r.spawn == "shell"  # parentheses are shell syntax too
    script = tmp_path / "ppid.py"
    script.write_text("import os\nprint(os.getppid())\n")
    r = run(f"{sys.executable} {script}", tmp_path)
    assert r.ok and r.spawn == "exec"
    assert int(r.stdout) == os.getpid()  # no shell between the agent and the program


def test_missing_program_exits_127_through_the_shell(tmp_path: Path) -> None:
    r = run("no-such-program-here --x", tmp_path)
    assert r.spawn == "shell" and r.exit_status == 127 and b"not found" in r.stderr


def test_agent_sources_parse_as_python_3_8() -> None:
    import ast

    folder = Path(agent.__file__).parent
    for name in ("agent.py", "noise.py", "snapshot.py"):
        ast.parse((folder / name).read_text(), feature_version=(3, 8))


PYENV = Path("/root/.pyenv/versions")


def _interpreter(version: str) -> str | None:
    found = sorted(PYENV.glob(f"{version}.*/bin/python3")) if PYENV.is_dir() else []
    return str(found[-1]) if found else None


@pytest.mark.skipif(_interpreter("3.8") is None, reason="no Python 3.8 on this machine")
def test_agent_runs_on_python_3_8(tmp_path: Path) -> None:
    python = _interpreter("3.8")
    with LocalWorker(python=[python]) as worker:
        hello = worker.connect()
        assert hello["python"].startswith("3.8.")
        r = worker.run(ProcessRequest("echo hi; exit 3", str(tmp_path), timeout=5))
        assert (r.exit_status, r.stdout, r.spawn) == (3, b"hi\n", "shell")
        assert worker.run(ProcessRequest("sleep 5", str(tmp_path), timeout=0.2)).timed_out
        snap = worker.snapshot([], str(tmp_path), [("sh -c true", str(tmp_path))])
        assert snap["python"].startswith("3.8.") and snap["boot_id"] and snap["files"]


def test_too_old_or_missing_python_is_a_setup_error(tmp_path: Path) -> None:
    old = _interpreter("3.6") or _interpreter("3.7")
    if old is not None:
        with pytest.raises(WorkerSetupError, match=r"python 3\.[67]\.\d+ is too old .* set `python`"):
            LocalWorker(python=[old]).connect()
    with pytest.raises(WorkerSetupError, match="cannot start '/no/such/python3'"):
        LocalWorker(python=["/no/such/python3"]).connect()


def test_agent_kills_its_trial_and_exits_when_the_controller_goes(tmp_path: Path) -> None:
    import threading

    worker = LocalWorker()
    agent_pid = worker.connect()["pid"]
    errors: list[BaseException] = []

    def trial() -> None:
        try:
            worker.run(ProcessRequest("sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; sleep 30", str(tmp_path)))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=trial)
    thread.start()
    deadline = time.monotonic() + 10
    while not ((tmp_path / "bg.pid").exists() and (tmp_path / "sh.pid").exists()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.05)
    worker.hang_up()  # the controller closes the agent's stdin, as when it dies
    thread.join(10)
    assert errors and "WorkerLost" in type(errors[0]).__name__
    assert gone(agent_pid)
    assert gone(int((tmp_path / "bg.pid").read_text()))
    assert gone(int((tmp_path / "sh.pid").read_text()))
    worker.close()


def test_controller_sleeps_while_the_agent_measures(tmp_path: Path) -> None:
    with LocalWorker() as worker:
        worker.connect()
        cpu = time.process_time()
        r = worker.run(ProcessRequest("sleep 2", str(tmp_path)))
        spent = time.process_time() - cpu
    assert r.ok and 2 <= r.wall_time < 3
    assert spent < 0.05, f"controller used {spent * 1000:.1f} ms of CPU during a 2 s trial"
