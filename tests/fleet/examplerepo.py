"""An example of examples/fleet committed in a git repository of its own, as a user's
experiment is: its [deploy] ships that repository's commit."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Mapping


def example_repository(spec: Path, repo: Path, replace: Mapping[str, str]) -> Path:
    """The spec's folder copied to `repo` (without a fake fleet's or a run's state), the spec's
    text with each key of `replace` replaced, all committed; the spec's path there."""
    shutil.copytree(spec.parent, repo, ignore=shutil.ignore_patterns("fleet", "__pycache__", "results"))
    copy = repo / spec.name
    text = copy.read_text()
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    copy.write_text(text)
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the experiment"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True)
    return copy


def tree_of(repo: Path) -> str:
    """The git tree id of the repository's HEAD."""
    return subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
