"""Creating an experiment writes its whole plan and what its analysis needs into the journal, so
that resume reads the plan back and the analysis reads data only, never the spec."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchsage.design.experiment import plan_experiment
from benchsage.design.treatments import Treatment
from benchsage.execute.create import create_experiment
from benchsage.spec import load_spec
from benchsage.store.importers.benchsage import read_experiment
from benchsage.store.journal import Journal

SPEC = """
[experiment]
name = "claims"
runs = 8
seed = 11

[[test]]
name = "a"
command = "true"

[[test]]
name = "b"
command = "true"

[[compare]]
a = "a"
b = "b"

[[compare]]
a = "b"
b = "a"
metric = "user_time"

[context]
variants = 2
env_bytes = [0, 64]
cpus = ["0"]

[observer]
levels = {env = "env --", none = ""}

[[factor]]
name = "mode"
levels = ["slow", "fast"]
env = "MODE"

[[worker]]
kind = "ssh"
host = "node1"
ssh_config = "ssh_config"
"""

RECORDED = {
    "compare": [{"a": "a", "b": "b", "metric": None}, {"a": "b", "b": "a", "metric": "user_time"}],
    "observer_levels": ["env", "none"],
    "observer_baseline": "none",
    "factors": [{"name": "mode", "levels": ["slow", "fast"]}],
    "context_dimensions": ["env_bytes", "cpus"],
}


def _create(tmp_path: Path) -> Path:
    (tmp_path / "ssh_config").write_text("Host node1\n  HostName 127.0.0.1\n")
    (tmp_path / "experiment.toml").write_text(SPEC)
    spec = load_spec(tmp_path / "experiment.toml")
    create_experiment(spec, plan_experiment(spec), str(tmp_path / "out")).close()
    return tmp_path / "out"


def test_the_journal_records_what_the_analysis_reads_of_the_spec(tmp_path: Path) -> None:
    out = _create(tmp_path)
    meta = Journal.open(out, read_only=True).meta()
    assert {key: meta[key] for key in RECORDED} == RECORDED
    provenance = read_experiment(out).provenance
    assert {key: provenance[key] for key in RECORDED} == RECORDED


def test_the_analysis_never_reads_the_spec_or_its_folder(tmp_path: Path) -> None:
    """The spec and the files it names may be gone, or differ, where the journal is analysed."""
    out = _create(tmp_path)
    (tmp_path / "ssh_config").unlink()
    (tmp_path / "experiment.toml").write_text("this is not the spec any more")
    provenance = read_experiment(out).provenance
    assert {key: provenance[key] for key in RECORDED} == RECORDED


def test_a_journal_written_before_the_record_reads_the_same_from_its_copy_of_the_spec(tmp_path: Path) -> None:
    out = _create(tmp_path)
    journal = Journal.open(out)
    journal.conn.execute(f"DELETE FROM meta WHERE key IN ({', '.join('?' * len(RECORDED))})", tuple(RECORDED))
    journal.close()
    assert not set(RECORDED) & set(Journal.open(out, read_only=True).meta())
    (tmp_path / "ssh_config").unlink()
    provenance = read_experiment(out).provenance
    assert {key: provenance[key] for key in RECORDED} == RECORDED


def test_the_cells_the_journal_records_are_the_cells_the_plan_drew(tmp_path: Path) -> None:
    out = _create(tmp_path)
    spec = load_spec(tmp_path / "experiment.toml")
    plan = plan_experiment(spec)
    described = Journal.open(out, read_only=True).meta()["treatments"]
    assert len(described) == 2 * 2 * 2 and len(plan.cells) == len(described)
    assert tuple(Treatment.from_record(i, d) for i, d in enumerate(described)) == plan.cells


def test_a_comparison_without_treatments_is_answered(tmp_path: Path) -> None:
    """[[compare]] alone (no contexts, observer levels or factors) is a claim the analysis answers."""
    spec = tmp_path / "experiment.toml"
    spec.write_text('[experiment]\nname = "claim"\nruns = 5\nseed = 3\n[[test]]\nname = "fast"\ncommand = "true"\n'
                    '[[test]]\nname = "slow"\ncommand = "sleep 0.02"\n[[compare]]\na = "fast"\nb = "slow"\n')
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", str(spec), "-o", str(tmp_path / "out"), "--quiet", "--json"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stderr
    (comparison,) = json.loads(done.stdout)["comparisons"]
    assert (comparison["a"], comparison["b"], comparison["better"]) == ("fast", "slow", "a")
    assert comparison["ratio"] < 0.5
