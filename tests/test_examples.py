"""The real-workload examples: every examples/*/experiment.toml passes `benchsage plan` with the
treatments its README promises, and each example whose programs are installed runs for real
at a reduced size (real redis-server, gcc, sysbench and stress-ng processes; the journal in
real SQLite), leaving no server or background load behind once its cleanup has run."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SPECS = sorted(EXAMPLES.glob("*/experiment.toml"))
# What a run leaves in an example's folder; not copied, so each test starts from the sources.
GENERATED = shutil.ignore_patterns("run", "build", "results", "o2", "o3", "*.tmp", "._*", "__pycache__",
                                   "fleet", "nginx")  # a fake fleet's and a service's state from a run by hand


def benchsage(*args: str, cwd: Path = ROOT, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout)


def plan_of(spec: Path) -> dict:
    done = benchsage("plan", str(spec), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def missing(*programs: str) -> list[str]:
    return [p for p in programs if shutil.which(p) is None]


def needs(*programs: str) -> pytest.MarkDecorator:
    absent = missing(*programs)
    return pytest.mark.skipif(bool(absent), reason=f"not installed: {', '.join(absent)} (Debian packages, see .ci/run)")


def copy_example(name: str, tmp_path: Path) -> Path:
    """The example's sources in a fresh folder, so a run neither writes into the checkout nor
    meets another run's server or binaries."""
    target = tmp_path / name
    shutil.copytree(EXAMPLES / name, target, ignore=GENERATED)
    return target


