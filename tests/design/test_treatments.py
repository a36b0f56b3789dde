"""Treatments in the plan: contexts drawn from the seed and stratified, cells crossed, runs
assigned in randomized complete blocks with both runs of a pair in the same cell; a spec
without treatments plans what it planned before."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from benchsage.design.plan import make_plan
from benchsage.vocabulary import FIXED
from benchsage.design.treatments import assign_cells, draw_contexts, treatment_cells
from benchsage.spec import ContextSpec, LinkOrder, load_spec

TESTS = '[[test]]\nname = "o3"\ncommand = "./o3"\n[[test]]\nname = "o2"\ncommand = "./o2"\n'


def spec_of(tmp_path: Path, body: str, runs: int = 8):
    path = tmp_path / "experiment.toml"
    path.write_text(f'[experiment]\nname = "t"\nruns = {runs}\nseed = 4\n' + TESTS + body)
    return load_spec(str(path))


def test_contexts_are_stratified_balanced_crossed_and_drawn_from_the_seed() -> None:
    spec = ContextSpec(variants=8, env_bytes=(0, 4095), cwd_bytes=(10, 10), cpus=((0,), (1,)), aslr=(True, False),
                       link_order=LinkOrder(("a.o", "b.o", "c.o"), "make {objects}"))
    contexts = draw_contexts(spec, seed=11)
    assert [c.index for c in contexts] == list(range(8))
    # one environment size in each eighth of the range
    assert sorted(c.env_bytes // 512 for c in contexts) == list(range(8))
    assert {c.cwd_bytes for c in contexts} == {10}
    assert Counter(c.cpus for c in contexts) == {(0,): 4, (1,): 4}
    assert Counter(c.aslr for c in contexts) == {True: 4, False: 4}
    assert all(sorted(c.link_order) == ["a.o", "b.o", "c.o"] for c in contexts)
    assert len({c.link_order for c in contexts}) > 1
    assert draw_contexts(spec, seed=11) == contexts
    assert draw_contexts(spec, seed=12) != contexts
    # dimensions are permuted apart: the environment size does not follow the ASLR setting
    assert [c.aslr for c in sorted(contexts, key=lambda c: c.env_bytes)] != sorted(c.aslr for c in contexts)


def test_cells_cross_contexts_observer_levels_and_factors(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, '[context]\nvariants = 3\naslr = [true, false]\n'
                             '[observer]\nlevels = {none = "", strace = "strace -o /dev/null --"}\n'
                             '[[factor]]\nname = "smt"\nlevels = ["off", "on"]\nenv = "SMT"\n'
                             '[[factor]]\nname = "gov"\nlevels = ["powersave", "performance"]\nsetup = "echo {level}"\n',
                   runs=24)
    cells = treatment_cells(spec.treatments, 4)
    assert len(cells) == spec.treatments.cells == 3 * 2 * 4
    assert len({(c.context.index, c.observer, c.factors) for c in cells}) == 24
    assert cells[0].factors == (("smt", "off"), ("gov", "powersave"))
    assert cells[0].labels() == {"context": "c1", "observer": "none", "factor:smt": "off", "factor:gov": "powersave"}
    assert spec.treatments.observer.baseline == "none"


@pytest.mark.parametrize("runs, cells", [(12, 4), (10, 4), (5, 5), (7, 1)])
def test_runs_go_through_the_cells_in_randomized_complete_blocks(runs: int, cells: int) -> None:
    assigned = assign_cells(cells, runs, seed=3)
    assert len(assigned) == runs
    for start in range(0, runs - runs % cells, cells):
        assert sorted(assigned[start:start + cells]) == list(range(cells))  # every block is complete
    counts = Counter(assigned)
    assert max(counts.values()) - min(counts.get(c, 0) for c in range(cells)) <= 1


def test_both_runs_of_a_pair_share_the_cell_and_no_cell_comes_all_first(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, '[context]\nvariants = 4\nenv_bytes = [0, 1000]\n', runs=16)
    cells = treatment_cells(spec.treatments, 4)
    plan = make_plan(["o3", "o2"], 16, 4, treatments=cells)
    by_pair: dict[int, set[int]] = {}
    for run in plan.runs:
        by_pair.setdefault(run.arm_index, set()).add(run.treatment)
    assert all(len(v) == 1 for v in by_pair.values())
    per_arm = Counter((run.arm, run.treatment) for run in plan.runs)
    assert set(per_arm.values()) == {4}  # 16 runs per arm over 4 cells, in both arms
    first_half = {run.treatment for run in plan.runs[:16]}
    assert first_half == {0, 1, 2, 3}  # interleaved in time: every cell in the first half


def test_a_spec_without_treatments_plans_what_it_planned_before() -> None:
    plain = make_plan(["a", "b", "c"], 6, 99)
    assert all(run.treatment == 0 for run in plain.runs)
    with_one = make_plan(["a", "b", "c"], 6, 99, treatments=None)
    assert [(r.arm, r.order) for r in plain.runs] == [(r.arm, r.order) for r in with_one.runs]
    assert [r.arm for r in plain.runs if r.arm_index == 0].count(FIXED) == 1


def test_plan_json_lists_each_runs_treatment(tmp_path: Path) -> None:
    path = tmp_path / "experiment.toml"
    path.write_text('[experiment]\nname = "t"\nruns = 4\nseed = 4\n' + TESTS + '[context]\nvariants = 2\naslr = [true, false]\n'
                    '[[compare]]\na = "o3"\nb = "o2"\n')
    for name in ("o2", "o3"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "benchsage", "plan", str(path), "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [c["context"] for c in doc["treatments"]] == ["c1", "c2"]
    assert sorted(c["aslr"] for c in doc["treatments"]) == [False, True]
    assert Counter(r["treatment"]["context"] for r in doc["runs"]) == {"c1": 4, "c2": 4}
    assert doc["compare"] == [{"a": "o3", "b": "o2", "metric": None}]
    shown = subprocess.run([sys.executable, "-m", "benchsage", "plan", str(path)], capture_output=True, text=True).stdout
    assert "Claim to check: o3 is better than o2 on its primary metric" in " ".join(shown.split())
    # `run` carries out exactly the plan shown, treatments included
    ran = subprocess.run([sys.executable, "-m", "benchsage", "run", str(path), "-o", str(tmp_path / "out"), "--json"],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr
    conn = sqlite3.connect(tmp_path / "out" / "journal.sqlite")
    try:
        recorded = [(arm, json.loads(order), t) for arm, order, t in conn.execute("SELECT arm, test_order, treatment FROM runs ORDER BY id")]
    finally:
        conn.close()
    names = [t["name"] for t in doc["tests"]]
    assert recorded == [(r["arm"], [names.index(n) for n in r["order"]], [c["context"] for c in doc["treatments"]].index(r["treatment"]["context"]))
                        for r in doc["runs"]]


def test_factors_of_any_number_of_levels_cross_fully_and_each_cell_is_in_both_arms(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, '[[factor]]\nname = "threads"\nlevels = [1, 2, 4]\nenv = "T"\n'
                             '[[factor]]\nname = "gov"\nlevels = ["perf", "save"]\nenv = "G"\n', runs=12)
    assert spec.treatments.cells == 6 and spec.treatments.describe_cells() == "3 x 2 factor levels"
    cells = treatment_cells(spec.treatments, seed=4)
    assert [c.factors for c in cells] == [(("threads", t), ("gov", g)) for t in ("1", "2", "4") for g in ("perf", "save")]
    plan = make_plan(["o3", "o2"], 12, seed=4, treatments=cells)
    assert Counter((r.arm, r.treatment) for r in plan.runs) == {(arm, c): 2 for arm in ("fixed", "random") for c in range(6)}
