"""Measurement control through the real agent: trials pinned to CPUs, the whole tree's memory and
CPU from a cgroup per trial, leftovers killed and counted (by the cgroup, or by the agent as
child subreaper when it has none), OOM kills named, cgroups given up mid-experiment, and
package energy from a folder shaped like powercap."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchsage.agent.cgroups import own_cgroups, probe
from benchsage.execute.agentworker import AgentWorker
from benchsage.execute.local import LocalWorker
from benchsage.execute.runner import classify
from benchsage.execute.transports import CommandTransport
from benchsage.execute.worker import ProcessRequest
from benchsage.spec import TestSpec

MIB = 1024  # KiB
PYTHON = shutil.which("python3") or sys.executable
# A process that ignores SIGTERM and one in a session of its own: the two kinds of leftover a
# polite kill misses. Each prints its pid so the test can check it is gone.
LEFTOVERS = ("sh -c 'trap \"\" TERM; (trap \"\" TERM; exec sleep 60) & echo $!; setsid sleep 61 & echo $!; echo started'")


def require_cgroups() -> None:
    support = probe()
    if not support.method:
        if os.environ.get("CI") == "true":
            pytest.fail("no cgroups for the agent here: " + support.reason)
        pytest.skip(support.reason)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def gone_soon(pids: list[int], within: float = 0.5) -> bool:
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def pids_of(stdout: bytes) -> list[int]:
    return [int(line) for line in stdout.split() if line.isdigit()]


def cpus_allowed(stdout: bytes) -> str:
    line = next(line for line in stdout.decode().splitlines() if line.startswith("Cpus_allowed_list"))
    return line.split(":", 1)[1].strip()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_trial_is_pinned_to_its_cpus_before_exec() -> None:
    show = "grep Cpus_allowed_list /proc/self/status"
    with LocalWorker() as worker:
        for cpus, expected in (((1,), "1"), ((0,), "0"), ((0, 1), "0-1"), (None, "0-1")):
            result = worker.run(ProcessRequest(show, "/", cpus=cpus, trial=True))
            assert result.ok and cpus_allowed(result.stdout) == expected, (cpus, result.stdout)
        # A child the trial forks inherits the pinning: the whole trial runs there.
        result = worker.run(ProcessRequest(f"sh -c '{show}'", "/", cpus=(1,), trial=True))
        assert cpus_allowed(result.stdout) == "1"


def test_peak_memory_is_the_whole_trees_and_max_rss_one_process() -> None:
    require_cgroups()
    four = "sh -c 'for i in 1 2 3 4; do dd if=/dev/zero of=/dev/null bs=50M count=60 2>/dev/null & done; wait'"
    with LocalWorker() as worker:
        result = worker.run(ProcessRequest(four, "/", trial=True))
    assert result.ok and result.peak_memory is not None and result.cpu_time is not None
    assert abs(result.peak_memory - 200 * MIB) <= 0.15 * 200 * MIB, result.peak_memory
    assert 50 * MIB <= result.max_rss <= 60 * MIB, result.max_rss  # wait4: the largest single process
    # cpu_time counts the four dd processes the shell waited for, and the shell itself.
    assert result.cpu_time >= result.user_time + result.sys_time - 0.01


def test_cpu_time_counts_what_the_trial_never_waited_for(tmp_path: Path) -> None:
    require_cgroups()
    spin = tmp_path / "spin.py"
    spin.write_text("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\n")
    with LocalWorker() as worker:
        # The trial starts a busy child in the background, orphaned at once, so nobody ever
        # waits for it: wait4 sees only the shell, the cgroup the child's 0.3 s of CPU too. The
        # trial ends when the child closes the pipe it writes to, however long a busy machine
        # takes to give it 0.3 s of CPU.
        result = worker.run(ProcessRequest(f"sh -c '({PYTHON} {spin} &) | cat'", "/", trial=True))
    assert result.ok and result.user_time + result.sys_time < 0.05
    assert result.cpu_time is not None and 0.25 <= result.cpu_time < 0.6, result.cpu_time


def test_leftovers_are_killed_counted_and_gone_with_a_cgroup() -> None:
    require_cgroups()
    with LocalWorker() as worker:
        result = worker.run(ProcessRequest(LEFTOVERS, "/", trial=True))
        assert result.ok and result.stdout.endswith(b"started\n")
        assert result.leftovers == 2
        assert gone_soon(pids_of(result.stdout))
        # A reset is not a trial: a server it starts is left running for the tests.
        reset = worker.run(ProcessRequest("sh -c 'setsid sleep 62 & echo $!'", "/"))
        assert reset.leftovers is None and alive(pids_of(reset.stdout)[0])
        after = worker.run(ProcessRequest("true", "/", trial=True))
        assert after.leftovers == 0 and alive(pids_of(reset.stdout)[0])
        os.kill(pids_of(reset.stdout)[0], signal.SIGKILL)


def test_without_cgroups_the_agent_finds_leftovers_as_child_subreaper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHSAGE_CGROUPS", "off")
    with LocalWorker() as worker:
        measurement = worker.connect()["measurement"]
        assert measurement["cgroup"] is None and "BENCHSAGE_CGROUPS=off" in measurement["cgroup_reason"]
        assert measurement["leftovers"] == "subreaper"
        result = worker.run(ProcessRequest(LEFTOVERS, "/", trial=True))
        assert result.ok and result.leftovers == 2 and result.peak_memory is None and result.cpu_time is None
        assert gone_soon(pids_of(result.stdout))
        # A grandchild whose parent the trial left running is found too, once its parent dies.
        deep = worker.run(ProcessRequest("sh -c 'setsid sh -c \"sleep 63 & echo \\$!; sleep 64\" & sleep 0.2'", "/", trial=True))
        assert deep.leftovers == 3 and gone_soon(pids_of(deep.stdout))  # sh, sleep 63, sleep 64
        assert worker.run(ProcessRequest("true", "/", trial=True)).leftovers == 0


def test_an_unprivileged_agent_says_why_it_has_no_cgroups_and_still_kills_leftovers() -> None:
    system_python = "/usr/bin/python3"  # one that nobody may run (not a pyenv shim in /root)
    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists(system_python):
        pytest.skip("needs root, setpriv and /usr/bin/python3 to start the agent as nobody")
    as_nobody = CommandTransport(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"], system_python)
    with AgentWorker("nobody", as_nobody, python=[system_python]) as worker:
        measurement = worker.connect()["measurement"]
        assert measurement["cgroup"] is None and "to enable" in measurement["cgroup_reason"]
        result = worker.run(ProcessRequest(LEFTOVERS, "/", trial=True))
        assert result.ok and result.leftovers == 2 and gone_soon(pids_of(result.stdout))


def test_cgroups_that_fail_mid_experiment_are_given_up_once_and_measuring_goes_on() -> None:
    require_cgroups()
    with LocalWorker() as worker:
        agent = worker.connect()["pid"]
        first = worker.run(ProcessRequest("true", "/", trial=True))
        assert first.peak_memory is not None and first.note is None
        # Someone removes the agent's cgroups between two trials.
        with open(f"/proc/{agent}/cgroup") as f:
            memory = own_cgroups(f.read())["memory"]
        [base] = Path("/sys/fs/cgroup/memory" + memory).glob(f"benchsage-{agent}-*")
        for hierarchy in ("memory" + memory, "cpuacct", "freezer"):
            folder = Path("/sys/fs/cgroup") / hierarchy / base.name
            for trial in sorted(folder.glob("trial-*")):
                trial.rmdir()
            if folder.is_dir():
                folder.rmdir()
        assert not base.exists()
        second = worker.run(ProcessRequest("echo measured", "/", trial=True))
        assert second.ok and second.stdout == b"measured\n" and second.wall_time > 0
        assert second.peak_memory is None and second.note is not None
        assert "cgroups given up mid-experiment" in second.note and "\n" not in second.note
        third = worker.run(ProcessRequest(LEFTOVERS, "/", trial=True))
        assert third.note is None and third.peak_memory is None  # said once
        assert third.leftovers == 2 and gone_soon(pids_of(third.stdout))  # now as subreaper


def test_a_trial_killed_by_the_oom_killer_fails_with_that_reason(tmp_path: Path) -> None:
    require_cgroups()
    with open("/proc/self/cgroup") as f:
        memory = own_cgroups(f.read())["memory"]
    limited = Path("/sys/fs/cgroup/memory" + memory) / f"benchsage-test-oom-{os.getpid()}"
    limited.mkdir()
    try:
        (limited / "memory.limit_in_bytes").write_text(str(150 << 20))
        # The agent starts inside a cgroup limited to 150 MiB; its trials' cgroups nest below.
        enter = ["sh", "-c", f'echo $$ > {limited}/cgroup.procs && exec "$@"', "enter"]
        with AgentWorker("limited", CommandTransport(enter, PYTHON), python=[PYTHON]) as worker:
            hog = f"{PYTHON} -c 'b = bytearray(400 << 20)'"
            result = worker.run(ProcessRequest(hog, "/", trial=True))
            assert result.exit_status in (-signal.SIGKILL, 128 + signal.SIGKILL) and result.oom_kills >= 1
            outcome = classify(TestSpec("hog", hog, None, {}, "/"), result)
            assert outcome.status == "failed" and "out of memory (the kernel's OOM killer killed" in outcome.reason
            fine = worker.run(ProcessRequest("true", "/", trial=True))  # the agent survived and measures on
            assert fine.ok and fine.oom_kills == 0
    finally:
        deadline = time.monotonic() + 5
        while True:
            try:
                limited.rmdir()
                break
            except OSError:
                assert time.monotonic() < deadline, "the limited cgroup stayed busy"
                time.sleep(0.05)


def test_energy_of_a_trial_from_package_counters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "powercap"
    package = root / "intel-rapl:0"
    package.mkdir(parents=True)
    (package / "name").write_text("package-0\n")
    (package / "max_energy_range_uj").write_text("262143328850\n")
    (package / "energy_uj").write_text("1000000\n")
    monkeypatch.setenv("BENCHSAGE_POWERCAP", str(root))
    counter = package / "energy_uj"
    with LocalWorker() as worker:
        assert worker.connect()["measurement"]["energy"] is True
        # The trial stands in for the CPU package: it advances the counter by 5 J.
        used = worker.run(ProcessRequest(f"sh -c 'echo 6000000 > {counter}'", "/", trial=True))
        assert used.energy == pytest.approx(5.0)
        # The counter wraps at max_energy_range_uj: 262143.32885 J - 6 J + 4 J.
        wrapped = worker.run(ProcessRequest(f"sh -c 'echo 4000000 > {counter}'", "/", trial=True))
        assert wrapped.energy == pytest.approx(262143.328850 - 6 + 4)
        assert worker.run(ProcessRequest("true", "/")).energy is None  # resets are not measured


def test_no_energy_without_powercap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BENCHSAGE_POWERCAP", str(tmp_path / "absent"))
    with LocalWorker() as worker:
        measurement = worker.connect()["measurement"]
        assert measurement["energy"] is False and "powercap" in measurement["energy_reason"]
        assert worker.run(ProcessRequest("true", "/", trial=True)).energy is None


def test_pinning_and_leftovers_in_a_whole_experiment(tmp_path: Path) -> None:
    """`cpus` per experiment with a per-test override; a CPU the host lacks and a malformed list
    are one-line errors (exit 2) before anything runs; nothing a trial left is alive 0.5 s after."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    spec = tmp_path / "experiment.toml"
    body = (
        '[[test]]\nname = "where"\ncommand = "grep Cpus_allowed_list /proc/self/status"\n'
        '[[test]]\nname = "here"\ncommand = "sh -c \'grep Cpus_allowed_list /proc/self/status\'"\ncpus = "0"\n'
        '[[test]]\nname = "daemon"\ncommand = "sh -c \'setsid sleep 65 & echo $!\'"\n'
    )
    spec.write_text('[experiment]\nname = "pin"\nruns = 2\nseed = 3\ncpus = "1"\n' + body)

    def bench(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)

    done = bench("run", str(spec), "-o", "out", "--quiet")
    assert done.returncode == 0, done.stderr
    import sqlite3

    conn = sqlite3.connect(tmp_path / "out" / "journal.sqlite")
    try:
        shown = conn.execute("SELECT s.name, t.stdout_tail, t.leftovers FROM trials t JOIN tests s ON s.id = t.test_id").fetchall()
    finally:
        conn.close()
    assert {cpus_allowed(out) for name, out, _ in shown if name == "where"} == {"1"}
    assert {cpus_allowed(out) for name, out, _ in shown if name == "here"} == {"0"}
    daemons = [int(out) for name, out, _ in shown if name == "daemon"]
    assert len(daemons) == 4 and {n for name, _, n in shown if name == "daemon"} == {1}
    assert not any(alive(p) for p in daemons)

    spec.write_text('[experiment]\nname = "pin"\nruns = 2\ncpus = "7"\n' + body)
    lacking = bench("run", str(spec), "-o", "out7")
    assert lacking.returncode == 2 and len(lacking.stderr.strip().splitlines()) == 1
    assert "worker local: test 'where' is pinned to CPU 7: not on this host (online: 0-1)" in lacking.stderr
    assert not (tmp_path / "out7" / "journal.sqlite").exists()
    spec.write_text('[experiment]\nname = "pin"\nruns = 2\ncpus = "3-1"\n' + body)
    malformed = bench("run", str(spec), "-o", "out8")
    assert malformed.returncode == 2 and "[experiment]" in malformed.stderr and "'3-1'" in malformed.stderr
    assert "Traceback" not in malformed.stderr + lacking.stderr


