"""Every statement of the answer checked against what was measured: too few runs are never a
clean bill of health, and an outlier that flips Δ% of the means does not flip the effect."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from rich.console import Console

from benchsage.analyze.order import analyze_table
from benchsage.report.terminal import render_analysis
from benchsage.store.table import MetricInfo, TrialTable


def _run(tmp_path: Path, runs: int, tests: int) -> subprocess.CompletedProcess[str]:
    spec = f'[experiment]\nname = "few"\nruns = {runs}\nseed = 5\n' + "".join(
        f'\n[[test]]\nname = "t{i}"\ncommand = "true"\n' for i in range(tests))
    (tmp_path / "spec.toml").write_text(spec)
    return subprocess.run([sys.executable, "-m", "benchsage", "run", "spec.toml", "-o", "out", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300, env=os.environ)


def test_three_runs_per_arm_are_too_few_to_say_no_effect(tmp_path: Path) -> None:
    done = _run(tmp_path, runs=3, tests=2)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "undetectable" and not doc["order_matters"]
    primary = [t for t in doc["tests"] if t["primary"]]
    assert [(t["n_fixed"], t["kw_p"], t["detectable"]) for t in primary] == [(3, None, False)] * 2
    text = subprocess.run([sys.executable, "-m", "benchsage", "analyze", "out"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert text.splitlines()[0] == ("Too few runs to detect an order effect: at 3 values per arm Kruskal-Wallis gives no p-value "
                                    "(it needs 5); see `benchsage plan --pilot`.")
    assert "No order effect" not in text


def test_five_runs_per_arm_cannot_reach_the_level_of_ten_tests(tmp_path: Path) -> None:
    done = _run(tmp_path, runs=5, tests=10)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    primary = [t for t in doc["tests"] if t["primary"]]
    # 5 + 5 values: the least Kruskal-Wallis p is that of complete separation, above 0.05 / 10.
    assert all(t["least_p"] is not None and t["least_p"] > doc["alpha_corrected"] == 0.005 for t in primary)
    assert all(t["kw_p"] >= t["least_p"] for t in primary)
    assert doc["verdict"] == "undetectable"
    least = min(t["least_p"] for t in primary)
    text = subprocess.run([sys.executable, "-m", "benchsage", "analyze", "out"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert text.splitlines()[0] == (f"Too few runs to detect an order effect: at 5 values per arm p ≥ {least:.3g} at best "
                                    "(needs ≤ 0.005); see `benchsage plan --pilot`.")


def test_an_outlier_that_flips_the_means_does_not_flip_the_effect() -> None:
    rng = np.random.default_rng(2)
    fixed = 0.0432 * rng.lognormal(0, 0.02, 30)
    random = 0.0522 * rng.lognormal(0, 0.02, 30)
    fixed[7] = 0.5  # one slow trial in the fixed arm: its mean passes the random arm's
    table = TrialTable.from_columns(test=["json"] * 60, arm=["fixed"] * 30 + ["random"] * 30, value=np.r_[fixed, random],
                                    metric=["wall_time"] * 60, metrics_info={"wall_time": MetricInfo("wall_time", "s", "lower")})
    (row,) = analyze_table(table).tests
    assert row.median_fixed < row.median_random and row.delta_pct > 0  # Δ% of the means says fixed is slower
    assert row.shift_kind == "ratio" and row.shift < 1 and row.shift_ci[1] < 1  # the effect: fixed is faster
    console = Console(file=io.StringIO(), width=120)
    render_analysis(analyze_table(table), console)
    out = console.file.getvalue()
    line = next(line for line in out.splitlines() if line.startswith("json "))
    assert "faster" in line and "slower" not in line and "+" not in line
    assert "Δ%" not in out  # the means' Δ% is in the paper-style table (--all) and the JSON only
    console = Console(file=io.StringIO(), width=120)
    render_analysis(analyze_table(table), console, everything=True)
    assert "Δ% means" in console.file.getvalue()
