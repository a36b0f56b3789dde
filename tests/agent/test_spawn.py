"""Spawning a command against real processes: statuses, signals, cwd and environment, its own
process group, rusage, exec or /bin/sh -c, what cannot start, a padded working directory and
ASLR turned on or off for the trial."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchsage.agent.spawn import ADDR_NO_RANDOMIZE, needs_shell, padded_cwd, plan_spawn, run_process
from benchsage.execute.local import LocalWorker
from benchsage.execute.worker import ProcessRequest
from benchsage.vocabulary import ENV_PAD, MAX_ENV_BYTES

sys.path.insert(0, str(Path(__file__).parent))
from proctools import trial as run  # noqa: E402


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
        from benchsage.agent.spawn import run_process
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
    # Shell syntax is the one reason besides a program not found (the shell says so).
    assert needs_shell(command) == (how == "shell" and command != "no-such-program-here")


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


@pytest.mark.parametrize("extra", [0, 1, 2, 3, 4, 255, 256, 257, 258, 259, 600])
def test_padded_working_directory_is_exactly_longer_and_sees_the_entries(tmp_path: Path, extra: int) -> None:
    (tmp_path / "input.txt").write_text("x")
    path = padded_cwd(str(tmp_path), extra)
    assert len(path) == len(str(tmp_path)) + extra
    assert os.path.isdir(path) and os.path.samefile(os.path.join(path, "input.txt"), tmp_path / "input.txt")
    assert all(len(part) <= 255 for part in path.split("/"))
    # Asked again (the next trial), the same directory; a file made since in cwd is linked too.
    (tmp_path / "later.txt").write_text("y")
    assert padded_cwd(str(tmp_path), extra) == path and os.path.exists(os.path.join(path, "later.txt"))


def test_aslr_off_and_on_reach_the_trial(tmp_path: Path) -> None:
    off = run_process("cat /proc/self/personality", str(tmp_path), aslr=False)
    on = run_process("setarch -R cat /proc/self/personality", str(tmp_path), aslr=True)  # setarch sets it again
    plain = run_process("cat /proc/self/personality", str(tmp_path), aslr=True)
    assert int(off["stdout"], 16) & ADDR_NO_RANDOMIZE
    assert int(on["stdout"], 16) & ADDR_NO_RANDOMIZE
    assert not int(plain["stdout"], 16) & ADDR_NO_RANDOMIZE
    # Stack addresses differ between runs with randomisation and repeat without it.
    probe = "sh -c 'grep stack /proc/self/maps'"
    fixed = {run_process(probe, str(tmp_path), aslr=False)["stdout"] for _ in range(3)}
    moving = {run_process(probe, str(tmp_path), aslr=True)["stdout"] for _ in range(3)}
    if open("/proc/sys/kernel/randomize_va_space").read().strip() != "0":
        assert len(fixed) == 1 and len(moving) == 3


def test_the_largest_environment_padding_a_spec_accepts_starts_and_one_byte_more_would_not(tmp_path: Path) -> None:
    # The kernel's limit on one environment string is what [context] env_bytes is checked against.
    fits = run("/usr/bin/printenv " + ENV_PAD, tmp_path, env={ENV_PAD: "x" * MAX_ENV_BYTES})
    assert fits.ok and fits.stdout == b"x" * MAX_ENV_BYTES + b"\n"
    over = run("/usr/bin/printenv " + ENV_PAD, tmp_path, env={ENV_PAD: "x" * (MAX_ENV_BYTES + 1)})
    assert over.error is not None and "Argument list too long" in over.error


def test_an_execd_trial_sees_its_own_working_directory_in_pwd(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    r = run("/usr/bin/printenv PWD", tmp_path / "sub")
    assert r.ok and r.spawn == "exec" and r.stdout.decode().strip() == str(tmp_path / "sub")
    padded = run("/usr/bin/printenv PWD", tmp_path, cwd_pad=40)
    assert len(padded.stdout.decode().strip()) == len(str(tmp_path)) + 40


def test_a_child_that_cannot_have_its_own_process_group_says_so(tmp_path: Path) -> None:
    from benchsage.agent import spawn

    # A session leader may not change its process group: setpgid fails in the child for real.
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - reports through the pipe
        os.close(r)
        os.setsid()
        spawn._child("/bin/true", ["true"], dict(os.environ), str(tmp_path), (0, 1, 2), w)
    os.close(w)
    report = spawn.read_all(r)
    os.close(r)
    os.waitpid(pid, 0)
    exec_time, why = spawn._read_report(report, str(tmp_path), "/bin/true", None, None)
    assert exec_time is None and why == "a process group of its own (setpgid): " + os.strerror(1)


@pytest.mark.parametrize("report", [b"", b"x", b"chdir:", b"chdir:x", b"nonsense:2", b"12.5|garbage", b"abc|", b"\xff\xfe:1"])
def test_a_report_from_the_child_that_cannot_be_read_is_a_reason_not_a_crash(tmp_path: Path, report: bytes) -> None:
    from benchsage.agent import spawn

    exec_time, why = spawn._read_report(report, str(tmp_path), "/bin/true", None, None)
    assert exec_time is None and why and "\n" not in why
    assert spawn._read_report(b"12.5|", str(tmp_path), "/bin/true", None, None) == (12.5, "")


@pytest.mark.parametrize("fork", [False, True], ids=["posix_spawn", "fork"])
def test_a_trial_starts_with_its_cpus_aslr_cwd_and_cgroup_and_the_agent_keeps_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork: bool) -> None:
    """Started by posix_spawn, the agent takes on the trial's CPUs, ASLR, working directory and
    cgroup for the instant of the spawn; the trial has them, the agent has its own again."""
    from benchsage.agent import spawn

    if fork:
        monkeypatch.setenv(spawn.FORK_ENV, "1")
    cpus = sorted(os.sched_getaffinity(0))
    before = (os.getcwd(), os.sched_getaffinity(0), open("/proc/self/cgroup").read(), open("/proc/self/personality").read())
    script = "cat /proc/self/personality; grep Cpus_allowed_list /proc/self/status; pwd; cat /proc/self/cgroup"
    r = run_process(f"sh -c '{script}'", str(tmp_path), trial=True, cpus=cpus[:1], aslr=False)
    assert r["exit_status"] == 0, r
    lines = r["stdout"].decode().splitlines()
    assert int(lines[0], 16) & ADDR_NO_RANDOMIZE
    assert lines[1].split(":")[1].strip() == str(cpus[0])
    assert lines[2] == str(tmp_path)
    if r.get("peak_memory") is not None:  # cgroups here: the trial ran in its own
        assert any("benchsage-" in line and "/trial-" in line for line in lines[3:])
    assert (os.getcwd(), os.sched_getaffinity(0), open("/proc/self/cgroup").read(),
            open("/proc/self/personality").read()) == before
    assert r["spawn"] == "shell" and r["wall_time"] > 0
    missing = run_process("/bin/true", str(tmp_path / "gone"), trial=True, cpus=cpus[:1])
    assert missing["exit_status"] is None and "working directory" in missing["error"] and "No such file" in missing["error"]
    assert os.getcwd() == before[0] and open("/proc/self/cgroup").read() == before[2]