def test_without_cgroups_a_reset_daemon_that_exits_leaves_no_zombie(monkeypatch: pytest.MonkeyPatch) -> None:
    # A reset that starts a server in the background (adopted by the agent as subreaper) and the
    # next reset that stops it: the stopped server is the agent's child, and must be reaped.
    monkeypatch.setenv("BENCHSAGE_CGROUPS", "off")
    with LocalWorker() as worker:
        agent = worker.connect()["pid"]
        started = worker.run(ProcessRequest("sh -c 'setsid sleep 62 & echo $!'", "/"))
        (daemon,) = pids_of(started.stdout)
        trial = worker.run(ProcessRequest("true", "/", trial=True))
        assert trial.leftovers == 0 and alive(daemon)  # a reset's daemon is not the trial's leftover
        worker.run(ProcessRequest(f"kill {daemon}", "/"))
        deadline = time.monotonic() + 5
        while _state(daemon) != "Z":  # the agent's zombie now
            assert time.monotonic() < deadline, f"daemon {daemon} in state {_state(daemon)}"
            time.sleep(0.02)
        assert _parent(daemon) == agent
        assert worker.run(ProcessRequest("true", "/", trial=True)).leftovers == 0
        assert _state(daemon) is None  # reaped before the next trial


def _state(pid: int) -> str | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return data[data.rindex(b")") + 2 : data.rindex(b")") + 3].decode()