def run_example(folder: Path, runs: int) -> tuple[dict, list[dict[str, str]]]:
    """`benchsage run` at `runs` runs per arm, then `analyze --json` and the tidy export."""
    out = folder / "results" / "test"
    done = benchsage("run", str(folder / "experiment.toml"), "--runs", str(runs), "-o", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    analysed = benchsage("analyze", str(out), "--json")
    assert analysed.returncode == 0, analysed.stderr
    table = folder / "tidy.csv"
    exported = benchsage("export", str(out), "--format", "csv", "-o", str(table))
    assert exported.returncode == 0, exported.stderr
    with open(table, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return json.loads(analysed.stdout), rows


def assert_all_trials_ok(rows: list[dict[str, str]], metric: str, tests: set[str], runs: int) -> None:
    """Every planned trial (2 arms x runs x tests) finished ok and yielded the declared metric."""
    assert {r["status"] for r in rows} == {"ok"}, {(r["test"], r["status"], r["reason"]) for r in rows if r["status"] != "ok"}
    parsed = [r for r in rows if r["metric"] == metric]
    assert {r["test"] for r in parsed} == tests
    assert len(parsed) == 2 * runs * len(tests)
    assert all(float(r["value"]) > 0 for r in parsed)


def alive(pid: int, name: str) -> bool:
    """Whether pid is a living (not zombie) process whose command names `name`."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return name.encode() in argv0 and state not in (b"Z", b"X")


def pids(log: Path) -> list[int]:
    return [int(line) for line in log.read_text().split()] if log.exists() else []


# --------------------------------------------------------------------------------------------
# Every example plans, and its README says how to plan, run and analyse it


def test_there_are_real_workload_examples() -> None:
    names = {spec.parent.name for spec in SPECS}
    assert {"quickstart", "fleet", "redis", "measurement-bias", "factorial"} <= names


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.parent.name)
def test_every_example_passes_plan(spec: Path, tmp_path: Path) -> None:
    # The fleet's ssh_config is written by `fakefleet.py start` (git-ignored): planning needs no fleet.
    doc = plan_of(spec)
    assert doc["tests"] and doc["total_runs"] == 2 * doc["runs_per_arm"] * len(doc["workers"])


@pytest.mark.parametrize("name", ["redis", "measurement-bias", "factorial"])
def test_readme_says_how_to_plan_run_and_analyse(name: str) -> None:
    readme = (EXAMPLES / name / "README.md").read_text()
    for command in ("benchsage plan", "benchsage run", "benchsage analyze", "benchsage report"):
        assert f"{command} " in readme, f"examples/{name}/README.md does not show {command}"
    assert f"benchsage run examples/{name}/experiment.toml" in readme


def test_redis_plan_restarts_the_server_before_every_run() -> None:
    doc = plan_of(EXAMPLES / "redis" / "experiment.toml")
    assert [t["name"] for t in doc["tests"]] == ["set", "get", "incr", "lpush", "lpop"]
    assert doc["reset"] == "python3 server.py restart"
    assert doc["runs_per_arm"] == 30 and doc["treatments"] == []


def test_measurement_bias_plan_has_eight_contexts_over_every_dimension() -> None:
    doc = plan_of(EXAMPLES / "measurement-bias" / "experiment.toml")
    contexts = doc["treatments"]
    assert [c["context"] for c in contexts] == [f"c{i}" for i in range(1, 9)]
    objects = ["main.o", "scan.o", "smooth.o", "tables.o"]
    for c in contexts:
        assert 0 <= c["env_bytes"] <= 4096 and 0 <= c["cwd_bytes"] <= 256
        assert sorted(c["link_order"]) == objects
    assert {c["aslr"] for c in contexts} == {True, False}
    assert len({tuple(c["link_order"]) for c in contexts}) > 1
    # Every context is measured in both arms, equally often.
    runs = doc["workers"][0]["runs"]
    for c in contexts:
        arms = [r["arm"] for r in runs if r["treatment"]["context"] == c["context"]]
        assert arms.count("fixed") == arms.count("random") == doc["runs_per_arm"] // 8


def test_measurement_bias_spec_compares_o3_with_o2() -> None:
    from benchsage.spec import load_spec

    spec = load_spec(str(EXAMPLES / "measurement-bias" / "experiment.toml"))
    assert [(c.a, c.b) for c in spec.treatments.compare] == [("o3", "o2")]
    assert spec.treatments.context is not None and spec.treatments.context.link_order is not None
    assert "{objects}" in spec.treatments.context.link_order.build


def test_factorial_plan_crosses_three_two_level_factors() -> None:
    doc = plan_of(EXAMPLES / "factorial" / "experiment.toml")
    cells = [c["factors"] for c in doc["treatments"]]
    assert len(cells) == 8 and all(set(c) == {"threads", "pin", "load"} for c in cells)
    assert {tuple(c.values()) for c in cells} == {(t, p, lo) for t in ("1", "2") for p in ("off", "on") for lo in ("off", "on")}
    runs = doc["workers"][0]["runs"]
    for cell in cells:
        arms = [r["arm"] for r in runs if r["treatment"]["factors"] == cell]
        assert arms.count("fixed") == arms.count("random") == 2


# --------------------------------------------------------------------------------------------
# Real runs at a reduced size

@pytest.mark.slow
@needs("redis-server", "redis-benchmark")
def test_redis_runs_with_a_fresh_server_per_run_and_stops_it(tmp_path: Path) -> None:
    folder = copy_example("redis", tmp_path)
    runs = 3
    try:
        analysis, rows = run_example(folder, runs)
        tests = {"set", "get", "incr", "lpush", "lpop"}
        assert_all_trials_ok(rows, "rps", tests, runs)
        primary = {t["test"]: t for t in analysis["tests"] if t["primary"]}
        assert set(primary) == tests and all(t["metric"] == "rps" for t in primary.values())
        servers = pids(folder / "run" / "servers.log")
        assert len(servers) == 2 * runs and len(set(servers)) == 2 * runs  # a new server for every run
        assert [p for p in servers if alive(p, "redis-server")] == servers[-1:]  # each reset stopped the one before
    finally:
        subprocess.run([sys.executable, "server.py", "stop"], cwd=folder, check=True, timeout=60)
    assert not any(alive(p, "redis-server") for p in pids(folder / "run" / "servers.log"))
    assert not (folder / "run" / "redis.pid").exists() and not (folder / "run" / "redis.sock").exists()


@pytest.mark.slow
@needs("cc")
def test_measurement_bias_runs_in_every_context_and_compares(tmp_path: Path) -> None:
    folder = copy_example("measurement-bias", tmp_path)
    runs = 8  # one run per context in each arm
    analysis, rows = run_example(folder, runs)
    assert_all_trials_ok(rows, "loop_cpu", {"o2", "o3"}, runs)
    (comparison,) = analysis["comparisons"]
    assert (comparison["a"], comparison["b"], comparison["metric"]) == ("o3", "o2", "loop_cpu")
    assert comparison["ratio"] > 0 and comparison["contexts"]["n"] == 8
    assert {row["test"] for row in analysis["context_effects"]} == {"o2", "o3"}


@pytest.mark.slow
@needs("sysbench", "stress-ng", "taskset")
def test_factorial_runs_every_combination_and_stops_the_load(tmp_path: Path) -> None:
    folder = copy_example("factorial", tmp_path)
    # Smaller sysbench runs than the example's (the hog steals a CPU from the rest of the suite
    # while the load factor is on): the design and the clean-up are what is checked here.
    script = folder / "run.sh"
    script.write_text(script.read_text().replace("--events=500", "--events=100").replace("--memory-total-size=2G", "--memory-total-size=256M"))
    runs = 8  # each of the 8 combinations once in each arm
    try:
        analysis, rows = run_example(folder, runs)
        assert_all_trials_ok(rows, "events_per_s", {"cpu"}, runs)
        assert_all_trials_ok(rows, "mib_per_s", {"memory"}, runs)
        effects = {(f["test"], f["metric"]): {t["term"] for t in f["terms"]} for f in analysis["factorial"]}
        assert {"threads", "pin", "load"} <= effects[("cpu", "events_per_s")]
        assert {"threads", "pin", "load"} <= effects[("memory", "mib_per_s")]
        hogs = pids(folder / "run" / "load.log")
        assert len(hogs) >= 1  # the load factor's setup really started the hog
        assert not any(alive(p, "stress-ng") for p in hogs[:-1])
    finally:
        subprocess.run([sys.executable, "load.py", "off"], cwd=folder, check=True, timeout=60)
    assert not any(alive(p, "stress-ng") for p in pids(folder / "run" / "load.log"))
    assert os.path.exists(folder / "run") and not (folder / "run" / "load.pid").exists()


@pytest.mark.slow
@needs("wrk")
def test_service_measures_nginx_from_a_client_role_and_collects_on_the_server(tmp_path: Path) -> None:
    """examples/service on a fake fleet of two ssh hosts: nginx (1 or 2 workers) on the server
    role, wrk on the client role over three connection counts; the server's own count of the
    requests in each trial's window agrees with wrk's."""
    absent = [p for p in ("/usr/sbin/sshd", "/usr/sbin/nginx") if not Path(p).exists()]
    if absent:
        pytest.skip(f"not installed: {', '.join(absent)} (Debian packages, see .ci/run)")
    sys.path.insert(0, str(EXAMPLES / "fleet"))
    import fakefleet

    folder = copy_example("service", tmp_path)
    port = _free_port()
    spec = folder / "experiment.toml"
    spec.write_text(spec.read_text().replace("18080", str(port)))
    fleet = fakefleet.start(folder / "fleet", 2)
    try:
        runs = 2  # each nginx configuration once in each arm
        analysis, rows = run_example(folder, runs)
    finally:
        subprocess.run(["./server.sh", "stop"], cwd=folder, timeout=60)
        fleet.stop()
    tests = {f"wrk[conns={n}]" for n in (2, 8, 32)}
    assert_all_trials_ok(rows, "p99", tests, runs)
    by_trial: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        by_trial.setdefault((r["run"], r["position"]), {})[r["metric"]] = float(r["value"])
    assert len(by_trial) == 2 * runs * 3
    for values in by_trial.values():
        assert values["served"] == pytest.approx(values["sent"], rel=0.05)  # the window brackets the trial
        assert 0 < values["p50"] <= values["p99"] < 1 and values["rps"] > 0
    assert {r["sweep:conns"] for r in rows} == {"2", "8", "32"}
    curves = [c for c in analysis["curves"] if c["metric"] == "p99"]
    assert sorted(json.dumps(c["series"]) for c in curves) == ['{"workers": "1"}', '{"workers": "2"}']
    assert all([p["level"] for p in c["points"]] == [2, 8, 32] for c in curves)
    pairs = [c for c in analysis["curve_comparisons"] if c["metric"] == "p99"]
    assert sorted(c["level"] for c in pairs) == [2, 8, 32]
    identity = analysis["diagnostics"].get("identity")
    assert identity is None or identity["workers"] == []  # one pair: nothing to compare
    assert not alive_nginx(folder)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alive_nginx(folder: Path) -> bool:
    pid_file = folder / "nginx" / "nginx.pid"
    return pid_file.exists() and alive(int(pid_file.read_text()), "nginx")
