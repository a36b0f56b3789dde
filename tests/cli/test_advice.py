"""`benchsage plan SPEC --pilot DIR [--effect PCT]`: run advice from a real pilot experiment.

The pilot's tests print a metric with normal noise of a known CV (twelve uniform draws from
/dev/urandom summed, Irwin-Hall), and a reset that sleeps makes resets dominate each run, so the
advice also says what the sequential design saves. The advised runs are checked against an
independent bootstrap with scipy's Kruskal-Wallis on the values read straight from the journal.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from benchsage.design.sequential import default_looks

NOISE = "od -An -w24 -N24 -tu2 /dev/urandom | awk '{{s=0; for(i=1;i<=NF;i++) s+=$i/65536; print \"v: \" 100*(1+{cv}*(s-6))}}'"


def spec_text(tests: dict[str, float], reset: str = "sleep 0.2") -> str:
    text = f'[experiment]\nname = "advice"\nruns = 10\nseed = 5\n\n[reset]\ncommand = "{reset}"\n'
    for name, cv in tests.items():
        command = NOISE.format(cv=cv).replace("\\", "\\\\").replace('"', '\\"')
        text += f'\n[[test]]\nname = "{name}"\ncommand = "{command}"\n[[test.metric]]\nname = "v"\nregex = \'v: ([0-9.]+)\'\n'
    return text


TESTS = {"quiet": 0.01, "noisy": 0.04}


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("advice")
    (root / "spec.toml").write_text(spec_text(TESTS))
    done = bench("run", "spec.toml", "-o", "pilot", "--quiet", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture(scope="module")
def advice(pilot: Path) -> dict:
    done = bench("plan", "spec.toml", "--pilot", "pilot", "--json", cwd=pilot)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def journal_values(directory: Path, test: str) -> np.ndarray:
    """The metric's values of a test's completed trials, read from the SQLite journal directly."""
    with sqlite3.connect(directory / "journal.sqlite") as conn:
        rows = conn.execute(
            """SELECT v.value FROM trial_values v JOIN trials t ON v.trial_id = t.id JOIN tests s ON t.test_id = s.id
               JOIN attempts a ON t.attempt_id = a.id WHERE s.name = ? AND v.metric = 'v' AND a.status = 'done'""", (test,)).fetchall()
    return np.array([r[0] for r in rows])


def scipy_power(pool: np.ndarray, n: int, effect_pct: float, alpha_test: float, reps: int = 1500, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    fixed = rng.choice(pool, (reps, n)) * (1 + effect_pct / 100)
    return float(np.mean(sps.kruskal(fixed, rng.choice(pool, (reps, n)), axis=1).pvalue <= alpha_test))


def test_advice_rows_follow_the_contract_and_noise(advice: dict) -> None:
    rows = {r["test"]: r for r in advice["advice"]}
    assert list(rows) == list(TESTS)
    for name, r in rows.items():
        assert {"test", "metric", "cv", "runs_per_arm"} <= set(r) and r["metric"] == "v"
        assert r["pilot_values"] == 20 and r["effect_pct"] == 2.0 and r["power"] >= 0.8
        assert r["values_per_arm"] == r["runs_per_arm"]  # one worker
        # 20 normal values: s / sigma ~ sqrt(chi2(19) / 19), outside [0.38, 1.77] one time in 10^5
        # (a fixed +-50% failed a clean CI run at 1.515, which happens about once in 1,000).
        low, high = (math.sqrt(sps.chi2.ppf(q, 19) / 19) for q in (0.5e-5, 1 - 0.5e-5))
        assert low <= r["cv"] / TESTS[name] <= high
    assert rows["noisy"]["runs_per_arm"] > 4 * rows["quiet"]["runs_per_arm"] / 2
    summary = advice["advice_summary"]
    assert summary["runs_per_arm"] == rows["noisy"]["runs_per_arm"] and summary["test"] == "noisy"
    assert summary["m"] == 2 and summary["alpha_test"] == pytest.approx(0.025) and summary["correction"] == "bonferroni"
    assert "bootstrap" in summary["method"] and "Kruskal-Wallis" in summary["method"]


def test_advised_runs_reach_the_power_by_scipy_on_the_journals_values(pilot: Path, advice: dict) -> None:
    sd = math.sqrt(0.8 * 0.2 / 1500 + 0.8 * 0.2 / advice["advice_summary"]["reps"])  # this check's and the advice's Monte-Carlo error
    for r in advice["advice"]:
        pool = journal_values(pilot / "pilot", r["test"])
        assert len(pool) == r["pilot_values"]
        assert r["cv"] == pytest.approx(pool.std() / pool.mean(), rel=1e-4)
        n = r["runs_per_arm"]
        assert scipy_power(pool, n, 2.0, 0.025, seed=1) >= 0.8 - 3 * sd, r
        if n > 5:
            assert scipy_power(pool, n - 1, 2.0, 0.025, seed=2) <= 0.8 + 3 * sd, r


def test_durations_come_from_the_journal_and_resets_dominate(advice: dict) -> None:
    summary = advice["advice_summary"]
    assert 0.2 <= summary["reset_seconds"] < summary["run_seconds"]
    assert summary["trial_seconds"] < summary["reset_seconds"]  # echo-fast trials, a 0.2 s reset
    for r in advice["advice"]:
        assert r["expected_seconds"] == pytest.approx(2 * r["runs_per_arm"] * summary["run_seconds"], rel=1e-3)
    seq = summary["sequential"]
    assert seq["max_runs"] == summary["runs_per_arm"] and seq["looks"] == default_looks(seq["max_runs"])  # the spec names none
    for case in ("if_effect", "if_no_effect"):
        c = seq[case]
        assert 0 <= c["saved_runs"] <= seq["max_runs"] and c["expected_runs"] + c["saved_runs"] == pytest.approx(seq["max_runs"])
        assert c["saved_seconds"] == pytest.approx(2 * c["saved_runs"] * summary["run_seconds"], rel=1e-2, abs=1e-3)
    assert seq["if_effect"]["saved_runs"] > seq["if_no_effect"]["saved_runs"]  # effects are found early; no-effect needs narrow CIs
    assert 0.6 < seq["power"] <= 1.0 and "O'Brien-Fleming" in seq["method"]


def test_a_smaller_effect_needs_more_runs(pilot: Path, advice: dict) -> None:
    done = bench("plan", "spec.toml", "--pilot", "pilot", "--effect", "5", "--json", cwd=pilot)
    assert done.returncode == 0, done.stderr
    bigger = {r["test"]: r for r in json.loads(done.stdout)["advice"]}
    for r in advice["advice"]:
        assert bigger[r["test"]]["effect_pct"] == 5.0
        assert bigger[r["test"]]["runs_per_arm"] <= r["runs_per_arm"]
    # Fewer runs, and exactly as many as scipy's Kruskal-Wallis on the journal's values needs for
    # 80 % power at 5 % (how many fewer than at 2 % depends on the pilot's random draws: with few
    # runs the test's discreteness keeps the need above the (5 / 2)^2 of the normal formula).
    n = bigger["noisy"]["runs_per_arm"]
    assert n < advice["advice"][1]["runs_per_arm"]
    sd = math.sqrt(0.8 * 0.2 / 1500 + 0.8 * 0.2 / advice["advice_summary"]["reps"])
    pool = journal_values(pilot / "pilot", "noisy")
    assert scipy_power(pool, n, 5.0, 0.025, seed=3) >= 0.8 - 3 * sd
    if n > 5:
        assert scipy_power(pool, n - 1, 5.0, 0.025, seed=4) <= 0.8 + 3 * sd


def test_terminal_shows_the_table_the_need_and_the_saving(pilot: Path, advice: dict) -> None:
    done = bench("plan", "spec.toml", "--pilot", "pilot", cwd=pilot)
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    n = advice["advice_summary"]["runs_per_arm"]
    assert "Run advice from the pilot pilot" in out and "runs per arm" in out and "expected duration" in out
    assert f"The experiment needs {n} runs per arm (for noisy)" in out and "The plan has 10 runs per arm" in out
    assert 'stop = "sequential"' in out and "Resets take" in out
    # The README's example is this output: the same columns and sentences.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text().split("## How many runs?", 1)[1].split("\n## ", 1)[0]
    example = next(block for block in re.findall(r"```\w*\n(.*?)```", readme, flags=re.S) if "┃" in block)
    header = next(line for line in done.stdout.splitlines() if "runs per arm ┃" in line)
    assert example.splitlines()[0].split() == header.split()
    for sentence in ("The experiment needs", "per worker. The plan has", "Resets take", 'with stop = "sequential", runs =',
                     "if every test has the effect (found on", "if none has."):
        assert sentence in " ".join(example.split()) and sentence in out


def test_imported_data_gives_the_same_advice_without_durations(pilot: Path, advice: dict) -> None:
    done = bench("export", "pilot", "--format", "csv", "-o", "pilot.csv", cwd=pilot)
    assert done.returncode == 0, done.stderr
    done = bench("plan", "spec.toml", "--pilot", "pilot.csv", "--json", cwd=pilot)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [(r["test"], r["runs_per_arm"]) for r in doc["advice"]] == [(r["test"], r["runs_per_arm"]) for r in advice["advice"]]
    summary = doc["advice_summary"]
    assert summary["run_seconds"] is None and summary["sequential"] is None and doc["advice"][0]["expected_seconds"] is None
    text = bench("plan", "spec.toml", "--pilot", "pilot.csv", cwd=pilot).stdout
    assert "record no run durations" in " ".join(text.split())


def test_a_fleets_runs_per_arm_are_shared_out_over_its_workers(tmp_path: Path) -> None:
    workers = ('\n[[worker]]\nname = "a"\nkind = "command"\ntransport = ["env", "A=1"]\n'
               '\n[[worker]]\nname = "b"\nkind = "command"\ntransport = ["env", "B=1"]\n')
    (tmp_path / "spec.toml").write_text(spec_text({"noisy": 0.04}) + workers)
    done = bench("run", "spec.toml", "-o", "pilot", "--runs", "5", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = bench("plan", "spec.toml", "--pilot", "pilot", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    (row,) = doc["advice"]
    assert row["pilot_values"] == 20 and row["runs_per_arm"] == math.ceil(row["values_per_arm"] / 2)
    summary = doc["advice_summary"]
    assert "2 workers" in summary["method"] and any("2 workers are pooled" in note for note in summary["notes"])
    assert row["expected_seconds"] == pytest.approx(2 * row["runs_per_arm"] * summary["run_seconds"], rel=1e-3)
    seq = summary["sequential"]  # the runner's design: both workers' values pooled, looks in runs per worker
    assert seq["max_runs"] == row["runs_per_arm"] and "2 workers pooled" in seq["method"]
    assert seq["if_effect"]["expected_runs"] <= row["runs_per_arm"]


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr


def test_a_pilot_of_other_tests_is_exit_2_naming_them(pilot: Path) -> None:
    (pilot / "other.toml").write_text(spec_text({"quiet": 0.01, "loud": 0.04, "third": 0.02}))
    err = one_line_error(bench("plan", "other.toml", "--pilot", "pilot", cwd=pilot))
    assert "--pilot pilot" in err and "not in the pilot: loud, third" in err and "not in the spec: noisy" in err


def test_a_pilot_with_too_few_runs_is_exit_2_saying_how_many_more(pilot: Path) -> None:
    done = bench("run", "spec.toml", "-o", "short", "--runs", "3", "--quiet", cwd=pilot)
    assert done.returncode == 0, done.stderr
    err = one_line_error(bench("plan", "spec.toml", "--pilot", "short", cwd=pilot))
    assert "--pilot short" in err and "quiet (v): 3 fixed and 3 random" in err and "at least 5 per arm, 2 more" in err


@pytest.mark.parametrize(("args", "message"), [
    (("--effect", "3"), "--effect needs --pilot"),
    (("--pilot", "nowhere"), "--pilot nowhere: no such experiment directory or data file"),
    (("--pilot", "pilot", "--effect", "0"), "--effect"),
])
def test_bad_arguments_are_exit_2(pilot: Path, args: tuple[str, ...], message: str) -> None:
    assert message in one_line_error(bench("plan", "spec.toml", *args, cwd=pilot))
