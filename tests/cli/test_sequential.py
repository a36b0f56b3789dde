"""Sequential stopping as users script it: `benchsage run` with stop = "sequential" stops at the
first look where every test is decided, or with decide = "verdict" where the experiment's verdict
is settled; bad values of its keys are one line and exit 2.

The experiments here are real runs of sleep-based tests (tiny noise, generous min_effect) whose
order effect is made by the tests themselves: each appends its name to a trace file the reset
empties, and `d` is fast only when `a` and `b` ran before it in that order, which the fixed
order always does and a random order does one time in six.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from terminal import on_a_terminal  # noqa: E402

TIMING = pytest.mark.timing  # decisions taken from measured times (the checks of input need no such care)

EFFECT = """
[experiment]
name = "sequential-effect"
runs = 30
seed = 5
stop = "sequential"
looks = 3
min_effect = 10.0

[reset]
command = ": > trace"

# a and b jitter by up to 9 ms (about +-4 %): still shown within +-10 % at 20 runs, while a shift
# of a millisecond or less (the first trial after a reset can be that much slower, and the
# fixed order always runs a first) is not a significant order effect as it would be without noise.
[[test]]
name = "a"
command = "sleep 0.10$(shuf -i 0-9 -n 1); printf a >> trace"

[[test]]
name = "b"
command = "sleep 0.10$(shuf -i 0-9 -n 1); printf b >> trace"

[[test]]
name = "d"
command = "if [ \\"$(cat trace)\\" = ab ]; then sleep 0.02; else sleep 0.1; fi"
"""

NO_EFFECT = """
[experiment]
name = "sequential-no-effect"
runs = 30
seed = 2
stop = "sequential"
looks = 3
min_effect = 10.0

[reset]
command = "true"

# Both jitter by up to 8-9 ms, as a and b above: a sub-millisecond first-after-reset slowdown
# is then not decided as an order effect, and each is still shown within +-10 %.
[[test]]
name = "short"
command = "sleep 0.0$(shuf -i 50-58 -n 1)"

[[test]]
name = "long"
command = "sleep 0.$(shuf -i 100-109 -n 1)"
"""

# decide = "verdict": d is fast only right after a, b and c in that order, which the fixed order
# always is and none of seed 1's first 8 random orders is (a random order is one time in 24);
# c's 10-30 ms of noise cannot be shown within +-5 % in 12 runs per arm, nor can a and b, whose
# few milliseconds vary more than that. At 4 runs per arm nothing is decided (too few values);
# at 8 d's arms are apart (|z| = 3.36 above the boundary 3.15): the verdict is settled there.
VERDICT = """
[experiment]
name = "sequential-verdict"
runs = 12
seed = 1
stop = "sequential"
looks = 3
min_effect = 5.0
decide = "verdict"

[reset]
command = ": > trace"

[[test]]
name = "a"
command = "printf a >> trace"

[[test]]
name = "b"
command = "printf b >> trace"

[[test]]
name = "c"
command = "sleep 0.0$(shuf -i 10-30 -n 1); printf c >> trace"

