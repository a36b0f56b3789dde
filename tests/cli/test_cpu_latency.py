"""[experiment] cpu_latency: every host's agent holds a PM QoS CPU latency limit while it runs,
with the real /dev/cpu_dma_latency (root): the trials run under it, the run's snapshot records
it, nothing outlives the agent, and a host that cannot hold it stops the experiment before
anything runs."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from benchsage.agent.cpus import CPU_LATENCY_DEVICE, CPU_LATENCY_ENV

NO_LIMIT = 2_000_000_000  # what the device reads when no process holds a request

SPEC = """
[experiment]
name = "latency"
runs = 2
seed = 1
cpu_latency = {limit}

[reset]
command = "true"

[[test]]
name = "limit"
command = "od -An -td4 {device}"

[[test.metric]]
name = "limit"
regex = '(-?[0-9]+)'

[[test]]
name = "fds"
command = "ls -l /proc/self/fd/"
"""


def benchsage(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def held_now() -> int:
    with open(CPU_LATENCY_DEVICE, "rb") as f:
        return int.from_bytes(f.read(4), "little", signed=True)


@pytest.mark.cpu_latency
@pytest.mark.skipif(not os.access(CPU_LATENCY_DEVICE, os.W_OK), reason="needs a writable /dev/cpu_dma_latency (root)")
def test_the_trials_run_under_the_limit_the_snapshot_says_so_and_it_ends_with_the_experiment(tmp_path: Path) -> None:
    if held_now() != NO_LIMIT:  # the tests that hold one run one at a time: something else holds it (tuned?)
        pytest.skip("another process holds a CPU latency limit on this machine")
    (tmp_path / "experiment.toml").write_text(SPEC.format(limit=0, device=CPU_LATENCY_DEVICE))
    done = benchsage("run", "experiment.toml", "-o", "out", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = sqlite3.connect(tmp_path / "out" / "journal.sqlite")
    limits = [v for (v,) in db.execute("SELECT value FROM trial_values WHERE metric = 'limit'")]
    assert limits == [0.0] * 4  # every trial of the two runs per arm, under the limit
    listings = [out.decode() for (out,) in db.execute(
        "SELECT t.stdout_tail FROM trials t JOIN tests s ON t.test_id = s.id WHERE s.name = 'fds'")]
    assert len(listings) == 4 and not any("cpu_dma_latency" in listing for listing in listings)  # never inherited
    for (snapshot,) in db.execute("SELECT snapshot FROM attempts"):
        assert "PM QoS limit 0 us" in (json.loads(snapshot)["cpu_idle"] or "")
    db.close()
    assert held_now() == NO_LIMIT  # released with the agent


def test_the_plan_says_so(tmp_path: Path) -> None:
    (tmp_path / "experiment.toml").write_text(SPEC.format(limit=0, device="/dev/null"))
    shown = benchsage("plan", "experiment.toml", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "CPU wake-up latency: at most 0 us on every host while it runs" in shown.stdout
    assert json.loads(benchsage("plan", "experiment.toml", "--json", cwd=tmp_path).stdout)["cpu_latency"] == 0
    (tmp_path / "experiment.toml").write_text(SPEC.format(limit=0, device="/dev/null").replace("cpu_latency = 0\n", ""))
    assert "cpu_latency" not in json.loads(benchsage("plan", "experiment.toml", "--json", cwd=tmp_path).stdout)


def test_a_host_that_cannot_hold_it_stops_the_experiment_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "experiment.toml").write_text(SPEC.format(limit=5, device="/dev/null"))
    missing = tmp_path / "no-such-device"
    done = benchsage("run", "experiment.toml", "-o", "out", "--quiet", cwd=tmp_path, env={CPU_LATENCY_ENV: str(missing)})
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last == (f"benchsage: error: worker local: cannot hold [experiment] cpu_latency = 5 on its host ({missing}: No such file "
                    "or directory); it takes root and a kernel with PM QoS there; nothing ran")
    assert "Traceback" not in done.stderr
    if (tmp_path / "out" / "journal.sqlite").exists():
        db = sqlite3.connect(tmp_path / "out" / "journal.sqlite")
        assert db.execute("SELECT COUNT(*) FROM trials").fetchone() == (0,)
        db.close()


@pytest.mark.parametrize("value, says", [(-1, "must be at least 0, got -1"), ('"0"', "must be an integer, got a string"),
                                         (0.5, "must be an integer, got a number")])
def test_a_bad_cpu_latency_is_named(tmp_path: Path, value: object, says: str) -> None:
    (tmp_path / "experiment.toml").write_text(SPEC.format(limit=value, device="/dev/null"))
    done = benchsage("plan", "experiment.toml", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"benchsage: error: experiment.toml: [experiment]: key 'cpu_latency' {says}"
