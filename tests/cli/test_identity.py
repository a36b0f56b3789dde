"""A test is its name: tests sharing a command with another env really run with it, and an A/A
test (same command, env and cwd under two names) is run, and said, by plan, run and analyze."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

AA = "run the same command with the same env and cwd: an A/A test"


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def test_tests_sharing_a_command_run_with_their_own_env_and_an_aa_test_is_said(tmp_path: Path) -> None:
    spec = tmp_path / "experiment.toml"
    spec.write_text(
        '[experiment]\nname = "identity"\nruns = 2\nseed = 5\n'
        '[[test]]\nname = "fast"\ncommand = "sh -c \'echo mode=$MODE\'"\nenv = {MODE = "fast"}\n'
        '[[test]]\nname = "slow"\ncommand = "sh -c \'echo mode=$MODE\'"\nenv = {MODE = "slow"}\n'
        '[[test]]\nname = "a"\ncommand = "true"\n'
        '[[test]]\nname = "a-again"\ncommand = "true"\n'
    )
    planned = bench(tmp_path, "plan", str(spec))
    assert planned.returncode == 0, planned.stderr
    assert f"warning: tests 'a' and 'a-again' {AA}" in " ".join(planned.stdout.split())  # wrapped to the terminal
    as_json = json.loads(bench(tmp_path, "plan", str(spec), "--json").stdout)
    assert [t["name"] for t in as_json["tests"]] == ["fast", "slow", "a", "a-again"]
    assert len(as_json["warnings"]) == 1 and AA in as_json["warnings"][0]

    done = bench(tmp_path, "run", str(spec), "-o", "out", "--json")
    assert done.returncode == 0, done.stderr
    assert f"tests 'a' and 'a-again' {AA}" in " ".join(done.stderr.split())  # said as the run starts
    analysis = json.loads(done.stdout)
    assert any(AA in w for w in analysis["warnings"])
    assert {row["test"] for row in analysis["tests"]} == {"fast", "slow", "a", "a-again"}
    conn = sqlite3.connect(tmp_path / "out" / "journal.sqlite")
    try:
        shown = conn.execute("SELECT s.name, t.stdout_tail FROM trials t JOIN tests s ON s.id = t.test_id").fetchall()
    finally:
        conn.close()
    outputs = {(name, bytes(out).decode().strip() if isinstance(out, bytes) else str(out).strip()) for name, out in shown if name in ("fast", "slow")}
    assert outputs == {("fast", "mode=fast"), ("slow", "mode=slow")}
    # The analysis of the finished experiment says it again.
    again = json.loads(bench(tmp_path, "analyze", "out", "--json").stdout)
    assert any(AA in w for w in again["warnings"])
