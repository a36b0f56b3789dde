"""LocalWorker: the Worker protocol on this machine, end to end with real processes."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from benchsage.execute.local import LocalWorker
from benchsage.execute.metrics import extract
from benchsage.agent.snapshot import command_files
from benchsage.execute.worker import ProcessRequest, ProcessResult, Worker
from benchsage.spec import MetricSpec
from benchsage.vocabulary import WARN


def test_local_worker_satisfies_the_protocol(tmp_path: Path) -> None:
    worker: Worker = LocalWorker()
    assert worker.name == "local" and LocalWorker("bench-1").name == "bench-1"
    worker.close()


def test_runs_a_trial_and_collects_its_results_file(tmp_path: Path) -> None:
    with LocalWorker() as worker:
        result = worker.run(ProcessRequest("printf '3.5\\n' > r.txt; echo ok", str(tmp_path), collect=("r.txt",)))
    assert result.ok and result.stdout == b"ok\n"
    assert extract(MetricSpec("v", file="r.txt"), result) == 3.5


def test_failures_are_results_not_exceptions(tmp_path: Path) -> None:
    with LocalWorker() as worker:
        assert worker.run(ProcessRequest("exit 7", str(tmp_path))).exit_status == 7
        assert worker.run(ProcessRequest("sleep 5", str(tmp_path), timeout=0.2)).timed_out
        assert worker.run(ProcessRequest("true", str(tmp_path / "gone"))).error is not None


def test_snapshot_names_the_worker_and_hashes_the_test_files(tmp_path: Path) -> None:
    script = tmp_path / "t.sh"
    script.write_text("echo t\n")
    files = command_files("sh ./t.sh", str(tmp_path))
    with LocalWorker("node-a") as worker:
        snap = worker.snapshot(files, str(tmp_path))
    assert snap["worker"] == "node-a"
    assert snap["files"][str(script)] == hashlib.sha256(b"echo t\n").hexdigest()
    assert snap["kernel"] and snap["host"]


def test_a_folder_whose_name_starts_with_two_dots_is_inside_the_specs_folder_on_the_host(tmp_path: Path) -> None:
    import sys

    from benchsage.execute.agentworker import AgentWorker
    from benchsage.execute.transports.local import LocalTransport

    spec_folder, host_dir = tmp_path / "spec", tmp_path / "host"
    for folder in (spec_folder / "..data", host_dir / "..data", tmp_path / "outside"):
        folder.mkdir(parents=True)
    with AgentWorker("copy", LocalTransport(sys.executable), python=[sys.executable], folder=str(spec_folder),
                     host_dir=str(host_dir)) as worker:
        inside = worker.run(ProcessRequest("pwd", str(spec_folder / "..data")))
        outside = worker.run(ProcessRequest("pwd", str(tmp_path / "outside")))
    assert inside.stdout.decode().strip() == str(host_dir / "..data")
    assert outside.stdout.decode().strip() == str(tmp_path / "outside")  # a path outside the folder is the host's own


def test_a_result_travels_without_what_it_usually_says_and_arrives_whole() -> None:
    """The agent leaves out of a result what it usually says (no timeout, no output, no error);
    the controller puts it back: every value, usual or not, arrives as the agent had it."""
    from benchsage.agent.protocol import RESULT_DEFAULTS, encode_result
    from benchsage.execute.replies import read_result

    usual = {"exit_status": 0, "timed_out": False, "wall_time": 0.001, "user_time": 0.0, "sys_time": 0.0, "max_rss": 900,
             "started": 10.0, "ended": 10.001, "stdout": b"", "stderr": b"", "stdout_dropped": 0, "stderr_dropped": 0,
             "files": {}, "error": None, "oom_kills": 0, "leftovers": 0, "spawn": "exec"}
    sent = encode_result(usual)
    assert not set(sent) & set(RESULT_DEFAULTS) and sent["leftovers"] == 0 and sent["exit_status"] == 0
    assert read_result({"result": sent}, 1024) == ProcessResult(**usual)
    unusual = {**usual, "exit_status": None, "timed_out": True, "stdout": b"\x00out", "stderr": b"err", "stdout_dropped": 5,
               "files": {"r.txt": b"3.5\n", "gone": None}, "error": "cannot start", "oom_kills": 2}
    assert set(encode_result(unusual)) == set(unusual) - {"stderr_dropped"}  # still 0
    assert read_result({"result": encode_result(unusual)}, 1024, frozenset({"r.txt", "gone"})) == ProcessResult(**unusual)


BURN = "python3 -c 'import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass'"


def test_a_snapshot_counts_the_trials_cpu_as_the_experiments_not_as_other_work(tmp_path: Path) -> None:
    """The snapshot is taken in the agent's helper process: the trial the agent waited for, a
    second of CPU, is the experiment's own work (not the helper's, which waited for nothing)."""
    with LocalWorker() as worker:
        assert worker.snapshot([], str(tmp_path))["cpu_share"] is None  # the first: nothing to count from yet
        burn = worker.run(ProcessRequest(BURN, str(tmp_path)))
        share = worker.snapshot([], str(tmp_path))["cpu_share"]
    assert burn.ok and burn.user_time + burn.sys_time >= 1.0
    assert share["seconds"] >= burn.wall_time and share["own"] * share["seconds"] >= burn.user_time + burn.sys_time - 0.03, (share, burn)


def test_a_process_the_experiment_did_not_start_is_other_work(tmp_path: Path) -> None:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with LocalWorker() as worker:
            worker.snapshot([], str(tmp_path))
            assert worker.run(ProcessRequest("sleep 1.1", str(tmp_path))).ok
            snapshot = worker.snapshot([], str(tmp_path))
    finally:
        hog.kill()
        hog.wait()
    assert snapshot["cpu_share"]["others"] > 0.5 and snapshot["noise"]["load"]["state"] == WARN, snapshot["noise"]["load"]
    assert snapshot["noise"]["load"]["value"].endswith(f"; other work {snapshot['cpu_share']['others']:.2f} CPUs")
