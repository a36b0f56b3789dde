"""A commit made ready to measure: its worktree under DIR/worktrees/, built once with --build.

Each build is journaled in DIR/builds/<commit>.json (status, exit status, seconds, the tail of
its output; the whole output in <commit>.log) written atomically once the build has ended, so
a build a crash interrupted has no record and runs again in a cleaned worktree, and a finished
one is never run twice.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import asdict, dataclass

from benchsage.execute.bisect import git
from benchsage.store.modes import make_folder

_TAIL = 4096  # bytes of a build's output kept in its record: its last lines say why it failed


@dataclass(frozen=True)
class Build:
    commit: str
    ok: bool
    exit_status: int | None
    seconds: float
    tail: str
    cached: bool = False

    @property
    def last_line(self) -> str:
        lines = [line.strip() for line in self.tail.splitlines() if line.strip()]
        return lines[-1] if lines else f"exit status {self.exit_status}, no output"


def worktree_path(directory: str, commit: str) -> str:
    return os.path.join(os.path.abspath(directory), "worktrees", commit[:12])


def prepare(repo: str, directory: str, commit: str, command: str | None, timeout: float | None = None) -> Build:
    """The commit checked out in its worktree and built (or the journaled build, when its
    worktree is still the one it built)."""
    path = worktree_path(directory, commit)
    record = os.path.join(directory, "builds", f"{commit}.json")
    kept = git.checkout(repo, path, commit)
    if kept and os.path.exists(record):
        with open(record, encoding="utf-8") as fh:
            return Build(**{**json.load(fh), "cached": True})
    if kept:
        git.clean(path, commit)  # a build that was interrupted: start from the commit's files
    if not command:
        build = Build(commit, True, 0, 0.0, "")
    else:
        build = _run(command, path, os.path.join(directory, "builds", f"{commit}.log"), commit, timeout)
    _write(record, build)
    return build


def recorded(directory: str, commit: str) -> Build | None:
    """The journaled build of `commit`, or None (never built, or interrupted)."""
    record = os.path.join(directory, "builds", f"{commit}.json")
    if not os.path.exists(record):
        return None
    with open(record, encoding="utf-8") as fh:
        return Build(**{**json.load(fh), "cached": True})


def _run(command: str, cwd: str, log: str, commit: str, timeout: float | None) -> Build:
    make_folder(os.path.dirname(log))
    start = time.monotonic()
    with open(log, "wb") as out:
        try:
            done = subprocess.run(command, shell=True, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=timeout)
            status: int | None = done.returncode
        except subprocess.TimeoutExpired:
            status = None
    seconds = time.monotonic() - start
    with open(log, "rb") as fh:
        fh.seek(max(0, os.path.getsize(log) - _TAIL))
        tail = fh.read().decode("utf-8", "replace")
    if status is None:
        tail += f"\n(the build ran longer than {timeout:g} s and was stopped)"
    return Build(commit, status == 0, status, round(seconds, 3), tail)


def _write(path: str, build: Build) -> None:
    make_folder(os.path.dirname(path))
    data = asdict(build)
    data.pop("cached")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
