"""Treatments really applied: every trial runs under its run's context (environment padding, a
longer working directory, ASLR, the link order built before its runs), observer wrapper and
factor levels (setup command and variable), as recorded in the journal and read back by the
analysis and the tidy export; a failing link-order build skips its context and the rest goes
on; a wrapper that is not installed stops the experiment before anything runs."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from benchsage.agent.spawn import ADDR_NO_RANDOMIZE
from benchsage.execute.treatments import wrap
from benchsage.vocabulary import dimension_labels

PROBE = r"""import os, sys
print(json.dumps({
    "pad": len(os.environ.get("BENCHSAGE_ENV_PAD", "-")) if "BENCHSAGE_ENV_PAD" in os.environ else None,
    "cwd": os.getcwd(), "pwd": os.environ.get("PWD"),
    "persona": open("/proc/self/personality").read().strip(),
    "level": os.environ.get("LEVEL"), "setup": open("setup.txt").read().strip(),
    "built": open("built.txt").read().strip(), "wrapped": os.environ.get("WRAPPED"),
    "data": open("data.txt").read().strip(), "cpus": sorted(os.sched_getaffinity(0))}))
"""


def bench(cwd: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _journal(directory: Path) -> tuple[dict, list, list, list]:
    conn = sqlite3.connect(directory / "journal.sqlite")
    try:
        meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
        runs = conn.execute("SELECT id, arm, status, treatment FROM runs ORDER BY id").fetchall()
        trials = conn.execute(
            "SELECT t.run_id, s.name, t.status, t.stdout_tail, t.stderr_tail FROM trials t JOIN tests s ON s.id = t.test_id "
            "JOIN attempts a ON a.id = t.attempt_id WHERE a.status = 'done' ORDER BY t.id").fetchall()
        setups = conn.execute("SELECT a.run_id, u.kind, u.what, u.command, u.status FROM setups u "
                              "JOIN attempts a ON a.id = u.attempt_id ORDER BY u.id").fetchall()
    finally:
        conn.close()
    return meta, runs, trials, setups


def _write_probe(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text("import json\n" + PROBE)
    (tmp_path / "data.txt").write_text("relative paths still work\n")


def test_every_trial_runs_under_its_runs_treatment(tmp_path: Path) -> None:
    _write_probe(tmp_path)
    spec = tmp_path / "experiment.toml"
    spec.write_text(
        '[experiment]\nname = "applied"\nruns = 8\nseed = 11\n'
        f'[[test]]\nname = "probe"\ncommand = "{sys.executable} {tmp_path}/probe.py"\n'
        '[[test]]\nname = "shell"\ncommand = "sh -c \'echo wrapped=$WRAPPED level=$LEVEL\'"\n'
        '[context]\nvariants = 2\nenv_bytes = [100, 3000]\ncwd_bytes = [10, 300]\naslr = [true, false]\n'
        'cpus = ["0", "1"]\n'
        'link_order = {objects = ["a.o", "b.o", "c.o"], build = "echo {objects} > built.txt"}\n'
        '[observer]\nlevels = {plain = "", tagged = "env WRAPPED=yes"}\n'
        '[[factor]]\nname = "mode"\nlevels = ["lo", "hi"]\nenv = "LEVEL"\nsetup = "echo {level} > setup.txt"\n'
    )
    done = bench(tmp_path, "run", str(spec), "-o", "out", "--json")
    assert done.returncode == 0, done.stderr
    meta, runs, trials, setups = _journal(tmp_path / "out")
    cells = meta["treatments"]
    assert len(cells) == 2 * 2 * 2 and all(status == "done" for _, _, status, _ in runs)
    assert {t for *_, t in runs} == set(range(8))  # every cell measured
    cell_of = {run_id: cells[t] for run_id, _, _, t in runs}
    seen_contexts = set()
    for run_id, name, status, out, _err in trials:
        assert status == "ok", (name, out)
        cell = cell_of[run_id]
        text = bytes(out).decode()
        if name == "shell":
            assert text.split() == [f"wrapped={'yes' if cell['observer'] == 'tagged' else ''}", f"level={cell['factors']['mode']}"]
            continue
        got = json.loads(text)
        seen_contexts.add(cell["context"])
        assert got["pad"] == cell["env_bytes"]
        assert len(got["cwd"]) == len(str(tmp_path)) + cell["cwd_bytes"]  # a real directory that much longer
        assert got["pwd"] == got["cwd"] and got["data"] == "relative paths still work"
        assert int(got["persona"], 16) & ADDR_NO_RANDOMIZE == (0 if cell["aslr"] else ADDR_NO_RANDOMIZE)
        assert got["built"] == " ".join(cell["link_order"])  # built in this context's order before the run
        assert got["setup"] == got["level"] == cell["factors"]["mode"]
        assert got["wrapped"] == ("yes" if cell["observer"] == "tagged" else None)
        assert got["cpus"] == [int(cell["cpus"])]
    assert seen_contexts == {"c1", "c2"}
    # The longer working directories are gone once the experiment ends.
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".") and p.name.strip("_") == "."]
    # Setups before every run; a build only when the worker's last build was another context's.
    builds = [(run_id, what) for run_id, kind, what, _c, status in setups if kind == "build"]
    contexts_in_time = [cell_of[r]["context"] for r, *_ in runs]
    changes = 1 + sum(1 for a, b in zip(contexts_in_time, contexts_in_time[1:]) if a != b)
    assert len(builds) == changes and all(status == "ok" for *_, status in setups)
    assert sum(1 for _r, kind, *_ in setups if kind == "setup") == len(runs)

    # The analysis and the tidy export carry a column per treatment dimension.
    assert bench(tmp_path, "export", "out", "--format", "csv", "-o", "tidy.csv").returncode == 0
    with open(tmp_path / "tidy.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    by_run = {int(r["run"]): r for r in rows}
    for run_id, labels in ((r, dimension_labels(c)) for r, c in cell_of.items()):
        assert {k: by_run[run_id][k] for k in labels} == labels
    assert {"context", "context:env_bytes", "context:cwd_bytes", "context:aslr", "context:cpus", "context:link_order", "observer",
            "factor:mode"} <= set(rows[0])


def test_a_failing_link_order_build_skips_its_context_and_resume_runs_it_when_fixed(tmp_path: Path) -> None:
    (tmp_path / "build.sh").write_text('#!/bin/sh\n[ -e "broken-$1" ] && { echo "cannot link $1 first" >&2; exit 3; }\n'
                                       'printf "#!/bin/sh\\necho %s\\n" "$*" > prog && chmod +x prog\n')
    spec = tmp_path / "experiment.toml"
    spec.write_text(
        '[experiment]\nname = "build"\nruns = 4\nseed = 3\n'
        '[[test]]\nname = "show"\ncommand = "./prog"\n'
        '[[test]]\nname = "idle"\ncommand = "true"\n'
        '[context]\nvariants = 4\nlink_order = {objects = ["a.o", "b.o", "c.o"], build = "sh build.sh {objects}"}\n'
    )
    planned = json.loads(bench(tmp_path, "plan", str(spec), "--json").stdout)
    firsts = {c["context"]: c["link_order"][0] for c in planned["treatments"]}
    victim = next(first for first in firsts.values() if list(firsts.values()).count(first) < 4)
    broken = sorted(c for c, first in firsts.items() if first == victim)
    (tmp_path / f"broken-{victim}").write_text("")

    failed = bench(tmp_path, "run", str(spec), "-o", "out")
    assert failed.returncode == 2, failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    assert "[context] key 'link_order'" in last and all(c in last for c in broken) and "cannot link" in last
    assert "Traceback" not in failed.stderr
    meta, runs, trials, setups = _journal(tmp_path / "out")
    status_of = {meta["treatments"][t]["context"]: set() for *_, t in runs}
    for _id, _arm, status, t in runs:
        status_of[meta["treatments"][t]["context"]].add(status)
    assert all(status_of[c] == {"skipped"} for c in broken)
    assert all(status_of[c] == {"done"} for c in status_of if c not in broken)
    assert trials and all(bytes(out).decode().split() == meta["treatments"][[t for i, _a, _s, t in runs if i == run][0]]["link_order"]
                          for run, name, _st, out, _e in trials if name == "show")
    analysis = json.loads(bench(tmp_path, "analyze", "out", "--json").stdout)
    assert any("link-order build failed" in w and broken[0] in w for w in analysis["warnings"])

    os.remove(tmp_path / f"broken-{victim}")  # fixed: resume runs the skipped contexts
    resumed = bench(tmp_path, "resume", "out")
    assert resumed.returncode == 0, resumed.stderr
    _meta, runs, trials, _setups = _journal(tmp_path / "out")
    assert all(status == "done" for _, _, status, _ in runs)
    assert len(trials) == 2 * len(runs)
    # The program is rebuilt per context: its versions are compared within a context only.
    warnings = json.loads(bench(tmp_path, "analyze", "out", "--json").stdout)["warnings"]
    assert not any("changed between runs on" in w for w in warnings), warnings


def test_an_observer_wrapper_that_is_not_installed_stops_before_anything_runs(tmp_path: Path) -> None:
    spec = tmp_path / "experiment.toml"
    spec.write_text(
        '[experiment]\nname = "wrapper"\nruns = 2\n'
        '[[test]]\ncommand = "true"\n'
        '[observer]\nlevels = {none = "", tracer = "no-such-tracer-benchsage --quiet --"}\n'
    )
    done = bench(tmp_path, "run", str(spec), "-o", "out")
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert "[observer]" in line and "'tracer'" in line and "no-such-tracer-benchsage" in line and "not installed" in line
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "journal.sqlite").exists()


def test_a_wrapper_runs_a_command_with_shell_syntax_through_the_shell_the_agent_would_use() -> None:
    assert wrap("strace -f --", "sleep 0.01") == "strace -f -- sleep 0.01"
    assert wrap("strace -f --", "echo $HOME | cat") == "strace -f -- /bin/sh -c 'echo $HOME | cat'"
    assert wrap("strace -f --", "FOO=1 env") == "strace -f -- /bin/sh -c 'FOO=1 env'"
    assert wrap("  ", "echo $HOME") == "echo $HOME"


def test_a_factor_level_reaches_its_setup_command_as_one_word_whatever_it_holds(tmp_path: Path) -> None:
    spec = tmp_path / "experiment.toml"
    spec.write_text(
        '[experiment]\nname = "quoted"\nruns = 2\nseed = 3\n'
        '[[test]]\nname = "show"\ncommand = "cat setup.txt"\n'
        '[[factor]]\nname = "mode"\nlevels = ["two words; touch injected", "plain"]\n'
        'setup = "printf %s {level} > setup.txt"\n'
    )
    done = bench(tmp_path, "run", str(spec), "-o", "out", "--json")
    assert done.returncode == 0, done.stderr
    meta, runs, trials, setups = _journal(tmp_path / "out")
    assert not (tmp_path / "injected").exists()  # the level's ';' did not end the setup command
    level_of = {run_id: meta["treatments"][t]["factors"]["mode"] for run_id, _, _, t in runs}
    assert {level_of[run_id] for run_id, *_ in trials} == {"two words; touch injected", "plain"}
    for run_id, _name, status, out, _err in trials:
        assert status == "ok" and bytes(out).decode() == level_of[run_id]
    assert all(status == "ok" for *_, status in setups)
