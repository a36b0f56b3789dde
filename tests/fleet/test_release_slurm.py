"""`benchsage release DIR` on the real two-node Slurm cluster cancels only the user's own jobs: a
directory someone sent (its workers/allocations.json written by hand, as they would) naming
another user's job is refused, exit 2, the job left alone; naming one of the user's jobs, it
is cancelled. The jobs are held (`sbatch --hold`): they stay pending and never run."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest
import slurmcluster
from test_slurm import cli, wait_for


def held_job(cluster: slurmcluster.Cluster, *as_user: str) -> str:
    done = cluster.run(["sbatch", "--parsable", "--hold", *as_user, "-p", cluster.partition, "-N", "1", "-o", "/dev/null",
                        "--chdir=/", "--wrap", "true"])
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split(";")[0]


def listed(cluster: slurmcluster.Cluster, job: str) -> str:
    return cluster.run(["squeue", "-h", "-j", job, "-o", "%u %T"]).stdout.strip()


def sent_directory(tmp_path: Path, job: str) -> Path:
    out = tmp_path / "sent"
    (out / "workers").mkdir(parents=True, exist_ok=True)
    record = {"kind": "slurm", "hosts": ["c1"], "names": ["c1"], "job": job, "released": False}
    (out / "workers" / "allocations.json").write_text(json.dumps([record]))
    return out


def test_release_cancels_the_users_own_job_and_never_another_users(slurm_cluster: slurmcluster.Cluster, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("submitting a job as another user needs root")
    me = pwd.getpwuid(os.geteuid()).pw_name
    theirs = held_job(slurm_cluster, "--uid=nobody")
    try:
        assert listed(slurm_cluster, theirs) == "nobody PENDING"
        out = sent_directory(tmp_path, theirs)
        for flags in ((), ("--yes",)):
            refused = cli(slurm_cluster, "release", str(out), *flags, cwd=tmp_path)
            assert refused.returncode == 2, refused.stderr
            (line,) = refused.stderr.strip().splitlines()
            assert line == (f"benchsage: error: {out}: Slurm job {theirs} belongs to user nobody, not to you ({me}); not cancelled; "
                            "nothing was released")
            assert listed(slurm_cluster, theirs) == "nobody PENDING"
        mine = held_job(slurm_cluster)
        out = sent_directory(tmp_path, mine)
        done = cli(slurm_cluster, "release", str(out), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"released Slurm job {mine} (c1)"
        wait_for(lambda: listed(slurm_cluster, mine) == "", "the user's own job outlived release")
        assert listed(slurm_cluster, theirs) == "nobody PENDING"
    finally:
        slurm_cluster.run(["scancel", theirs])
    wait_for(lambda: listed(slurm_cluster, theirs) == "", "the other user's job outlived the test")