def _parent(pid: int) -> int:
    data = Path(f"/proc/{pid}/stat").read_bytes()
    return int(data[data.rindex(b")") + 2 :].split()[1])


def test_a_trial_cgroup_made_ready_between_trials_that_vanishes_is_given_up_once() -> None:
    """The agent makes the next trial's cgroup ready once its reply is sent (off the path from
    one trial to the next); removed by someone before the trial joins it, the trial runs
    without it, the agent says so once and measures on as child subreaper."""
    require_cgroups()
    with LocalWorker() as worker:
        agent = worker.connect()["pid"]
        first = worker.run(ProcessRequest("true", "/", trial=True))
        assert first.peak_memory is not None and first.note is None
        worker._request({"op": "ping"})  # answered after the agent's work between trials
        with open(f"/proc/{agent}/cgroup") as f:
            memory = own_cgroups(f.read())["memory"]
        [base] = Path("/sys/fs/cgroup/memory" + memory).glob(f"benchsage-{agent}-*")
        [ready] = base.glob("trial-*")  # the next trial's, ready and empty
        assert (ready / "tasks").read_text() == ""
        for hierarchy in ("memory" + memory, "cpuacct", "freezer"):
            folder = Path("/sys/fs/cgroup") / hierarchy / base.name
            for trial in sorted(folder.glob("trial-*")):
                trial.rmdir()
        second = worker.run(ProcessRequest("echo measured", "/", trial=True))
        assert second.ok and second.stdout == b"measured\n" and second.wall_time > 0
        assert second.peak_memory is None and second.cpu_time is None
        assert second.note is not None and "could not join its cgroup" in second.note and "\n" not in second.note
        third = worker.run(ProcessRequest(LEFTOVERS, "/", trial=True))
        assert third.ok and third.note is None and third.peak_memory is None  # said once
        assert third.leftovers == 2 and gone_soon(pids_of(third.stdout))  # now as subreaper
        assert worker.run(ProcessRequest("true", "/", trial=True)).note is None


