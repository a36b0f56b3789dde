"""`benchsage plan SPEC` says when the runs per arm cannot show an order effect at the corrected
level of the spec's primary comparisons, and puts the numbers in its JSON ("detectable")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import special

PYTHON = sys.executable


def spec_text(runs: int, tests: int, *, metrics: int = 0, extra: str = "", workers: int = 1) -> str:
    text = f'[experiment]\nname = "detect"\nruns = {runs}\nseed = 3\n{extra}\n'
    for w in range(workers if workers > 1 else 0):
        text += f'[[worker]]\nname = "w{w}"\nkind = "command"\ntransport = ["env", "W={w}"]\npython = "{PYTHON}"\n\n'
    for t in range(tests):
        text += f'[[test]]\nname = "t{t}"\ncommand = "echo {t}"\n'
        for k in range(metrics):
            text += f'[[test.metric]]\nname = "m{k}"\nregex = \'([0-9]+)\'\n'
        text += "\n"
    return text


def plan(tmp_path: Path, text: str, *args: str) -> tuple[dict, str]:
    """The plan's "detectable" object, and its terminal output on one line."""
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    env = {**os.environ, "COLUMNS": "400"}
    done = subprocess.run([PYTHON, "-m", "benchsage", "plan", str(spec), "--json", *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    shown = subprocess.run([PYTHON, "-m", "benchsage", "plan", str(spec), *args], capture_output=True, text=True, cwd=tmp_path,
                           timeout=120, env=env)
    assert shown.returncode == 0, shown.stderr
    return json.loads(done.stdout)["detectable"], " ".join(shown.stdout.split())


def test_three_runs_per_arm_cannot_show_an_order_effect(tmp_path: Path) -> None:
    d, text = plan(tmp_path, spec_text(3, 2))
    assert d["least_p"] is None and d["detectable"] is False and d["values_per_arm"] == 3
    assert d["least_runs_per_arm"] == 5 and d["alpha_corrected"] == pytest.approx(0.025) and d["comparisons"] == 2
    assert ("warning: 3 runs per arm cannot show an order effect: the analysis gives no p-value below 5 runs per arm; "
            "5 runs per arm can.") in text


def test_five_runs_per_arm_cannot_reach_the_level_of_ten_tests(tmp_path: Path) -> None:
    d, text = plan(tmp_path, spec_text(5, 10))
    assert d["least_p"] == pytest.approx(special.chdtrc(1, 75 / 11)) and d["detectable"] is False
    assert d["alpha_corrected"] == pytest.approx(0.005) and d["least_runs_per_arm"] == 6  # 6 + 6: p = 0.0039
    assert ("warning: 5 runs per arm cannot reach the corrected level 0.005 for 10 tests: Kruskal-Wallis gives "
            "p >= 0.0090 at best; 6 runs per arm can. See `benchsage plan --pilot`") in text


def test_enough_runs_say_nothing_and_the_json_says_why(tmp_path: Path) -> None:
    d, text = plan(tmp_path, spec_text(5, 10), "--runs", "8")
    assert d["detectable"] is True and d["runs_per_arm"] == 8 and d["least_p"] < d["alpha_corrected"]
    assert "cannot" not in text


def test_declared_metrics_are_the_family(tmp_path: Path) -> None:
    d, text = plan(tmp_path, spec_text(6, 4, metrics=2))  # 8 primary comparisons: 0.05 / 8 = 0.00625
    assert d["comparisons"] == 8 and d["tests"] == 4 and d["detectable"] is True
    d, text = plan(tmp_path, spec_text(6, 8, metrics=2))  # 16: 0.0031 < p 0.0039 of 6 + 6
    assert d["comparisons"] == 16 and d["detectable"] is False and d["least_runs_per_arm"] == 7
    assert "cannot reach the corrected level 0.00313 for 16 primary comparisons" in text


def test_sequential_stopping_says_its_boundaries_are_stricter(tmp_path: Path) -> None:
    d, text = plan(tmp_path, spec_text(5, 10, extra='stop = "sequential"\nlooks = 1\n'))
    assert d["sequential"] is True and d["detectable"] is False
    assert "6 runs per arm can (the sequential looks' boundaries are stricter still)" in text


def test_a_fleets_runs_are_counted_on_every_worker_by_van_elterens_test(tmp_path: Path) -> None:
    d, text = plan(tmp_path, spec_text(3, 10, workers=2))
    assert d["workers"] == 2 and d["values_per_arm"] == 6 and d["least_p"] is not None
    assert d["detectable"] is False and d["least_runs_per_arm"] == 4
    assert "3 runs per arm on each of 2 workers cannot reach the corrected level 0.005 for 10 tests: van Elteren's test" in text
    assert "4 runs per arm on each worker can" in text
