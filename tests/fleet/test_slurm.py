"""Slurm workers against a real two-node cluster on this machine (examples/fleet/slurmcluster.py):
the agent runs as a job step on the node it names and measures trials there, whole experiments
run on c1 and c2, an unknown node is refused before anything runs, and a node that crashes
mid-experiment is a lost worker that `benchsage resume` completes; `benchsage bisect` holds one
allocation for its whole search, and a search killed keeps it for `resume`, which releases it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest
import slurmcluster
from journalcheck import complete_and_unduplicated, count, rows

from benchsage.design.plan import make_plan, worker_seed
from benchsage.execute.agentworker import AgentWorker
from benchsage.execute.transports import SlurmTransport
from benchsage.execute.worker import ProcessRequest

TESTS = ("a", "b", "c")
MEASURED = "SELECT id, attempt_id, worker, run_id, position, wall_time, stdout_tail FROM trials"


def write_spec(tmp_path: Path, workers: list[str], *, runs: int = 2, reconnect: float = 20, test_command: str = "sleep 0.01",
               srun_args: dict[str, list[str]] | None = None) -> Path:
    """An experiment of three tests on one slurm worker per node in `workers`."""
    text = f'[experiment]\nname = "slurm"\nruns = {runs}\nseed = 5\n'
    for node in workers:
        text += f'[[worker]]\nkind = "slurm"\nnode = "{node}"\nreconnect_timeout = {reconnect}\n'
        if srun_args and node in srun_args:
            text += f"srun_args = {json.dumps(srun_args[node])}\n"
    text += f'[[test]]\nname = "a"\ncommand = "{test_command}"\n'
    text += '[[test]]\nname = "b"\ncommand = "true"\n[[test]]\nname = "c"\ncommand = "echo $SLURMD_NODENAME $BENCH_TAG"\n'
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return path


def benchsage(*args: str) -> list[str]:
    return [sys.executable, "-m", "benchsage", *args]


def cli(cluster: slurmcluster.Cluster, *args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """benchsage on the command line, with SLURM_CONF naming the test cluster (srun finds it so)."""
    return subprocess.run(benchsage(*args), cwd=cwd, env=cluster.env(), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)





def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def no_jobs(cluster: slurmcluster.Cluster) -> bool:
    """Only the cluster's daemons are left: no srun, slurmstepd or task of any job."""
    try:
        return {comm(pid) for pid in cluster.processes()} <= {"munged", "slurmctld", "slurmscriptd", "slurmd"}
    except OSError:  # a process ended while we looked
        return False


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def test_trials_run_and_are_measured_on_the_node(slurm_cluster: slurmcluster.Cluster, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_CONF", slurm_cluster.conf)
    with AgentWorker("c1", SlurmTransport("c1"), python=["python3"]) as worker:
        hello = worker.connect()
        # The agent is the task of a job step on c1: SLURMD_NODENAME says so, and its parent
        # is c1's slurmstepd.
        assert hello["slurm_node"] == "c1"
        agent = hello["pid"]
        assert agent in slurm_cluster.node_processes("c1") and agent not in slurm_cluster.node_processes("c2")
        assert comm(parent(agent)) == "slurmstepd" and parent(agent) in slurm_cluster.node_processes("c1")

        r = worker.run(ProcessRequest("echo $SLURMD_NODENAME $SLURM_JOB_NAME; echo e >&2; exit 3", str(tmp_path), timeout=10))
        assert (r.exit_status, r.stdout, r.stderr, r.spawn) == (3, b"c1 benchsage-c1\n", b"e\n", "shell")
        times = [worker.run(ProcessRequest("sleep 0.02", str(tmp_path))).wall_time for _ in range(10)]
        assert all(0.02 <= t < 0.5 for t in times)
        # Spawned by the agent on the node, a trial reports its own memory, not the controller's.
        assert worker.run(ProcessRequest("true", str(tmp_path))).max_rss < 20_000
        snap = worker.snapshot([], str(tmp_path), [("sh -c true", str(tmp_path))])
        assert (snap["worker"], snap["worker_kind"], snap["transport"]) == ("c1", "slurm", "srun on c1")
        assert snap["agent_pid"] == agent and snap["files"] and snap["boot_id"]
        assert worker.run(ProcessRequest("sleep 5", str(tmp_path), timeout=0.2)).timed_out
    # A goodbye ends the job step: nothing of it stays on the node or in the queue.
    wait_for(lambda: no_jobs(slurm_cluster), "the job step outlived the worker's goodbye")
    assert slurm_cluster.run(["squeue", "-h"]).stdout == ""


def test_fleet_experiment_on_two_nodes(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    srun_args = [f"--partition={slurm_cluster.partition}", "--export=ALL,BENCH_TAG=tagged"]
    spec = write_spec(tmp_path, ["c1", "c2"], srun_args={"c2": srun_args})
    done = cli(slurm_cluster, "run", str(spec), "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    complete_and_unduplicated(out, 2, 2, len(TESTS))
    # Each worker carried out the whole plan: the same fixed order, its own random orders
    # (from the experiment seed and its name).
    runs = rows(out, "SELECT worker, arm, test_order FROM runs ORDER BY id")
    assert Counter(w for w, _, _ in runs) == {"c1": 4, "c2": 4}
    assert {o for _, arm, o in runs if arm == "fixed"} == {"[0, 1, 2]"}
    random = {}
    for node in ("c1", "c2"):
        plan = make_plan(TESTS, 2, worker_seed(5, node, 2))
        random[node] = [json.loads(o) for w, arm, o in runs if w == node and arm == "random"]
        assert random[node] == [list(r.order) for r in plan.runs if r.arm == "random"]
    assert random["c1"] != random["c2"]
    # Every trial ran on its worker's node (c2's with its srun_args), and its snapshot says where.
    outputs = rows(out, "SELECT t.worker, t.stdout_tail FROM trials t WHERE t.test_id = 2")
    assert sorted(outputs) == [("c1", b"c1\n")] * 4 + [("c2", b"c2 tagged\n")] * 4
    for worker, snapshot in rows(out, "SELECT worker, snapshot FROM attempts"):
        snap = json.loads(snapshot)
        assert (snap["worker_kind"], snap["transport"]) == ("slurm", f"srun on {worker}")
    assert json.loads(done.stdout)["tests"]
    wait_for(lambda: no_jobs(slurm_cluster), "a job step outlived the experiment")


def test_unknown_node_is_refused_before_anything_runs(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, ["c1", "c9"])
    done = cli(slurm_cluster, "run", str(spec), "-o", "out", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (error,) = done.stderr.strip().splitlines()
    assert error.startswith("benchsage: error: worker c9: Slurm has no node 'c9' (srun: error: ")
    assert error.endswith("check `sinfo -N`; nothing ran") and "c1" not in error
    assert count(tmp_path / "out", "SELECT COUNT(*) FROM attempts") == 0
    wait_for(lambda: no_jobs(slurm_cluster), "the agent on c1 outlived the refused experiment")


def test_node_crash_loses_that_worker_alone_and_resume_finishes(slurm_cluster: slurmcluster.Cluster,
                                                                tmp_path: Path) -> None:
    spec = write_spec(tmp_path, ["c1", "c2"], reconnect=2, test_command="sleep 0.3")
    out = tmp_path / "out"
    proc = subprocess.Popen(benchsage("run", str(spec), "-o", "out", "--quiet"), cwd=tmp_path,
                            env=slurm_cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True)
    try:
        # Crash c2 once it has finished a run: three more remain, each sleeping 0.3 s.
        wait_for(lambda: count(out, "SELECT COUNT(*) FROM runs WHERE worker = 'c2' AND status = 'done'") > 0
                 or proc.poll() is not None, "c2 did not finish its first run")
        assert proc.poll() is None
        slurm_cluster.crash("c2")
        # slurmctld declares a silent node down after SlurmdTimeout (here ~30 s) and fails its
        # jobs; srun then prints "Node failure" and exits 0. Declare it down now, as it would.
        down = slurm_cluster.run(["scontrol", "update", "NodeName=c2", "State=DOWN", "Reason=crashed"])
        assert down.returncode == 0, down.stderr
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 3, stderr
        assert "Traceback" not in stderr
        # srun exited 0: only the missing goodbye, and srun's words in the worker's log, tell.
        failure = "Slurm reports a failure of node c2 (srun: error: Node failure on c2)"
        assert f"worker c2: {failure} during run " in stderr and "reconnecting (up to 2 s)" in stderr
        errors = [line for line in stderr.splitlines() if line.startswith("benchsage: error:")]
        assert errors == [stderr.strip().splitlines()[-1]]
        assert errors[0].startswith("benchsage: error: 1 of 2 workers lost (c2: worker c2: lost during run ")
        assert "did not come back within 2 s" in errors[0] and "the other 1 finished" in errors[0]
        assert "`benchsage resume out` continues exactly the missing runs" in errors[0]
        # c1 finished alone; c2 lost the run in flight and kept what it had finished.
        done = dict(rows(out, "SELECT worker, COUNT(*) FROM runs WHERE status = 'done' GROUP BY worker"))
        assert done["c1"] == 4 and 0 < done["c2"] < 4
        failed = rows(out, "SELECT worker, detail FROM attempts WHERE status != 'done'")
        assert len(failed) == 1 and failed[0][0] == "c2" and failure in failed[0][1], failed
        wait_for(lambda: no_jobs(slurm_cluster), "a job step outlived the lost experiment")
        # The reconnects' job requests, queued while c2 was down, were withdrawn, not left to
        # take the node when it comes back.
        assert slurm_cluster.run(["squeue", "-h", "-t", "PENDING", "-o", "%i %j %R"]).stdout == ""
        measured = set(rows(out, MEASURED))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if slurm_cluster.slurmd_pid("c2") is None:
            slurm_cluster.boot("c2")
    again = cli(slurm_cluster, "resume", "out", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    complete_and_unduplicated(out, 2, 2, len(TESTS))
    # Exactly the missing runs were carried out: nothing on c1; what was measured is untouched.
    assert rows(out, "SELECT COUNT(*) FROM attempts WHERE worker = 'c1'") == [(4,)]
    assert count(out, "SELECT COUNT(*) FROM attempts WHERE worker = 'c2' AND status = 'done'") == 4
    assert measured <= set(rows(out, MEASURED))
    wait_for(lambda: no_jobs(slurm_cluster), "a job step outlived the resumed experiment")


def test_a_pair_of_roles_on_two_nodes(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    """A group whose roles are Slurm nodes: the server on c1, the client on c2, each role's agent a
    job step on its node; the client runs the tests, the server's collector reads its node."""
    text = ('[experiment]\nname = "slurm-pair"\nruns = 2\nseed = 5\n[reset]\ncommand = "echo reset on $SLURMD_NODENAME"\n'
            '[[worker]]\nname = "pair"\n[worker.roles.server]\nkind = "slurm"\nnode = "c1"\n'
            '[worker.roles.client]\nkind = "slurm"\nnode = "c2"\n'
            '[[test]]\nname = "load"\nrole = "client"\ncommand = "echo $SLURMD_NODENAME"\n'
            '[[collector]]\nname = "server_node"\nrole = "server"\nkind = "command"\n'
            'command = "sh -c \'echo $SLURMD_NODENAME | tr -d c\'"\n')
    spec = tmp_path / "experiment.toml"
    spec.write_text(text)
    done = cli(slurm_cluster, "run", str(spec), "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert {stdout for (stdout,) in rows(out, "SELECT stdout_tail FROM trials")} == {b"c2\n"}
    assert {v for (v,) in rows(out, "SELECT value FROM trial_values WHERE metric = 'server_node'")} == {1.0}
    resets = [stdout for (stdout,) in rows(out, "SELECT reset_stdout FROM attempts")]
    assert len(resets) == 4 and all(b"[pair/server] echo" in r and b"reset on c1" in r and b"reset on c2" in r for r in resets)
    wait_for(lambda: no_jobs(slurm_cluster), "a role's job step outlived the experiment")


def test_a_pair_of_roles_in_one_heterogeneous_allocation(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    """A group whose roles are the components of one heterogeneous allocation (`salloc ... : ...`):
    each role's agent is `srun --het-group=N`, on the node Slurm gave that component."""
    import re

    part = f"--partition={slurm_cluster.partition}"
    granted = slurm_cluster.run(["salloc", "--no-shell", part, "-N1", "-w", "c2", ":", part, "-N1", "-w", "c1"])
    job = re.search(r"Granted job allocation (\d+)", granted.stderr)
    assert job, granted.stderr
    try:
        text = ('[experiment]\nname = "het"\nruns = 2\nseed = 5\n[reset]\ncommand = "true"\n'
                '[[worker]]\nname = "pair"\n[worker.roles.server]\nkind = "slurm"\nhet_group = 0\n'
                '[worker.roles.client]\nkind = "slurm"\nhet_group = 1\n'
                '[[test]]\nname = "load"\nrole = "client"\ncommand = "echo $SLURMD_NODENAME $SLURM_JOB_ID"\n'
                '[[collector]]\nname = "server_node"\nrole = "server"\nkind = "command"\n'
                'command = "sh -c \'echo $SLURMD_NODENAME | tr -d c\'"\n')
        spec = tmp_path / "experiment.toml"
        spec.write_text(text)
        plan = subprocess.run(benchsage("plan", str(spec), "--json"), cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert plan.returncode == 0, plan.stderr
        roles = json.loads(plan.stdout)["workers"][0]["roles"]
        assert [(r["role"], r["target"]) for r in roles] == [("server", "slurm het-group 0"), ("client", "slurm het-group 1")]
        done = subprocess.run(benchsage("run", str(spec), "-o", "out"), cwd=tmp_path, env={**slurm_cluster.env(), "SLURM_JOB_ID": job.group(1)},
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        out = tmp_path / "out"
        assert {stdout for (stdout,) in rows(out, "SELECT stdout_tail FROM trials")} == {f"c1 {job.group(1)}\n".encode()}
        assert {v for (v,) in rows(out, "SELECT value FROM trial_values WHERE metric = 'server_node'")} == {2.0}
    finally:
        slurm_cluster.run(["scancel", job.group(1)])
    wait_for(lambda: slurm_cluster.run(["squeue", "-h"]).stdout == "", "the allocation outlived scancel")


def bisect_repo(tmp_path: Path) -> tuple[Path, Path, dict]:
    """examples/bisect's generated repository, small: 6 commits, a 40 % slowdown at the third,
    no noise, 12 runs a probe (at 8, one run reversed by a load spike keeps the good-bad check's
    two-sided p, 2 x 2/256, above its level 0.01125: a CI run's search ended "no-change"); (its
    folder, the search's output folder, its commits by role)."""
    import importlib.util

    example = Path(__file__).resolve().parents[2] / "examples" / "bisect" / "make_repo.py"
    loader = importlib.util.spec_from_file_location("benchsage_example_bisect", example)
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    repo = tmp_path / "repo"
    hashes = module.make_repo(str(repo), commits=6, change=3, slowdown=40.0, noise=0.0, work=8.0, runs=12)
    return repo, tmp_path / "search", hashes


def test_bisect_allocates_once_for_the_whole_search_and_releases(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    """`nodes = 2`: one Slurm job for every batch of the search, cancelled at its end."""
    repo, out, hashes = bisect_repo(tmp_path)
    spec = repo / "experiment.toml"
    text = spec.read_text().replace('command = "./checksum 8.0 0.0"', 'command = "./checksum 8.0 0.0; echo job=$SLURM_JOB_ID"')
    spec.write_text(text + f'[[worker]]\nkind = "slurm"\nnodes = 2\npartition = "{slurm_cluster.partition}"\ndir = "{tmp_path}/{{worker}}"\n')
    done = cli(slurm_cluster, "bisect", "experiment.toml", "--good", hashes["good"], "--bad", "main", "--build", "make", "--seed", "2",
               "-o", str(out), "--json", "--quiet", cwd=repo, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["bisect"]["first_bad"] == hashes["change"]
    (allocation,) = json.loads((out / "workers" / "allocations.json").read_text())
    assert allocation["released"] and sorted(allocation["hosts"]) == ["c1", "c2"]
    jobs, batches = set(), list((out / "probes").glob("*/look-*"))
    assert len(batches) >= 3
    for batch in batches:
        assert sorted(w for w, in rows(batch, "SELECT DISTINCT worker FROM trials WHERE status = 'ok'")) == ["c1", "c2"]
        jobs |= {line for tail, in rows(batch, "SELECT stdout_tail FROM trials") for line in tail.decode().split() if line.startswith("job=")}
    assert jobs == {f"job={allocation['job']}"}  # every trial of every batch ran in the search's one job
    wait_for(lambda: no_jobs(slurm_cluster), "a job step outlived the search")
    assert slurm_cluster.run(["squeue", "-h"]).stdout == ""


def test_a_bisect_killed_keeps_its_job_for_resume_which_releases_it(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    import os
    import signal

    repo, out, hashes = bisect_repo(tmp_path)
    spec = repo / "experiment.toml"
    spec.write_text(spec.read_text() + f'[[worker]]\nkind = "slurm"\nnodes = 2\npartition = "{slurm_cluster.partition}"\n')
    argv = benchsage("bisect", "experiment.toml", "--good", hashes["good"], "--bad", "main", "--build", "make", "--seed", "2",
                     "-o", str(out), "--json", "--quiet")
    proc = subprocess.Popen(argv, cwd=repo, env=slurm_cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    wait_for(lambda: bool(list((out / "probes").glob("0*/look-0/journal.sqlite"))) or proc.poll() is not None,
             "the first probe never began", timeout=120)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    (held,) = json.loads((out / "workers" / "allocations.json").read_text())
    assert not held["released"] and slurm_cluster.run(["squeue", "-h", "-j", held["job"]]).stdout.strip()
    done = cli(slurm_cluster, "resume", str(out), "--json", cwd=repo, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["bisect"]["first_bad"] == hashes["change"]
    assert f"re-using Slurm job {held['job']}" in done.stderr
    (after,) = json.loads((out / "workers" / "allocations.json").read_text())
    assert after["job"] == held["job"] and after["released"]
    wait_for(lambda: no_jobs(slurm_cluster), "a job step outlived the search")
    assert slurm_cluster.run(["squeue", "-h"]).stdout == ""
    dirs = {d for batch in (out / "probes").glob("*/look-*") for d, in rows(batch, "SELECT dir FROM deploys")}
    assert len(dirs) == 2 and all(d.startswith("/tmp/benchsage-bisect/") for d in dirs)  # no `dir`: one per search and node
    leftovers = [d for d in dirs if Path(d).parent.exists()]
    for d in leftovers:
        subprocess.run(["rm", "-rf", str(Path(d).parent)], check=True)
    assert not leftovers  # the search has its answer: its bisect dirs are removed, the search's folder with them
