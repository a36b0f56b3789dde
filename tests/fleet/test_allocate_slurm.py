"""Workers allocated from Slurm (`nodes = N`) on the real two-node cluster: one worker per node,
[init] once on each, and the allocation released whatever happens (the end, Slurm's refusal,
Ctrl-C, a lost node), or by `benchsage release DIR` after the controller was killed."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import slurmcluster
from examplerepo import example_repository, tree_of
from journalcheck import count, rows
from test_slurm import benchsage, cli, no_jobs, wait_for


def write_spec(tmp_path: Path, cluster: slurmcluster.Cluster, *, nodes: int = 2, command: str = "true", runs: int = 2,
               reconnect: float = 20, constraint: str | None = None) -> Path:
    text = (f'[experiment]\nname = "alloc"\nruns = {runs}\nseed = 3\n'
            f'[init]\ncommand = "echo $SLURMD_NODENAME >> {tmp_path}/inits"\n'
            f'[[worker]]\nkind = "slurm"\nnodes = {nodes}\npartition = "{cluster.partition}"\ntime = "00:10:00"\n'
            + (f'constraint = "{constraint}"\n' if constraint else "") +
            f'reconnect_timeout = {reconnect}\n'
            f'[[test]]\nname = "a"\ncommand = "{command}"\n[[test]]\nname = "b"\ncommand = "echo $SLURMD_NODENAME"\n')
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return path


def in_a_trial(cluster: slurmcluster.Cluster, spec: Path, out: str, flag: Path) -> subprocess.Popen:
    """`benchsage run` started, returned once a trial is in flight (it touches `flag`)."""
    proc = subprocess.Popen(benchsage("run", str(spec), "-o", out, "--quiet"), cwd=spec.parent, env=cluster.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    wait_for(lambda: flag.exists() or proc.poll() is not None, "no trial started")
    return proc


def jobs(cluster: slurmcluster.Cluster) -> str:
    return cluster.run(["squeue", "-h", "-o", "%i %j %T"]).stdout.strip()


def allocations(out: Path) -> list[dict]:
    with sqlite3.connect(out / "journal.sqlite") as conn:
        return json.loads(conn.execute("SELECT value FROM meta WHERE key = 'allocations'").fetchone()[0])


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fleet" / "slurm.toml"


@pytest.mark.slow
def test_the_slurm_example_allocates_two_nodes_deploys_initializes_and_releases(slurm_cluster: slurmcluster.Cluster,
                                                                                tmp_path: Path) -> None:
    """examples/fleet/slurm.toml, committed in a repository of its own, at 2 runs per arm."""
    spec = example_repository(EXAMPLE, tmp_path / "repo", {"/tmp/benchsage-slurm-demo/": f"{tmp_path / 'nodes'}/",
                                                           'partition = "bench"': f'partition = "{slurm_cluster.partition}"'})
    plan = json.loads(cli(slurm_cluster, "plan", str(spec), "--json", cwd=tmp_path).stdout)
    assert plan["provisioning"][0] == "Slurm: 2 nodes from partition bench (time 00:15:00), one worker per node, named when allocated"
    assert [w["name"] for w in plan["workers"]] == ["node-1", "node-2"]
    done = cli(slurm_cluster, "run", str(spec), "-o", "out", "--runs", "2", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert jobs(slurm_cluster) == ""
    out = tmp_path / "out"
    assert dict(rows(out, "SELECT worker, COUNT(*) FROM runs WHERE status = 'done' GROUP BY worker")) == {"c1": 4, "c2": 4}
    tree = tree_of(spec.parent)
    assert rows(out, "SELECT worker, dir, tree FROM deploys ORDER BY worker") == [
        (node, str(tmp_path / "nodes" / node), tree) for node in ("c1", "c2")]
    # [init] ran once on each node, not once per run, each in its own dir.
    assert rows(out, "SELECT worker, status FROM inits ORDER BY worker") == [("c1", "ok"), ("c2", "ok")]
    assert all((tmp_path / "nodes" / node / "data" / "corpus.bin").stat().st_size == 1 << 20 for node in ("c1", "c2"))
    (record,) = allocations(out)
    assert record["kind"] == "slurm" and record["hosts"] == ["c1", "c2"] and record["released"] is True and record["job"]


def test_more_nodes_than_the_partition_has_are_refused(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, slurm_cluster, nodes=3)
    refused = cli(slurm_cluster, "run", str(spec), "-o", "out", "--quiet", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith('benchsage: error: [[worker]] kind "slurm" nodes = 3') and "Slurm refused:" in line
    assert "Requested partition configuration not available now" in line and "nothing ran" in line
    assert jobs(slurm_cluster) == ""
    assert not (tmp_path / "out" / "journal.sqlite").exists()


def test_a_constraint_picks_the_nodes_of_that_hardware_type_or_is_refused(slurm_cluster: slurmcluster.Cluster,
                                                                           tmp_path: Path) -> None:
    spec = write_spec(tmp_path, slurm_cluster, nodes=1, constraint="m510")  # c2's Features (c1 is a c220g2)
    done = cli(slurm_cluster, "run", str(spec), "-o", "out", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert dict(rows(tmp_path / "out", "SELECT worker, COUNT(*) FROM runs WHERE status = 'done' GROUP BY worker")) == {"c2": 4}
    assert jobs(slurm_cluster) == ""
    spec = write_spec(tmp_path, slurm_cluster, nodes=2, constraint="m510")  # one node has it
    refused = cli(slurm_cluster, "run", str(spec), "-o", "out2", "--quiet", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith('benchsage: error: [[worker]] kind "slurm" nodes = 2') and "Slurm refused:" in line, line
    assert "nothing ran" in line and jobs(slurm_cluster) == ""


@pytest.mark.slow
def test_interrupt_releases_and_kill_then_release_frees(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    # SIGINT once a trial is in flight (it touches a file): exit 3, the job is gone.
    flag = tmp_path / "in-trial"
    fast = tmp_path / "fast"
    spec = write_spec(tmp_path, slurm_cluster, command=f"touch {flag}; test -e {fast} || sleep 30")
    proc = in_a_trial(slurm_cluster, spec, "out", flag)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3, stderr
    assert "interrupted" in stderr
    assert jobs(slurm_cluster) == ""
    assert allocations(tmp_path / "out")[0]["released"] is True
    wait_for(lambda: no_jobs(slurm_cluster), "a job step outlived the interrupted experiment")
    # kill -9 of the controller leaves the job; `benchsage release DIR` frees it and says so.
    flag.unlink()
    proc = in_a_trial(slurm_cluster, spec, "out2", flag)
    proc.kill()
    proc.communicate()
    assert jobs(slurm_cluster) != ""
    (record,) = allocations(tmp_path / "out2")
    assert record["released"] is False
    freed = cli(slurm_cluster, "release", "out2", cwd=tmp_path)
    assert freed.returncode == 0, freed.stderr
    assert freed.stdout.strip() == f"released Slurm job {record['job']} (c1, c2)"
    assert jobs(slurm_cluster) == ""
    assert allocations(tmp_path / "out2")[0]["released"] is True
    wait_for(lambda: no_jobs(slurm_cluster), "a job step outlived the released allocation")
    # resume allocates anew, gives the nodes the recorded worker names, finishes, releases again.
    fast.touch()
    again = cli(slurm_cluster, "resume", "out2", cwd=tmp_path, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"Slurm job {record['job']} (c1, c2) is gone; allocated Slurm job" in again.stderr
    assert jobs(slurm_cluster) == ""
    assert dict(rows(tmp_path / "out2", "SELECT worker, COUNT(*) FROM runs WHERE status = 'done' GROUP BY worker")) == {"c1": 4, "c2": 4}


@pytest.mark.slow
def test_kill_then_resume_re_uses_the_live_job_and_releases_it(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    flag = tmp_path / "in-trial"
    fast = tmp_path / "fast"
    spec = write_spec(tmp_path, slurm_cluster, command=f"touch {flag}; test -e {fast} || sleep 30")
    proc = in_a_trial(slurm_cluster, spec, "out", flag)
    proc.kill()
    proc.communicate()
    (record,) = allocations(tmp_path / "out")
    assert record["released"] is False and record["job"] in jobs(slurm_cluster)
    fast.touch()
    again = cli(slurm_cluster, "resume", "out", cwd=tmp_path, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"re-using Slurm job {record['job']} (c1, c2)" in again.stderr
    (after,) = allocations(tmp_path / "out")
    assert after["job"] == record["job"] and after["released"] is True
    assert jobs(slurm_cluster) == ""
    assert dict(rows(tmp_path / "out", "SELECT worker, COUNT(*) FROM runs WHERE status = 'done' GROUP BY worker")) == {"c1": 4, "c2": 4}
    wait_for(lambda: no_jobs(slurm_cluster), "a job step outlived the resumed experiment")


def test_a_controller_killed_while_salloc_waits_leaves_a_request_release_frees(slurm_cluster: slurmcluster.Cluster,
                                                                               tmp_path: Path) -> None:
    """The job request is recorded before salloc runs: a kill -9 while Slurm has not granted
    it yet (both nodes held by another job) leaves salloc waiting on its own; `benchsage
    release DIR` finds the job by its name and cancels it."""
    held = slurm_cluster.run(["salloc", "--no-shell", "--exclusive", "-N", "2", "-p", slurm_cluster.partition, "--job-name=holder"])
    assert held.returncode == 0, held.stderr
    try:
        spec = write_spec(tmp_path, slurm_cluster)
        proc = subprocess.Popen(benchsage("run", str(spec), "-o", "out", "--quiet"), cwd=tmp_path, env=slurm_cluster.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        wait_for(lambda: "benchsage-alloc-" in jobs(slurm_cluster) or proc.poll() is not None, "no job was asked for")
        proc.kill()
        proc.communicate()
        (asked,) = [line.split() for line in jobs(slurm_cluster).splitlines() if "benchsage-alloc-" in line]
        assert asked[2] == "PENDING"
        freed = cli(slurm_cluster, "release", "out", cwd=tmp_path)
        assert freed.returncode == 0, freed.stderr
        assert freed.stdout.strip() == f"released Slurm job request {asked[1]}"
        wait_for(lambda: "benchsage-alloc-" not in jobs(slurm_cluster), "the request outlived release")
    finally:
        slurm_cluster.run(["scancel", "--name=holder"])
    wait_for(lambda: jobs(slurm_cluster) == "" and no_jobs(slurm_cluster), "a job or salloc outlived the test")


@pytest.mark.slow
def test_a_lost_node_still_releases(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, slurm_cluster, command="sleep 0.3", reconnect=2)
    out = tmp_path / "out"
    proc = subprocess.Popen(benchsage("run", str(spec), "-o", "out", "--quiet"), cwd=tmp_path, env=slurm_cluster.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        wait_for(lambda: (out / "journal.sqlite").exists() and count(out, "SELECT COUNT(*) FROM runs WHERE worker = 'c2' AND status = 'done'") > 0
                 or proc.poll() is not None, "c2 did not finish its first run")
        assert proc.poll() is None
        slurm_cluster.crash("c2")
        down = slurm_cluster.run(["scontrol", "update", "NodeName=c2", "State=DOWN", "Reason=crashed"])
        assert down.returncode == 0, down.stderr
        _, stderr = proc.communicate(timeout=90)
        assert proc.returncode == 3, stderr
        assert "1 of 2 workers lost (c2:" in stderr and "the other 1 finished" in stderr, stderr
        assert jobs(slurm_cluster) == ""
        assert allocations(out)[0]["released"] is True
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if slurm_cluster.slurmd_pid("c2") is None:
            slurm_cluster.boot("c2")
    wait_for(lambda: no_jobs(slurm_cluster), "a job step outlived the lost experiment")
