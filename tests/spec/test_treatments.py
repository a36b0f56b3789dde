"""The spec's treatments: a mistake in [context], [observer], [[factor]] or [[compare]] is a
one-line error naming the file and the key; --runs is checked against the treatments too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchsage.errors import SpecError
from benchsage.spec import load_spec

TESTS = '[[test]]\nname = "o3"\ncommand = "./o3"\n[[test]]\nname = "o2"\ncommand = "./o2"\n'


def spec_of(tmp_path: Path, body: str, runs: int = 8):
    path = tmp_path / "experiment.toml"
    path.write_text(f'[experiment]\nname = "t"\nruns = {runs}\nseed = 4\n' + TESTS + body)
    return load_spec(str(path))


@pytest.mark.parametrize("body, runs, expected", [
    ('[[factor]]\nname = "smt"\nlevels = ["on"]\nenv = "SMT"\n', 8,
     "[[factor]] #1 ('smt'): key 'levels' must list at least two levels (two: a 2^k design), got 1"),
    ('[[factor]]\nname = "smt"\nlevels = ["off", "on", "off"]\nenv = "SMT"\n', 8, "key 'levels' must list different levels, got 'off' twice"),
    ('[[factor]]\nname = "smt"\nlevels = [1, 2, 4]\nenv = "SMT"\n', 2,
     "[experiment]: key 'runs' = 2 cannot cover the 3 treatments (3 factor levels)"),
    ('[[factor]]\nname = "a"\nlevels = [1, 2, 4]\nenv = "A"\n[[factor]]\nname = "b"\nlevels = ["x", "y"]\nenv = "B"\n', 4,
     "cannot cover the 6 treatments (3 x 2 factor levels)"),
    ('[[factor]]\nname = "smt"\nlevels = ["off", "on"]\n', 8, "needs 'setup'"),
    ('[context]\nenv_bytes = [4096, 0]\n', 8, "[context]: key 'env_bytes' must be [low, high] with 0 <= low <= high, got [4096, 0] (inverted)"),
    ('[context]\nenv_bytes = [0, 200000]\n', 8, "[context]: key 'env_bytes': at most 131053 bytes, got 200000 (one environment "
                                                "variable, BENCHSAGE_ENV_PAD, holds them: Linux refuses"),
    ('[context]\ncwd_bytes = []\n', 8, "[context]: key 'cwd_bytes' must be [low, high]"),
    ('[context]\ncpus = []\n', 8, "[context]: key 'cpus' must be a non-empty array"),
    ('[context]\naslr = []\n', 8, "[context]: key 'aslr' must be a non-empty array"),
    ('[context]\nvariants = 4\n', 8, "[context]: nothing to vary"),
    ('[context]\nvariants = 4\nlink_order = {objects = ["a.o", "b.o"], build = "make"}\n', 8, "must contain {objects}"),
    ('[context]\nvariants = 12\naslr = [true, false]\n', 8,
     "[experiment]: key 'runs' = 8 cannot cover the 12 treatments (12 contexts): each needs a run in each arm"),
    ('[observer]\nlevels = {none = ""}\n', 8, "[observer]: key 'levels' must be a table of at least two levels"),
    ('[[compare]]\na = "o3"\nb = "o4"\n', 8, "[[compare]] #1: key 'b' names test 'o4', which is not a test of this spec"),
    ('[[compare]]\na = "o3"\nb = "o2"\nmetric = "throughput"\n', 8, "key 'metric' names 'throughput', which test 'o3' does not record"),
    ('[[compare]]\na = "o3"\nb = "o3"\n', 8, "keys 'a' and 'b' name the same test 'o3'"),
])
def test_bad_treatments_are_one_line_errors_naming_the_key(tmp_path: Path, body: str, runs: int, expected: str) -> None:
    with pytest.raises(SpecError) as info:
        spec_of(tmp_path, body, runs=runs)
    message = str(info.value)
    assert expected in message and "\n" not in message and "experiment.toml" in message


def test_runs_on_the_command_line_are_checked_against_the_treatments(tmp_path: Path) -> None:
    path = tmp_path / "experiment.toml"
    path.write_text('[experiment]\nname = "t"\nruns = 8\n' + TESTS + '[context]\nvariants = 8\naslr = [true, false]\n')
    done = subprocess.run([sys.executable, "-m", "benchsage", "plan", str(path), "--runs", "3"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "--runs 3 cannot cover the 8 treatments" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_env_bytes_beyond_what_one_variable_can_hold_is_refused_by_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "experiment.toml"
    path.write_text('[experiment]\nname = "t"\nruns = 8\n' + TESTS + '[context]\nvariants = 2\nenv_bytes = [0, 1048576]\n')
    done = subprocess.run([sys.executable, "-m", "benchsage", "plan", str(path)], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "experiment.toml" in done.stderr and "key 'env_bytes': at most 131053 bytes, got 1048576" in done.stderr