def test_trial_cgroups_kept_or_removed_leave_no_descriptor_open_and_times_bracket_the_exec(tmp_path: Path) -> None:
    """The agent enters each trial's cgroup through `tasks` files it keeps open while the cgroup
    serves; a removed cgroup closes them. Trials that leave page cache behind (their cgroup is
    removed) alternate with ones that do not (it is kept for the next trial): the agent's open
    descriptors do not grow. A trial's start and end on the wall clock are its clock's own."""
    require_cgroups()
    with LocalWorker() as worker:
        agent = worker.connect()["pid"]

        def descriptors() -> int:
            return len(os.listdir(f"/proc/{agent}/fd"))

        write = ProcessRequest(f"dd if=/dev/zero of={tmp_path / 'f'} bs=1M count=2", str(tmp_path), trial=True, timeout=20)
        true = ProcessRequest("true", str(tmp_path), trial=True, timeout=20)
        for request in (write, true, true):  # every kind of descriptor opened once
            assert worker.run(request).peak_memory is not None
        before = descriptors()
        for _ in range(6):
            for request in (write, true, true):
                sent = time.time()
                r = worker.run(request)
                assert r.peak_memory is not None and r.exit_status == 0
                assert sent < r.started < r.ended < time.time()
                assert r.ended - r.started == pytest.approx(r.wall_time, abs=2e-5)
        assert descriptors() == before
