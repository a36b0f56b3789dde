"""README examples run as written, so they cannot rot."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SPEC = """
[experiment]
name = "quickstart"
runs = 12
seed = 1
[reset]
command = "rm -f state"
[[test]]
name = "second-is-warm"
command = "test -e state && sleep 0.01 || { touch state; sleep 0.05; }"
[[test]]
name = "warms"
command = "touch state"
"""


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.fixture()
def experiment_dir(tmp_path: Path) -> Path:
    (tmp_path / "experiment.toml").write_text(SPEC)
    done = subprocess.run(
        [sys.executable, "-m", "benchsage", "run", "experiment.toml", "-o", "results/quickstart-20260101T000000Z", "--quiet"],
        cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return tmp_path


@pytest.mark.slow
def test_readme_python_example_runs(experiment_dir: Path) -> None:
    blocks = python_blocks((ROOT / "README.md").read_text())
    assert blocks, "the README has a Python example"
    for code in blocks:
        done = subprocess.run([sys.executable, "-c", code], cwd=experiment_dir, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "second-is-warm" in done.stdout  # the tables
        assert "between fixed and random order" in done.stdout or "No order effect" in done.stdout  # the verdict
    report = experiment_dir / "report.html"
    assert report.exists() and report.stat().st_size > 10_000


def test_readme_shell_commands_name_real_subcommands() -> None:
    text = (ROOT / "README.md").read_text()
    blocks = "\n".join(re.findall(r"```sh\n(.*?)```", text, flags=re.S))
    used = set(re.findall(r"^benchsage (\w+)", blocks, flags=re.M))
    from benchsage.cli import cli

    assert used and used <= set(cli.commands)


def test_readme_setup_is_two_commands_and_ci_runs_its_test_command() -> None:
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set-up: two commands", 1)[1].split("## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", setup, flags=re.S)
    assert len(commands) == 2
    assert "benchsage run examples/quickstart/experiment.toml" in commands[0]
    test_command = commands[1].strip()
    assert test_command in (ROOT / ".ci" / "run").read_text()
