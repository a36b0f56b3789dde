"""What a transport prints before the agent starts (a login banner, a module system's messages,
.bashrc output) is no protocol error: the controller skips it until the agent's first message,
keeps it in the worker's log, and a transport that never starts the agent is one line naming the
worker, with nothing left running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchsage.errors import WorkerError
from benchsage.execute.agentworker import AgentWorker
from benchsage.execute.fleet import connect_all
from benchsage.execute.transports import CommandTransport

BANNER = 'echo "Welcome to node7 (HPC login)"; echo "Lmod: 3 modules loaded"; printf "motd, no newline "; exec "$@"'


def spec(*workers: tuple[str, str]) -> str:
    text = '[experiment]\nname = "banner"\nruns = 2\nseed = 1\n'
    for name, script in workers:
        text += (f'[[worker]]\nname = "{name}"\nkind = "command"\n'
                 f'transport = {json.dumps(["sh", "-c", script, "transport"])}\npython = "{sys.executable}"\n')
    return text + '[[test]]\nname = "t"\ncommand = "true"\n[[test]]\nname = "u"\ncommand = "true"\n'


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def test_a_banner_before_the_agent_is_skipped_and_kept_in_the_worker_log(tmp_path: Path) -> None:
    (tmp_path / "experiment.toml").write_text(spec(("chatty", BANNER), ("quiet", 'exec "$@"')))
    done = bench("run", "experiment.toml", "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert {t["test"]: (t["n_fixed"], t["n_random"]) for t in json.loads(done.stdout)["tests"] if t["primary"]} == {
        "t": (4, 4), "u": (4, 4)}  # 2 runs per arm on each of the 2 workers
    log = (tmp_path / "out" / "workers" / "chatty.log").read_text()
    assert "Welcome to node7 (HPC login)\nLmod: 3 modules loaded\nmotd, no newline \n" in log


def test_a_transport_that_never_starts_the_agent_is_one_line_naming_the_worker(tmp_path: Path) -> None:
    garbage = 'echo "{this is not the agent"; echo "Last login: never"'
    # It opens what looks like the agent's first message, then stays: it must not outlive the attempt.
    impostor = f'echo $$ > {tmp_path}/impostor.pid; echo \'{{"benchsage-agent": 1}}\'; exec sleep 300'
    (tmp_path / "experiment.toml").write_text(spec(("garbage", garbage), ("impostor", impostor), ("fine", BANNER)))
    done = bench("run", "experiment.toml", "-o", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stderr  # could not connect: nothing ran
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchsage: error: "), done.stderr
    assert "worker garbage: the agent did not start" in lines[0] and "'Last login: never'" in lines[0]
    assert "worker impostor: the agent did not say hello" in lines[0] and "worker fine" not in lines[0]
    assert lines[0].endswith("nothing ran")
    assert not (tmp_path / "out" / "journal.sqlite").exists()
    with pytest.raises(ProcessLookupError):  # the impostor transport was stopped and reaped
        os.kill(int((tmp_path / "impostor.pid").read_text()), 0)


class BrokenTransport(CommandTransport):
    """A transport with a bug: building its command line raises something no worker expects."""

    def argv(self, command: list[str]) -> list[str]:
        raise RuntimeError("the transport's own bug")


def test_any_failure_in_a_connect_thread_is_that_workers_error(tmp_path: Path) -> None:
    good = AgentWorker("good", CommandTransport(["env"]), python=[sys.executable])
    broken = AgentWorker("broken", BrokenTransport(["env"]), python=[sys.executable])
    with pytest.raises(WorkerError) as caught:
        connect_all([good, broken])
    assert str(caught.value) == "worker broken: cannot connect: RuntimeError: the transport's own bug; nothing ran"
    assert good._conn is None  # the worker that did connect was closed again
