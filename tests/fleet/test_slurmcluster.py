"""The Slurm cluster itself (examples/fleet/slurmcluster.py): srun reaches each node and
forwards stdin, a crashed node takes its job processes along and comes back, and stop leaves
no daemon, slurmstepd or task behind."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import fleetprocs
import pytest
import slurmcluster


def srun(cluster: slurmcluster.Cluster, node: str, *argv: str) -> list[str]:
    return ["srun", f"--nodelist={node}", "-N1", "-n1", *argv]


def start_task(cluster: slurmcluster.Cluster, node: str, pidfile: Path) -> tuple[subprocess.Popen, list[int]]:
    """A job step on `node` whose task leaves a setsid daemon; returns srun and [task, daemon] pids."""
    job = subprocess.Popen(
        srun(cluster, node, "sh", "-c", f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' </dev/null >/dev/null 2>&1 & "
                                        "echo $$; exec sleep 300"),
        env=cluster.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    task = int(job.stdout.readline())
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, "the task's daemon did not start"
        time.sleep(0.01)
    return job, [task, int(pidfile.read_text())]


def test_srun_reaches_each_node(slurm_cluster: slurmcluster.Cluster) -> None:
    assert slurm_cluster.nodes == ["c1", "c2"]
    assert slurm_cluster.node_states() == {"c1": "idle", "c2": "idle"}
    for node in slurm_cluster.nodes:
        done = slurm_cluster.run(srun(slurm_cluster, node, "python3", "-c",
                                      "import os; print(os.environ.get('SLURMD_NODENAME'))"))
        assert (done.returncode, done.stdout) == (0, f"{node}\n"), done.stderr


def test_srun_forwards_stdin_line_by_line(slurm_cluster: slurmcluster.Cluster) -> None:
    assert slurm_cluster.run(srun(slurm_cluster, "c1", "cat"), input="hi\n").stdout == "hi\n"
    # a conversation, as the agent has with its controller: each reply before the next request
    with subprocess.Popen(srun(slurm_cluster, "c2", "python3", "-u", "-c",
                               "import sys\nfor line in sys.stdin: print(line.strip().upper(), flush=True)"),
                          env=slurm_cluster.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as job:
        for word in ("one", "two", "three"):
            job.stdin.write(word + "\n")
            job.stdin.flush()
            assert job.stdout.readline() == word.upper() + "\n"
        job.stdin.close()
        assert job.wait(timeout=30) == 0


def test_crash_kills_the_nodes_job_processes_and_boot_brings_it_back(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    job, task = start_task(slurm_cluster, "c2", tmp_path / "daemon.pid")
    try:
        slurmd = slurm_cluster.slurmd_pid("c2")
        on_c2 = slurm_cluster.node_processes("c2")
        steps = {pid for pid in on_c2 if Path(f"/proc/{pid}/comm").read_text().strip() == "slurmstepd"}
        assert set(task) | {slurmd} < on_c2 and steps
        assert slurm_cluster.node_processes("c1") == {slurm_cluster.slurmd_pid("c1")}

        slurm_cluster.crash("c2")
        assert not any(fleetprocs.alive(pid) for pid in on_c2)
        assert slurm_cluster.slurmd_pid("c2") is None
        assert slurm_cluster.run(srun(slurm_cluster, "c1", "hostname")).returncode == 0  # c1 carries on
    finally:
        job.kill()  # srun would wait for Slurm to declare c2 down (SlurmdTimeout) and then exit 0
        job.wait()
    slurm_cluster.boot("c2")
    assert slurm_cluster.node_states() == {"c1": "idle", "c2": "idle"}
    done = slurm_cluster.run(srun(slurm_cluster, "c2", "sh", "-c", "echo $SLURMD_NODENAME"))
    assert (done.returncode, done.stdout) == (0, "c2\n"), done.stderr


def test_stop_leaves_nothing_behind(tmp_path_factory: pytest.TempPathFactory, slurm_cluster: slurmcluster.Cluster) -> None:
    # A cluster of its own (slurm_cluster only for its check that Slurm is installed).
    directory = tmp_path_factory.mktemp("slurm-stop")
    cluster = slurmcluster.start(directory, nodes=2)
    try:
        state = cluster._state()
        daemons = [state["munged"]["pid"], state["slurmctld"]["pid"], *(n["pid"] for n in state["nodes"].values())]
        job, task = start_task(cluster, "c1", directory / "daemon.pid")
        steps = {pid for pid in cluster.node_processes("c1")
                 if Path(f"/proc/{pid}/comm").read_text().strip() == "slurmstepd"}
        assert all(fleetprocs.alive(pid) for pid in daemons + task) and steps
        seen = cluster.processes()
        assert set(daemons + task) | steps | {job.pid} <= seen
    finally:
        t0 = time.monotonic()
        cluster.stop()
        stopped_in = time.monotonic() - t0
    assert job.wait(timeout=10) != 0
    assert not any(fleetprocs.alive(pid) for pid in seen)
    assert stopped_in < 5
    # nothing of the cluster anywhere: no daemon naming its folder, no slurmstepd writing its logs
    mark = str(directory).encode()
    left = [p.pid for p in fleetprocs.process_table().values()
            if mark in p.cmdline or any(mark in e for e in p.environ)
            or p.comm in (b"slurmctld", b"slurmd", b"slurmstepd", b"munged")
            and any(f.startswith(f"{directory}/") for f in p.open_files())]
    assert not left
    assert not Path(state["munge_socket"]).exists()
    for port in [state["slurmctld"]["port"], *(n["port"] for n in state["nodes"].values())]:
        with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
