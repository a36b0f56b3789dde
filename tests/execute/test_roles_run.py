"""Workers with roles, run for real: two agents on this machine in the roles of a server and a
client, each started with its own environment (a fake RAPL counter rising at 10 W, a clock 5 s
ahead through libfaketime, a tag saying which role ran a command), real SQLite, real commands."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchsage.store.journal import journal_path

FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def run(tmp_path: Path, body: str, *, runs: int = 2, expect: int = 0) -> Path:
    spec = tmp_path / "experiment.toml"
    spec.write_text(f'[experiment]\nname = "svc"\nruns = {runs}\nseed = 3\n' + textwrap.dedent(body))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", str(spec), "-o", str(out), "--quiet"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == expect, done.stderr
    return out


def query(out: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{journal_path(out)}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def values(out: Path, metric: str) -> dict[int, float]:
    return dict(query(out, f"SELECT trial_id, value FROM trial_values WHERE metric = '{metric}'"))


def roles(server_env: str = "", client_env: str = "") -> str:
    python = sys.executable
    return f"""
    [[worker]]
    name = "pair1"
    [worker.roles.server]
    kind = "local"
    python = "env ROLE_TAG=server {server_env} {python}"
    [worker.roles.client]
    kind = "local"
    python = "env ROLE_TAG=client {client_env} {python}"
    """


def test_each_part_runs_on_its_roles_host(tmp_path: Path) -> None:
    log = tmp_path / "where.log"
    out = run(tmp_path, roles() + f"""
    [reset]
    [[reset.step]]
    role = "server"
    command = "echo reset-$ROLE_TAG >> {log}"
    [[reset.step]]
    role = "client"
    command = "echo reset-$ROLE_TAG >> {log}"

    [[factor]]
    name = "g"
    levels = ["a", "b"]
    setup = "echo setup-{{level}}-$ROLE_TAG >> {log}"

    [[factor]]
    name = "h"
    levels = ["x", "y"]
    setup = "echo only-$ROLE_TAG >> {log}"
    role = "server"

    [[test]]
    name = "t"
    role = "client"
    command = "sh -c 'echo trial-$ROLE_TAG >> {log}'"
    """, runs=4)
    lines = log.read_text().split()
    # per run: the reset's steps in order, then the factors' setups (g on every role, in declared order; h on the server)
    runs = 8
    assert lines.count("reset-server") == runs and lines.count("reset-client") == runs
    assert sum(line.startswith("setup-") and line.endswith("-server") for line in lines) == runs
    assert sum(line.startswith("setup-") and line.endswith("-client") for line in lines) == runs
    assert set(line for line in lines if line.startswith("only-")) == {"only-server"}
    assert lines.count("trial-client") == runs and "trial-server" not in lines
    first = lines[:lines.index("trial-client")]
    assert first[:2] == ["reset-server", "reset-client"]
    stdout = query(out, "SELECT reset_stdout FROM attempts")[0][0].decode()
    assert "[pair1/server] echo reset-$ROLE_TAG" in stdout and "[pair1/client]" in stdout
    snap = json.loads(query(out, "SELECT snapshot FROM attempts")[0][0])
    assert snap["worker"] == "pair1" and set(snap["roles"]) == {"server", "client"}
    assert snap["roles"]["server"]["worker"] == "pair1/server"


def test_a_command_collector_counts_what_the_trial_did_on_the_server(tmp_path: Path) -> None:
    counter = tmp_path / "requests.log"
    counter.write_text("")
    out = run(tmp_path, roles() + f"""
    [[test]]
    name = "load"
    role = "client"
    command = "sh -c 'for i in $(seq $N); do echo r >> {counter}; done; echo sent $N'"
    env = {{N = "37"}}
    [[test.metric]]
    name = "sent"
    regex = 'sent ([0-9]+)'
    better = "higher"

    [[collector]]
    name = "served"
    role = "server"
    kind = "command"
    command = "wc -l < {counter}"
    delta = true
    better = "higher"

    [[collector]]
    name = "lines_now"
    role = "server"
    kind = "command"
    command = "wc -l < {counter}"

    [[collector]]
    name = "silent"
    role = "server"
    kind = "command"
    command = "echo no numbers here"
    """)
    served, sent, now = values(out, "served"), values(out, "sent"), values(out, "lines_now")
    assert len(served) == 4 and all(served[t] == sent[t] == 37 for t in served)
    assert sorted(now.values()) == [37, 74, 111, 148]  # not delta: the value at the window's close
    assert values(out, "silent") == {}  # the collector without a number leaves its metric out ...
    rows = query(out, "SELECT status, reason, hosts FROM trials")
    assert [status for status, _, _ in rows] == ["ok"] * 4  # ... the trial stands, the reason journaled
    assert all("collector 'silent': command `echo no numbers here` printed no number (its last line: 'no numbers here')" == reason
               for _, reason, _ in rows)
    hosts = json.loads(rows[0][2])
    assert set(hosts) == {"server", "client"}
    server, client = hosts["server"], hosts["client"]
    # the window brackets the trial: opened before its start, closed after its end
    assert server["open"] <= client["started"] < client["ended"] <= server["close"]
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert server["boot_id"] == client["boot_id"] == boot
    meta = dict(query(out, "SELECT key, value FROM meta"))
    assert json.loads(meta["roles"]) == {"pair1": {"server": "this machine", "client": "this machine"}}
    tests = query(out, "SELECT metrics FROM tests")
    served_meta = [m for m in json.loads(tests[0][0]) if m["name"] == "served"]
    assert served_meta == [{"name": "served", "unit": "", "better": "higher", "primary": False}]


def rapl_at_10_watts(root: Path) -> subprocess.Popen:
    """A folder shaped like /sys/class/powercap whose package counter rises at 10 W, rewritten
    every 0.2 ms from the monotonic clock (so a late rewrite is behind by its lateness only)."""
    zone = root / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    (zone / "energy_uj").write_text("0\n")
    script = textwrap.dedent(f"""
        import os, time
        zone = {str(zone)!r}
        t0 = time.monotonic()
        open(os.path.join(zone, "ready"), "w").close()
        while True:
            tmp = os.path.join(zone, ".energy")
            with open(tmp, "w") as f:
                f.write("%d\\n" % int((time.monotonic() - t0) * 10e6))
            os.replace(tmp, os.path.join(zone, "energy_uj"))
            time.sleep(0.0002)
    """)
    writer = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 10
    while not (zone / "ready").exists():
        assert time.monotonic() < deadline and writer.poll() is None
        time.sleep(0.01)
    return writer


@pytest.mark.timing
@pytest.mark.skipif(not os.path.exists(FAKETIME) and os.environ.get("CI") != "true",
                    reason=f"libfaketime is not installed ({FAKETIME}; Debian: faketime)")
def test_energy_and_clock_of_the_server_host(tmp_path: Path) -> None:
    writer = rapl_at_10_watts(tmp_path / "powercap")
    try:
        server_env = f"BENCHSAGE_POWERCAP={tmp_path / 'powercap'} LD_PRELOAD={FAKETIME} FAKETIME=+5"
        out = run(tmp_path, roles(server_env) + """
        [[test]]
        name = "sleep"
        role = "client"
        command = "sleep 1"

        [[collector]]
        name = "server_energy"
        role = "server"
        kind = "energy"

        [[collector]]
        name = "server_cpu"
        role = "server"
        kind = "cpu"
        """, runs=1)  # two trials of 1 s: a counter rewritten late by d reads 2d/1 s off, 5% allows d = 25 ms
    finally:
        writer.kill()
        writer.wait()
    energy, wall = values(out, "server_energy"), dict(query(out, "SELECT id, wall_time FROM trials"))
    windows = {trial: json.loads(hosts)["server"] for trial, hosts in query(out, "SELECT id, hosts FROM trials")}
    assert len(energy) == 2
    for trial, joules in energy.items():
        window = windows[trial]["close"] - windows[trial]["open"]
        assert joules == pytest.approx(10 * window, rel=0.02)  # the counter read at the window's open and close ...
        assert window == pytest.approx(wall[trial], rel=0.05)  # ... which brackets the trial
        assert joules == pytest.approx(10 * wall[trial], rel=0.05)
    assert all(0 <= v < 2 * 1.05 for v in values(out, "server_cpu").values())  # 2 CPUs, a sleeping trial
    for (snapshot,) in query(out, "SELECT snapshot FROM attempts"):
        clock = json.loads(snapshot)["clocks"]["server"]
        assert clock["offset"] == pytest.approx(5.0, abs=0.001) and clock["bound"] < 0.001
    for (hosts,) in query(out, "SELECT hosts FROM trials"):
        h = json.loads(hosts)
        # the window on the server's clock, 5 s ahead of the client's
        assert h["server"]["open"] - h["client"]["started"] == pytest.approx(5.0, abs=0.05)
