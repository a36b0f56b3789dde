"""The repository a search runs over: revisions, the first-parent line, worktrees, subjects.

Every call is `git -C REPO ...`; the user's checkout is only read, never changed. Worktrees are
added detached under the search's directory and re-used, or cleaned, when a killed search left
them behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from benchsage.errors import UsageError


def _git(repo: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, errors="replace")
    except FileNotFoundError:
        raise UsageError("bisect needs git on the PATH") from None
    if check and done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise UsageError(f"git -C {repo} {' '.join(args)} failed: {last}")
    return done


def repository_root(path: str) -> str:
    """The top folder of the git repository holding `path`."""
    if not os.path.isdir(path):
        raise UsageError(f"--repo {path}: no such folder")
    done = _git(path, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0:
        raise UsageError(f"{path} is not in a git repository; give the repository of the code to bisect with --repo DIR")
    return done.stdout.strip()


def resolve(repo: str, rev: str, option: str) -> str:
    """The commit `rev` names, as a full hash."""
    done = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise UsageError(f"{option} {rev}: unknown revision in {repo} (a commit hash, branch or tag is expected)")
    return done.stdout.strip()


def first_parent_line(repo: str, good: str, bad: str) -> list[str]:
    """The commits after good up to bad on bad's first-parent line, oldest first (bad last)."""
    if good == bad:
        raise UsageError(f"--good and --bad name the same commit {good[:12]}: there is nothing to bisect")
    if _git(repo, "merge-base", "--is-ancestor", good, bad, check=False).returncode != 0:
        raise UsageError(f"--good {good[:12]} is not an ancestor of --bad {bad[:12]}: swap them, or pick a good commit older than bad")
    line = _git(repo, "rev-list", "--first-parent", "--reverse", f"{good}..{bad}").stdout.split()
    return line


def subject(repo: str, commit: str) -> str:
    # --no-show-signature: a repository's log.showSignature would run its gpg.program.
    return _git(repo, "log", "-1", "--no-show-signature", "--format=%s", commit).stdout.strip()


def head_of(path: str) -> str | None:
    done = _git(path, "rev-parse", "HEAD", check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def checkout(repo: str, path: str, commit: str) -> bool:
    """A detached worktree of `commit` at `path`. A worktree already there at that commit is
    kept (True: its build may be reused); anything else there (another commit, a half-made
    worktree, a stray folder) is removed and the worktree made again (False)."""
    if os.path.isdir(path) and head_of(path) == commit and _is_worktree_of(repo, path):
        return True
    if os.path.lexists(path):
        _git(repo, "worktree", "remove", "--force", path, check=False)
        if os.path.lexists(path):
            shutil.rmtree(path, ignore_errors=True)
    _git(repo, "worktree", "prune")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _git(repo, "worktree", "add", "--detach", "--force", path, commit)
    return False


def clean(path: str, commit: str) -> None:
    """Back to the commit's files: what an interrupted build left is removed."""
    _git(path, "checkout", "--force", "--detach", commit)
    _git(path, "clean", "-fdxq")


def _is_worktree_of(repo: str, path: str) -> bool:
    listing = _git(repo, "worktree", "list", "--porcelain").stdout
    real = os.path.realpath(path)
    return any(os.path.realpath(line[len("worktree "):]) == real for line in listing.splitlines() if line.startswith("worktree "))
