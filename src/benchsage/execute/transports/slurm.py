"""Slurm: the agent runs as a one-task job step on one node (`srun --nodelist=NODE -N1 -n1`), or
on the node of one component of the heterogeneous allocation benchsage runs in (`srun
--het-group=N -N1 -n1`: salloc or sbatch with components for the roles of a group).

srun forwards its stdin to the task and the task's stdout back. srun exits 0 even after a
node failure, so only the agent's own goodbye means that a worker finished.
"""

from __future__ import annotations

import re

from benchsage.execute.transports.base import Failure, last_line, python_failure


class SlurmTransport:
    kind = "slurm"

    def __init__(self, node: str | None, srun_args: list[str] | None = None, python: str = "python3", name: str | None = None,
                 *, het_group: int | None = None, job: str | None = None) -> None:
        self.node = node  # None: the node Slurm gave the allocation's component `het_group`
        self.het_group = het_group
        self.job = job  # the allocation benchsage made for the experiment (srun --jobid); None: the user's own
        self.srun_args = list(srun_args or ())
        self.python = python
        self.name = (name or node or f"het-group-{het_group}").replace("/", "-")

    def argv(self, command: list[str]) -> list[str]:
        where = f"--nodelist={self.node}" if self.node else f"--het-group={self.het_group}"
        job = [f"--jobid={self.job}"] if self.job else []
        return ["srun", *job, where, "-N1", "-n1", f"--job-name=benchsage-{self.name}", *self.srun_args, *command]

    def describe(self) -> str:
        return f"srun on {self.node}" if self.node else f"srun --het-group={self.het_group}"

    def explain(self, exit_status: int | None, stderr: str) -> Failure | None:
        if re.search(r"Invalid node name|invalid node name|Requested node configuration is not available", stderr):
            return Failure(f"Slurm has no node {self.node!r} ({last_line(stderr)}); check `sinfo -N`", setup=True)
        if self.node is None and re.search(r"het|job", stderr, re.I) and exit_status not in (0, None):
            return Failure(f"srun --het-group={self.het_group} failed: {last_line(stderr)} (run benchsage inside a heterogeneous "
                           "allocation: salloc or sbatch with one component per role)", setup=True)
        if re.search(r"Invalid partition|invalid account|Invalid qos|Unable to allocate resources", stderr):
            return Failure(f"srun refused the job: {last_line(stderr)}", setup=True)
        # srun's last words after a node failure are about the aborted step; the failure is the news.
        failed = re.search(r"^.*Node failure on .*$", stderr, re.M)
        if failed:
            return Failure(f"Slurm reports a failure of node {self.node} ({failed.group(0).strip()})")
        return python_failure(self.python, exit_status, stderr)
