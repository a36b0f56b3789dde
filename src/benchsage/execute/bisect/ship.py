"""Probes on workers of other hosts: each batch ships the worktrees it measures to every worker.

Builds stay on this machine. A batch whose workers have a `dir` (ssh workers, Slurm nodes)
deploys the worktrees of good, bad and the probed commit, as --build left them (untracked and
ignored files included: the binaries are what is measured), from DIR/worktrees/ to each
worker's bisect dir, verified by tree id like any [deploy]. The deploy is incremental: good and
bad travel once per worker, each later probe sends its own worktree, and the previous probe's
is removed there. A worker's bisect dir is its `dir` with "-bisect" appended (its own
experiment's deploy is left alone), else /tmp/benchsage-bisect/<search>/<worker>; a worker with
roles has one on each role's host (/tmp/benchsage-bisect/<search>/<worker>/<role> by default),
every role's host being deployed to, as a [deploy] is. /tmp/benchsage-bisect is shared by the
host's users, as /tmp is (made 01777); every level below it is private to the agent's user
(made 0700, and a level owned by someone else, a symlink or a level others may write is
refused), so that no other user can swap a verified copy or steer its removal.

A search that ends with its answer removes every bisect dir it deployed to (unless --keep-dirs):
each host's agent removes the dir only when its marker names the search's experiment. An
interrupted search leaves them, so that its resume ships only what changed.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Sequence

from benchsage.agent.deploy import scan, tree_id
from benchsage.errors import UsageError
from benchsage.execute.deploy import REPLY_TIMEOUT, DeploySource, Entry, private_top
from benchsage.execute.replies import DEPLOY_REMOVE
from benchsage.spec import Spec, WorkerSpec
from benchsage.spec.provision import WORKER_PLACEHOLDER

DIR_SUFFIX = "-bisect"
DEFAULT_ROOT = "/tmp/benchsage-bisect"
_REMOTE_KINDS = ("ssh", "slurm")


def hosts_of(ws: WorkerSpec) -> list[tuple[str | None, WorkerSpec]]:
    """The hosts of a worker: each role's (by role), or the worker itself (role None)."""
    return [(role, member) for role, member in ws.roles] if ws.roles else [(None, ws)]


def ships(spec: Spec) -> bool:
    """Whether the search deploys its worktrees: some host runs elsewhere or has a dir."""
    return any(h.kind in _REMOTE_KINDS or h.dir is not None for ws in spec.workers for _, h in hosts_of(ws))


def search_id(directory: str, seed: int) -> str:
    return hashlib.sha256(f"{os.path.abspath(directory)}\0{seed}".encode()).hexdigest()[:12]


def worker_dirs(items: Any, spec: Spec, search: str) -> None:
    """The [[worker]] tables of a probe's spec (parsed TOML, changed in place) pointed at their
    bisect dirs."""
    if not isinstance(items, list):
        items = [items] if isinstance(items, dict) else []
    for item, ws in zip(items, spec.workers):
        if ws.roles and isinstance(item.get("roles"), dict):
            for role, host in ws.roles:
                _point(item["roles"][role], host, f"{DEFAULT_ROOT}/{search}/{ws.name}/{role}")
        else:
            _point(item, ws, f"{DEFAULT_ROOT}/{search}/{WORKER_PLACEHOLDER}")


def _point(table: dict[str, Any], host: WorkerSpec, default: str) -> None:
    if "dir" in table:
        table["dir"] = str(table["dir"]).rstrip("/") + DIR_SUFFIX
    elif host.kind in _REMOTE_KINDS:
        table["dir"] = default


def source(worktrees: str, folders: Sequence[str]) -> DeploySource:
    """The worktrees in `folders` (names under `worktrees`) as one deploy of the folder
    `worktrees`: every file, built or not, but each worktree's `.git` link to this repository."""
    entries = []
    for folder in sorted(set(folders)):
        top = os.path.join(worktrees, folder)
        if not os.path.isdir(top):
            raise UsageError(f"{top}: the worktree to ship is missing; resume the search to make it again")
        for path, (mode, blob, size, perm) in sorted(scan(top, {".git"}).items()):
            entries.append(Entry(f"{folder}/{path}", mode, blob, size, os.path.join(top, *path.split("/")), perm))
    entries.sort(key=lambda e: e.path)
    return DeploySource("folder", worktrees, tree_id((e.path, e.mode, e.blob) for e in entries), tuple(entries),
                        private_below=DEFAULT_ROOT)


def bisect_dirs(batch: Spec) -> list[tuple[str, str]]:
    """(host's worker name, bisect dir) of every host a batch of the search deploys to."""
    return [(host.name, host.dir) for ws in batch.workers for _, host in hosts_of(ws) if host.dir is not None]


def remove_dirs(batch: Spec, log_dir: str) -> list[tuple[str, str, str | None]]:
    """Remove the bisect dir of every host of `batch` (a batch's spec: its workers' dirs are the
    search's): (host, dir, None when removed or absent, else why it is left), in the spec's
    order. The hosts are connected for it and closed again; raises WorkerError or
    WorkerSetupError when one cannot be."""
    from benchsage.execute.fleet import connect_all, make_worker

    hosts = [host for ws in batch.workers for _, host in hosts_of(ws) if host.dir is not None]
    if not hosts:
        return []
    agents = [make_worker(host, batch.folder, log_dir) for host in hosts]
    out: list[tuple[str, str, str | None]] = []
    try:
        connect_all(agents)
        for host, agent in zip(hosts, agents):
            assert host.dir is not None
            reply = agent.ask({"op": "deploy", "step": "remove", "dir": host.dir, "experiment": batch.name,
                               "private_below": private_top(DEFAULT_ROOT, host.dir)}, REPLY_TIMEOUT, DEPLOY_REMOVE)
            why = reply.get("why") or reply.get("refused")  # a refusal (a link swapped in) is the agent's why too
            out.append((host.name, host.dir, None if reply.get("removed") or why == "absent" else str(why)))
    finally:
        for agent in agents:
            agent.close()
    return out


def shared_reset_roles(spec: Spec, test: str) -> tuple[str, ...]:
    """The roles other than the test's whose hosts run a reset command before every run. It runs
    once per run, in bad's copy: whatever it starts there (a server) serves the run's good, bad
    and probe trials alike, so a change there is seen only through what the test runs itself."""
    roles = spec.roles
    if not roles or spec.reset is None:
        return ()
    own = next((t.role for t in spec.tests if t.name == test), None) or roles[0]
    if spec.reset.steps:
        named = {r for step in spec.reset.steps if step.kind == "command" for r in (roles if step.role is None else (step.role,))}
    else:
        named = set(roles) if spec.reset.kind == "command" and spec.reset.command.strip() else set()
    return tuple(r for r in roles if r in named and r != own)
