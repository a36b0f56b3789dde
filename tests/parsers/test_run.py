"""End to end: `benchsage run` of tests read by output parsers journals the parsers' values, and
the analysis warns about a load generator that fell short of the rate it was asked for."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

SPEC = """
[experiment]
name = "parsed"
runs = 2
seed = 3

[[test]]
name = "cpu"
command = "sysbench cpu --events=200 --time=0 --threads=1 run"
output = "sysbench"
primary = ["events_per_second", "p95"]

[[test]]
name = "pg"
command = "cat pgbench-rate-missed.txt; : pgbench -R 5000"  # the output of a pgbench that missed its rate
output = "pgbench"
"""


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="needs sysbench")
def test_run_journals_parsed_metrics_and_warns_of_a_rate_missed(tmp_path: Path) -> None:
    shutil.copy(DATA / "pgbench-rate-missed.txt", tmp_path)
    (tmp_path / "spec.toml").write_text(SPEC)
    done = bench("run", "spec.toml", "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    analysis = json.loads(done.stdout)
    shortfall = [w for w in analysis["warnings"] if "rate its command asked" in w]
    assert shortfall == ["test 'pg': the load generator delivered less than 95% of the rate its command asked in 4 of 4 trials "
                         "(lowest 17.4%; metric rate_delivered): those trials measured a lighter load than asked; lower the rate, "
                         "or add load generator threads or hosts"]
    exported = bench("export", "out", "--format", "jsonl", "-o", "trials.jsonl", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in (tmp_path / "trials.jsonl").read_text().splitlines()]
    values: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        values.setdefault((row["test"], row["metric"]), []).append(row["value"])
    assert values[("pg", "tps")] == [868.646955] * 4
    assert values[("pg", "rate_asked")] == [5000.0] * 4
    assert values[("pg", "lag_max")] == [0.823378] * 4
    cpu = values[("cpu", "events_per_second")]
    assert len(cpu) == 4 and all(v > 0 for v in cpu)
    assert len(values[("cpu", "p95")]) == 4 and len(values[("cpu", "latency_max")]) == 4
