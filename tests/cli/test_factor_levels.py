"""A factor of three levels end to end: `plan` counts its cells, `run` measures each in both
arms, `analyze --json` gives an ANOVA of it, the terminal and the HTML report show it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SPEC = """
[experiment]
name = "levels"
runs = 3
seed = 2

[[factor]]
name = "size"
levels = [1, 2, 3]
env = "SIZE"

[[test]]
name = "t"
command = "echo $((SIZE * 100))"
[[test.metric]]
name = "out"
regex = '([0-9]+)'
"""


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


def test_a_three_level_factor_is_planned_run_and_analysed(tmp_path: Path) -> None:
    (tmp_path / "experiment.toml").write_text(SPEC)
    plan = bench("plan", "experiment.toml", "--json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert [c["factors"] for c in json.loads(plan.stdout)["treatments"]] == [{"size": "1"}, {"size": "2"}, {"size": "3"}]
    done = bench("run", "experiment.toml", "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["factorial"]
    assert row["design"] == "anova" and row["test"] == "t" and row["metric"] == "out" and row["r"] == 2
    assert row["levels"] == {"size": ["1", "2", "3"]} and row["effects"]["size"] == {"1": -100.0, "2": 0.0, "3": 100.0}
    size, error = row["terms"]
    # no error at all: p is the least a test of these cells can give, 1 / (6! / (2! 2! 2!)), never 0
    assert (size["term"], size["df"], size["ss"], size["variation_pct"]) == ("size", 2, 40000.0, 100.0)
    assert size["p"] == pytest.approx(1 / 90, rel=1e-12)
    assert (error["term"], error["df"], error["ss"]) == ("error", 3, 0.0)
    shown = bench("analyze", "out", cwd=tmp_path)
    assert "Factorial design: size (1, 2, 3); allocation of variation with an F test per term" in shown.stdout
    report = bench("report", "out", "-o", "report.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "report.html").read_text()
    assert "Allocation of variation (ANOVA of a full factorial design" in html and "Levels: size: 1, 2, 3 (r = 2 replications per cell)." in html
