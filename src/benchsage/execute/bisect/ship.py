"""Probes on workers of other hosts: each batch ships the worktrees it measures to every worker.

Builds stay on this machine. A batch whose workers have a `dir` (ssh workers, Slurm nodes)
deploys the worktrees of good, bad and the probed commit, as --build left them (untracked and
ignored files included: the binaries are what is measured), from DIR/worktrees/ to each
worker's bisect dir, verified by tree id like any [deploy]. The deploy is incremental: good and
bad travel once per worker, each later probe sends its own worktree, and the previous probe's
is removed there. A worker's bisect dir is its `dir` with "-bisect" appended (its own
experiment's deploy is left alone), else /tmp/benchsage-bisect/<search>/<worker>.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Sequence

from benchsage.agent.deploy import scan, tree_id
from benchsage.errors import UsageError
from benchsage.execute.deploy import DeploySource, Entry
from benchsage.spec import Spec
from benchsage.spec.provision import WORKER_PLACEHOLDER

DIR_SUFFIX = "-bisect"
DEFAULT_ROOT = "/tmp/benchsage-bisect"
_REMOTE_KINDS = ("ssh", "slurm")


def check_workers(spec: Spec) -> None:
    """UsageError (exit 2) for workers a search cannot use: role groups."""
    roles = [w.name for w in spec.workers if w.roles]
    if roles:
        raise UsageError(f"{spec.path}: worker(s) {', '.join(roles)} have roles (client/server): bisect measures on workers "
                         "of one host each; give each host a [[worker]] of its own")


def ships(spec: Spec) -> bool:
    """Whether the search deploys its worktrees: some worker runs on another host or has a dir."""
    return any(w.kind in _REMOTE_KINDS or w.dir is not None for w in spec.workers)


def search_id(directory: str, seed: int) -> str:
    return hashlib.sha256(f"{os.path.abspath(directory)}\0{seed}".encode()).hexdigest()[:12]


def worker_dirs(items: Any, spec: Spec, search: str) -> None:
    """The [[worker]] tables of a probe's spec (parsed TOML, changed in place) pointed at their
    bisect dirs."""
    if not isinstance(items, list):
        items = [items] if isinstance(items, dict) else []
    for item, ws in zip(items, spec.workers):
        if "dir" in item:
            item["dir"] = str(item["dir"]).rstrip("/") + DIR_SUFFIX
        elif ws.kind in _REMOTE_KINDS:
            item["dir"] = f"{DEFAULT_ROOT}/{search}/{WORKER_PLACEHOLDER}"


def source(worktrees: str, folders: Sequence[str]) -> DeploySource:
    """The worktrees in `folders` (names under `worktrees`) as one deploy of the folder
    `worktrees`: every file, built or not, but each worktree's `.git` link to this repository."""
    entries = []
    for folder in sorted(set(folders)):
        top = os.path.join(worktrees, folder)
        if not os.path.isdir(top):
            raise UsageError(f"{top}: the worktree to ship is missing; resume the search to make it again")
        for path, (mode, blob, size) in sorted(scan(top, {".git"}).items()):
            entries.append(Entry(f"{folder}/{path}", mode, blob, size, os.path.join(top, *path.split("/"))))
    entries.sort(key=lambda e: e.path)
    return DeploySource("folder", worktrees, tree_id((e.path, e.mode, e.blob) for e in entries), tuple(entries))