[[test]]
name = "d"
command = "if [ \\"$(cat trace)\\" = abc ]; then true; else sleep 0.1; fi"
"""

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sequential-carryover"


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


def statuses(directory: Path) -> dict[str, int]:
    conn = sqlite3.connect(directory / "journal.sqlite")
    try:
        return dict(conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
    finally:
        conn.close()


def run_json(tmp_path: Path, text: str) -> tuple[dict, subprocess.CompletedProcess]:
    spec = tmp_path / "experiment.toml"
    spec.write_text(text)
    done = bench("run", str(spec), "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done


@pytest.mark.slow
@TIMING
def test_a_strong_order_effect_stops_early_decided_effect(tmp_path: Path) -> None:
    doc, done = run_json(tmp_path, EFFECT)
    seq = doc["sequential"]
    # Looks at 10, 20, 30 runs per arm. At 10 no boundary can be crossed (|z| <= 3.78 with 10
    # values per arm, below 4.31); at 20 d's order effect crosses and a and b are shown
    # within +-10 %: every test is decided and the last 20 planned runs are not needed.
    assert seq["max_runs"] == 30 and seq["planned_looks"] == [10, 20, 30]
    assert [look["runs"] for look in seq["looks"]] == [10, 20]
    assert seq["stopped_at_runs"] == 20 and seq["looks"][-1]["decided"] == 3
    assert 0 < seq["looks"][0]["alpha_spent"] < seq["looks"][1]["alpha_spent"] < 0.05
    assert "O'Brien-Fleming" in seq["method"] and "Bonferroni over 3 tests" in seq["method"]
    rows = {t["test"]: t for t in doc["tests"] if t["primary"]}
    assert {name: (r["decided"], r["decided_at_runs"]) for name, r in rows.items()} == {
        "a": ("no-effect", 20), "b": ("no-effect", 20), "d": ("effect", 20)}
    assert all(r["n_fixed"] == r["n_random"] == 20 for r in rows.values())
    # Rows of other metrics are outside the family: null, but present.
    others = [t for t in doc["tests"] if not t["primary"]]
    assert others and all(t["decided"] is None and t["decided_at_runs"] is None for t in others)
    assert statuses(tmp_path / "out") == {"done": 40, "not-needed": 20}
    assert not any("unfinished" in w for w in doc["warnings"])
    assert "look 2 of 3 at 20 runs per arm: 3 of 3 tests decided (effect: d; no-effect: a, b); every test is decided: " \
           "the experiment stops, 20 planned runs are not needed" in done.stderr
    # resume has nothing left to do: the runs the look ruled out are never carried out.
    again = bench("resume", "out", "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert statuses(tmp_path / "out") == {"done": 40, "not-needed": 20}
    assert json.loads(again.stdout)["sequential"] == seq
    # The terminal report says where it stopped and each decision.
    text = bench("analyze", "out", cwd=tmp_path).stdout
    assert "Sequential stopping: stopped at 20 of 30 runs per arm, at look 2 of 3: every test is decided" in text
    assert re.search(r"^a +wall_time +no-effect +20$", text, re.M) and re.search(r"^d +wall_time +effect +20$", text, re.M)


@pytest.mark.slow
@TIMING
def test_the_progress_bar_ends_at_the_runs_needed_and_says_the_rest_were_not(tmp_path: Path) -> None:
    """The bar on the terminal counts down to the runs the experiment needed, not the planned
    ones, and says how many planned runs were not needed; so does a resume of it."""
    spec = tmp_path / "experiment.toml"
    spec.write_text(EFFECT.replace("sleep 0.10$(", "sleep 0.02$(").replace("sleep 0.02; else sleep 0.1", "sleep 0.005; else sleep 0.03")
                    .replace("min_effect = 10.0", "min_effect = 25.0"))
    status, drawn = on_a_terminal("run", str(spec), "-o", "out", "--json", cwd=tmp_path)
    assert status == 0, drawn
    counts = statuses(tmp_path / "out")
    needed, not_needed = counts["done"], counts["not-needed"]
    assert not_needed > 0 and needed + not_needed == 60
    frames = [f for f in re.split(r"[\r\n]+", drawn) if "trials" in f]
    assert f"run {needed}/{needed}, {not_needed} not needed" in frames[-1]
    assert f"{3 * needed}/{3 * needed} trials" in frames[-1]
    assert f"/{3 * 60} trials" in frames[0]  # planned in full until the look that stopped it
    status, drawn = on_a_terminal("resume", "out", cwd=tmp_path)
    assert status == 0, drawn
    last = [f for f in re.split(r"[\r\n]+", drawn) if "trials" in f][-1]
    assert f"run {needed}/{needed}, {not_needed} not needed" in last and f"{3 * needed}/{3 * needed} trials" in last


@pytest.mark.slow
@TIMING
def test_no_order_effect_is_decided_no_effect(tmp_path: Path) -> None:
    doc, _ = run_json(tmp_path, NO_EFFECT)
    seq = doc["sequential"]
    assert seq["stopped_at_runs"] is not None and seq["stopped_at_runs"] < 30
    assert {t["test"]: t["decided"] for t in doc["tests"] if t["primary"]} == {"short": "no-effect", "long": "no-effect"}
    done_runs = statuses(tmp_path / "out")
    assert done_runs == {"done": 2 * seq["stopped_at_runs"], "not-needed": 60 - 2 * seq["stopped_at_runs"]}


def test_a_fixed_experiment_has_no_sequential_fields(tmp_path: Path) -> None:
    doc, _ = run_json(tmp_path, NO_EFFECT.replace('stop = "sequential"\nlooks = 3\nmin_effect = 10.0\n', "")
                      .replace("runs = 30", "runs = 5"))
    assert "sequential" not in doc
    assert all("decided" not in t and "decided_at_runs" not in t for t in doc["tests"])


def test_plan_shows_the_looks_and_that_the_run_may_stop_early(tmp_path: Path) -> None:
    spec = tmp_path / "experiment.toml"
    spec.write_text(EFFECT.replace("looks = 3\n", ""))
    doc = json.loads(bench("plan", str(spec), "--json", cwd=tmp_path).stdout)
    assert doc["stop"] == "sequential"
    assert doc["sequential"]["looks"] == 4 and doc["sequential"]["look_points"] == [8, 15, 23, 30]  # ceil(k 30 / 4)
    text = bench("plan", str(spec), cwd=tmp_path).stdout
    assert "Stopping: sequential, 4 looks after 8, 15, 23, 30 runs per arm" in " ".join(text.split())
    assert "may end before all 60 runs" in " ".join(text.split())
    # Few runs: fewer looks, each adding at least 5 runs per arm.
    assert json.loads(bench("plan", str(spec), "--json", "--runs", "12", cwd=tmp_path).stdout)["sequential"]["look_points"] == [6, 12]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("looks = 31", "key 'looks' (31) is larger than 'runs' (30)"),
        ("looks = 0", "key 'looks' must be at least 1, got 0"),
        ("looks = -2", "key 'looks' must be at least 1, got -2"),
        ("looks = 2.5", "key 'looks' must be an integer"),
        ("min_effect = 0", "key 'min_effect' must be positive, got 0"),
        ("min_effect = -1.5", "key 'min_effect' must be positive, got -1.5"),
        ("min_effect = \"2%\"", "key 'min_effect' must be a number"),
        ("stop = \"early\"", "key 'stop' must be \"fixed\" or \"sequential\", got 'early'"),
    ],
)
def test_bad_values_are_one_line_naming_the_key(tmp_path: Path, line: str, message: str) -> None:
    key = line.split(" = ")[0]
    text = "\n".join(line if row.startswith(key + " = ") else row for row in EFFECT.splitlines())
    spec = tmp_path / "experiment.toml"
    spec.write_text(text)
    for command in (["run", str(spec), "-o", "out"], ["plan", str(spec)]):
        done = bench(*command, cwd=tmp_path)
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert done.stderr.startswith("benchsage: error: experiment.toml: [experiment]: ") and message in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("keys", [("looks = 3",), ("min_effect = 10.0",), ("looks = 3", "min_effect = 10.0"), ('decide = "verdict"',),
                                  ('decide = "each"',)])
def test_looks_and_min_effect_need_stop_sequential(tmp_path: Path, keys: tuple[str, ...]) -> None:
    fixed = "\n".join(row for row in EFFECT.splitlines() if not row.startswith(("stop = ", "looks = ", "min_effect = ")))
    spec = tmp_path / "experiment.toml"
    spec.write_text(fixed.replace("seed = 5", "seed = 5\n" + "\n".join(keys)))
    done = bench("run", str(spec), "-o", "out", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    names = " and ".join(f"'{k.split(' = ')[0]}'" for k in keys)
    assert f"{names} only appl" in done.stderr and 'with stop = "sequential"' in done.stderr


@pytest.mark.parametrize(("line", "message"), [
    ('decide = "first"', "key 'decide' must be \"each\" (stop when every test is decided) or \"verdict\" (stop when an order "
                         "effect is found in some test, or none anywhere), got 'first'"),
    ("decide = 1", "key 'decide' must be a string, got"),
])
def test_an_unknown_decide_is_one_line_naming_the_key(tmp_path: Path, line: str, message: str) -> None:
    spec = tmp_path / "experiment.toml"
    spec.write_text(EFFECT.replace("min_effect = 10.0", "min_effect = 10.0\n" + line))
    for command in (["run", str(spec), "-o", "out"], ["plan", str(spec)]):
        done = bench(*command, cwd=tmp_path)
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert done.stderr.startswith("benchsage: error: experiment.toml: [experiment]: ") and message in done.stderr
    assert not (tmp_path / "out").exists()


def test_plan_shows_the_decide_rule(tmp_path: Path) -> None:
    spec = tmp_path / "experiment.toml"
    spec.write_text(VERDICT)
    assert json.loads(bench("plan", str(spec), "--json", cwd=tmp_path).stdout)["sequential"]["decide"] == "verdict"
    text = " ".join(bench("plan", str(spec), cwd=tmp_path).stdout.split())
    assert ("the experiment stops at the first look where the experiment's verdict is settled (an order effect in some test, "
            "or every test shown smaller than 5%; tests undecided then are reported undecided), so it may end before all 24 "
            "runs") in text
    spec.write_text(EFFECT)
    assert json.loads(bench("plan", str(spec), "--json", cwd=tmp_path).stdout)["sequential"]["decide"] == "each"
    assert "stops at the first look where every test is decided (an order effect, or one shown smaller than 10%)" in \
        " ".join(bench("plan", str(spec), cwd=tmp_path).stdout.split())


@pytest.mark.slow
@TIMING
def test_decide_verdict_stops_at_the_look_that_found_the_effect(tmp_path: Path) -> None:
    """The carry-over experiment of VERDICT: d's order effect is found at 8 runs per arm, and the
    experiment stops there with a, b and c undecided (decide = "each" would go on to 12 for them)."""
    doc, done = run_json(tmp_path, VERDICT)
    seq = doc["sequential"]
    rows = {t["test"]: t for t in doc["tests"] if t["primary"]}
    assert (rows["d"]["decided"], rows["d"]["decided_at_runs"]) == ("effect", 8)
    assert seq["stopped_at_runs"] == 8 and [look["runs"] for look in seq["looks"]] == [4, 8] and seq["max_runs"] == 12
    assert seq["decide"] == "verdict" and seq["verdict"] == "effect" and seq["stopped_because"] == "verdict-settled"
    assert {"test": "c", "metric": "wall_time"} in seq["undecided"] and rows["c"]["decided"] is None
    assert seq["undecided"] == [{"test": t, "metric": "wall_time"} for t in "abc" if rows[t]["decided"] is None]
    assert statuses(tmp_path / "out") == {"done": 16, "not-needed": 8}
    undecided = len(seq["undecided"])
    assert re.search(r"look 2 of 3 at 8 runs per arm: \d of 4 tests decided \(effect: d; .*undecided: [abc, ]+\); the verdict is settled: "
                     rf"an order effect in d, {undecided} tests? undecided: the experiment stops, 8 planned runs are not needed", done.stderr)
    # The terminal and the HTML report say why it stopped, and list c as undecided.
    text = bench("analyze", "out", cwd=tmp_path).stdout
    assert "Sequential stopping: stopped at 8 of 12 runs per arm, at look 2 of 3: the verdict is settled: an order effect in d (" in text
    assert re.search(r"^c +wall_time +undecided +–$", text, re.M) and re.search(r"^d +wall_time +effect +8$", text, re.M)
    assert bench("report", "out", "-o", "report.html", cwd=tmp_path).returncode == 0
    page = " ".join(re.sub(r"<[^>]+>", " ", (tmp_path / "report.html").read_text()).split())
    assert "stopped early at 8 runs per arm (at most 12 runs per arm): the verdict is settled: an order effect in d (" in page
    assert "stopped because the verdict was settled" in page and "stops when the verdict is settled" in page
    # resume has nothing left to do.
    again = bench("resume", "out", "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert statuses(tmp_path / "out") == {"done": 16, "not-needed": 8} and json.loads(again.stdout)["sequential"] == seq


def test_runs_on_the_command_line_below_looks_is_bad_input(tmp_path: Path) -> None:
    spec = tmp_path / "experiment.toml"
    spec.write_text(EFFECT)
    for command in (["run", str(spec), "-o", "out", "--runs", "2"], ["plan", str(spec), "--runs", "2"]):
        done = bench(*command, cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "[experiment]: key 'looks' (3) is larger than --runs 2" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@TIMING
def test_the_carryover_example_is_decided_right_within_20_of_40_runs_per_arm(tmp_path: Path) -> None:
    """examples/sequential-carryover at half its steps' time (its README's run takes about a
    minute): query, which reads a cached index only when the pipeline before it built one,
    "effect"; the steps and the independent checksum "no-effect"; stopped by the second look.
    Steps of 100 ms with min_effect 20%: 20 ms a step, where the example allows 10. In a full
    suite on two cores the first step after the reset (always first in the fixed arm) was once
    decided "effect" at 10%: the reset's python3 and the other tests' load delay it."""
    folder = tmp_path / "sequential-carryover"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("data", "work", "results", "__pycache__"))
    spec = folder / "experiment.toml"
    text = spec.read_text()
    assert text.count("sleep 0.2;") == 4 and "min_effect = 5.0" in text
    spec.write_text(text.replace("sleep 0.2;", "sleep 0.1;").replace("min_effect = 5.0", "min_effect = 20.0"))
    done = bench("run", str(folder / "experiment.toml"), "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    seq = doc["sequential"]
    assert seq["max_runs"] == 40 and seq["stopped_at_runs"] is not None and seq["stopped_at_runs"] <= 20
    shown = [(t["test"], t["median_fixed"], t["median_random"], t["delta_pct"]) for t in doc["tests"] if t["primary"]]
    assert {t["test"]: t["decided"] for t in doc["tests"] if t["primary"]} == {
        "download": "no-effect", "unpack": "no-effect", "index": "no-effect", "query": "effect", "checksum": "no-effect"}, shown
    assert statuses(tmp_path / "out")["not-needed"] == 2 * (40 - seq["stopped_at_runs"])
