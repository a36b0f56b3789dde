"""The agent as a process: its bundle, the bootstrap on old and new interpreters, and a
controller that goes away mid-trial or sleeps while the agent measures."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from benchsage import agent
from benchsage.errors import WorkerSetupError
from benchsage.execute.bundle import bundle_modules
from benchsage.execute.local import LocalWorker
from benchsage.execute.worker import ProcessRequest

sys.path.insert(0, str(Path(__file__).parent))
from proctools import PYTHON38, PYTHON_TOO_OLD, gone, needs_python38  # noqa: E402


def test_agent_sources_parse_as_python_3_8() -> None:
    import ast

    # The bundle is every module of the agent's folder and the vocabulary, nothing else.
    folder = Path(agent.__file__).parent
    modules = bundle_modules()
    assert set(modules) == {"benchsage.vocabulary", "benchsage.agent"} | {
        f"benchsage.agent.{path.stem}" for path in folder.glob("*.py") if path.stem != "__init__"
    }
    for name, source in modules.items():
        ast.parse(source, name, feature_version=(3, 8))


@needs_python38
def test_agent_runs_on_python_3_8(tmp_path: Path) -> None:
    assert PYTHON38 is not None
    with LocalWorker(python=[PYTHON38]) as worker:
        hello = worker.connect()
        assert hello["python"].startswith("3.8.")
        # No pidfds on 3.8: the agent waits through SIGCHLD, even for a trial gone at once.
        assert worker.run(ProcessRequest("/bin/true", str(tmp_path), timeout=5)).ok
        r = worker.run(ProcessRequest("echo hi; exit 3", str(tmp_path), timeout=5))
        assert (r.exit_status, r.stdout, r.spawn) == (3, b"hi\n", "shell")
        assert worker.run(ProcessRequest("sleep 5", str(tmp_path), timeout=0.2)).timed_out
        snap = worker.snapshot([], str(tmp_path), [("sh -c true", str(tmp_path))])
        assert snap["python"].startswith("3.8.") and snap["boot_id"] and snap["files"]


def test_too_old_or_missing_python_is_a_setup_error(tmp_path: Path) -> None:
    if PYTHON_TOO_OLD is not None:
        with pytest.raises(WorkerSetupError, match=r"python 3\.[0-7]\.\d+ is too old .* set `python`"):
            LocalWorker(python=[PYTHON_TOO_OLD]).connect()
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


def test_snapshots_come_from_one_helper_that_imports_once_and_ends_with_the_agent(tmp_path: Path) -> None:
    """A run's snapshot costs no fork with imports: one helper, forked at the first snapshot,
    takes them all; the agent never imports what it uses (its size stays); the helper ends
    when the agent does."""
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    script.chmod(0o755)

    def children(pid: int) -> set[int]:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return {int(p) for p in f.read().split()}

    with LocalWorker() as worker:
        agent = worker.connect()["pid"]
        assert children(agent) == set()
        first = worker.snapshot([], str(tmp_path), [("./run.sh", str(tmp_path))])
        [helper] = children(agent)
        for _ in range(3):
            assert worker.run(ProcessRequest("/bin/true", str(tmp_path), trial=True)).ok
            snap = worker.snapshot([], str(tmp_path), [("./run.sh", str(tmp_path))])
            assert children(agent) == {helper}
            assert snap["files"] == first["files"] and snap["agent_rss_kib"] <= first["agent_rss_kib"] + 256
            assert snap["time"] > first["time"] and snap["noise"].keys() == first["noise"].keys()
        # hashlib (OpenSSL's libcrypto, for the files' sha256) is loaded in the helper only.
        assert "libcrypto" in Path(f"/proc/{helper}/maps").read_text()
        assert "libcrypto" not in Path(f"/proc/{agent}/maps").read_text()
        script.write_text("#!/bin/sh\nfalse\n")  # a changed file is hashed again
        assert worker.snapshot([], str(tmp_path), [("./run.sh", str(tmp_path))])["files"] != first["files"]
    assert gone(helper)


def test_a_program_found_on_path_is_looked_up_again_after_a_reset(tmp_path: Path) -> None:
    """The agent keeps where each trial's program was found on $PATH; a reset (or a snapshot,
    or a deploy) makes it look again, so what a reset installs is what the next trial runs."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()

    def install(folder: Path) -> None:
        program = folder / "whoami-here"
        program.write_text(f"#!/bin/sh\necho {folder.name}\n")
        program.chmod(0o755)

    install(second)
    env = {"PATH": f"{first}:{second}:/usr/bin:/bin"}
    trial = ProcessRequest("whoami-here", str(tmp_path), env=env, trial=True, timeout=10)
    with LocalWorker() as worker:
        worker.connect()
        assert worker.run(trial).stdout == b"second\n"
        install(first)  # by hand, between two trials: the agent goes on with what it found
        assert worker.run(trial).stdout == b"second\n"
        assert worker.run(ProcessRequest("true", str(tmp_path), env=env, timeout=10)).ok  # a reset
        assert worker.run(trial).stdout == b"first\n"
        (first / "whoami-here").unlink()  # gone: found again where it still is
        r = worker.run(trial)
        assert (r.stdout, r.spawn) == (b"second\n", "exec")
        (second / "whoami-here").unlink()  # nowhere: the shell says so, as without the agent
        r = worker.run(trial)
        assert (r.exit_status, r.spawn) == (127, "shell") and b"not found" in r.stderr


def test_a_padded_working_directory_is_made_again_before_every_trial(tmp_path: Path) -> None:
    """The agent keeps each trial's environment for the next trial of the same request, but
    makes a padded working directory before every trial: one that a reset, or the trial
    itself, removed is there again for the next."""
    trial = ProcessRequest("pwd", str(tmp_path), trial=True, timeout=10, cwd_pad=40)
    with LocalWorker() as worker:
        worker.connect()
        first = worker.run(trial)
        assert first.ok and len(first.stdout.strip()) == len(str(tmp_path)) + 40
        padded = Path(first.stdout.decode().strip())
        top = tmp_path / padded.relative_to(tmp_path).parts[0]
        assert worker.run(ProcessRequest(f"rm -r {top}", str(tmp_path), timeout=10)).ok and not padded.exists()  # a reset
        again = worker.run(trial)
        assert again.ok and again.stdout == first.stdout and padded.is_dir()
        itself = ProcessRequest(f"pwd; rm -r {top}", str(tmp_path), trial=True, timeout=10, cwd_pad=40)
        assert worker.run(itself).stdout == first.stdout and not padded.exists()  # the trial removes its own
        assert worker.run(itself).stdout == first.stdout  # and the next one of the same test starts there all the same
