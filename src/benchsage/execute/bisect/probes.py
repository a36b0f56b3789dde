"""One batch of a probe's runs, as an ordinary benchsage experiment in a folder of its own.

The experiment's tests are the bisected test at good, at bad and at the probed commit (named
`TEST@good`, `TEST@bad`, `TEST@<commit>`), each running in its commit's worktree; every run holds
all of them in a fresh random order, after the spec's reset, on every worker of the spec. Its
spec is the user's, with only the tests and the runs rewritten, read as if it were the user's
file (so the reset's and workers' relative paths mean what they meant); its journal is the
usual one, so `benchsage resume` finishes an interrupted batch and a finished batch is read,
never run again.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import sqlite3
import tomllib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from benchsage.design.bisect import probe_orders
from benchsage.design.experiment import ExperimentPlan, WorkerPlan, experiment_digest
from benchsage.design.plan import Plan, PlannedRun, worker_seed
from benchsage.errors import DataError, ExperimentError
from benchsage.execute.bisect import ship
from benchsage.execute.deploy import DeploySource
from benchsage.execute.progress import Progress, QuietProgress
from benchsage.execute.session import resume, start
from benchsage.spec import Spec, TestSpec, emit, load_spec
from benchsage.store.journal import Journal, journal_path
from benchsage.vocabulary import DONE, RANDOM

# What a probe's spec keeps of the user's [experiment] and top level: the rest (treatments,
# sweeps, sequential stopping, deploy) belongs to the user's own experiment, not to a probe.
_DROP_TOP = ("context", "observer", "factor", "compare", "sweep", "generator", "deploy")
_DROP_EXPERIMENT = ("stop", "looks", "min_effect", "random_orders")


@dataclass(frozen=True)
class Arm:
    """One commit a batch measures: its label in test names and the folder its tests run in."""

    label: str
    worktree: str


def _table_of(doc: dict[str, Any], resolved: TestSpec) -> dict[str, Any]:
    """The [[test]] table measuring `resolved` in a probe: the spec's table it comes from, with
    a sweep's levels written in (the probe declares no sweep) or, for a test a generator
    printed, its command with the experiment's defaults."""
    tables = [t for t in doc.get("test", []) if isinstance(t, dict)]
    chosen = next((t for t in tables if t.get("name", t.get("command")) == resolved.base_name), None)
    if chosen is None:
        return {"command": resolved.command}
    if not resolved.sweep:
        return dict(chosen)
    return {**chosen, "command": resolved.command, "env": dict(resolved.env)}


def worktree_cwd(cwd: str, repo: str, worktree: str) -> str:
    """Where a test runs in a worktree: at its cwd's place in the repository, else at its root."""
    rel = os.path.relpath(cwd, repo)
    return worktree if rel.startswith("..") else os.path.normpath(os.path.join(worktree, rel))


def probe_spec_text(spec: Spec, test: str, arms: list[Arm], repo: str, runs: int, seed: int, search: str | None = None) -> str:
    """The batch's spec; `search` (the search's id): its worktrees are shipped to the workers,
    which run them in their bisect dirs, and the reset (each step), [init] and the collectors
    run in bad's copy of their folder there (the user's checkout is on this machine only)."""
    doc = tomllib.loads(spec.text)
    resolved = next(t for t in spec.tests if t.name == test)
    chosen = _table_of(doc, resolved)
    for key in _DROP_TOP:
        doc.pop(key, None)
    for key in _DROP_EXPERIMENT:
        doc["experiment"].pop(key, None)
    doc["experiment"]["runs"] = runs
    doc["experiment"]["seed"] = seed
    doc["experiment"]["name"] = f"{doc['experiment'].get('name', 'bisect')}-bisect"
    doc["test"] = [{**chosen, "name": f"{test}@{a.label}", "cwd": worktree_cwd(resolved.cwd, repo, a.worktree)} for a in arms]
    if search is not None:
        ship.worker_dirs(doc.get("worker"), spec, search)
        bad = arms[1].worktree
        for key, table in (("reset", spec.reset), ("init", spec.init)):
            if isinstance(doc.get(key), dict) and table is not None:
                doc[key]["cwd"] = worktree_cwd(table.cwd, repo, bad)
        # With roles: each reset step and collector runs in bad's copy on its role's host
        steps = doc.get("reset", {}).get("step") if isinstance(doc.get("reset"), dict) else None
        for item, step in zip(steps if isinstance(steps, list) else (), spec.reset.steps if spec.reset else ()):
            item["cwd"] = worktree_cwd(step.cwd, repo, bad)
        collectors = doc.get("collector")
        for item, c in zip(collectors if isinstance(collectors, list) else (), spec.collectors):
            item["cwd"] = worktree_cwd(c.cwd, repo, bad)
    return dumps(doc)


class OnceMessages(QuietProgress):
    """The batches' progress: no progress lines, and each message (a warning about the spec,
    the same for every batch) said once in the search."""

    def __init__(self) -> None:
        super().__init__()
        self.said: set[str] = set()

    def message(self, text: str) -> None:
        if text not in self.said:
            self.said.add(text)
            super().message(text)


def measure(spec: Spec, text: str, directory: str, runs: int, seed: int, metric: str, progress: Progress,
            source: Callable[[], DeploySource] | None = None, hosts: Callable[[Spec], Spec] | None = None
            ) -> tuple[np.ndarray, tuple[str, ...]]:
    """The metric's value per run (rows) and test (columns, in the spec's order) of the batch in
    `directory`, and the worker of each run: run now, finished after a crash, or read when done
    (`source`: what the batch deploys, read only when it runs; `hosts`: the batch's spec on the
    hosts the search holds for its allocated workers). Runs whose trials did not all give a
    value are left out."""
    # A finished batch is only read (as `benchsage report` does): its journal is never opened for writing.
    if Journal.exists(directory) and not finished(directory) and not _planned(directory, read_only=False):
        shutil.rmtree(directory)  # killed while its journal was being created: nothing ran, start it again
    if Journal.exists(directory):
        journal = Journal.open(directory, read_only=True)
        try:
            unfinished = any(r["status"] != DONE for r in journal.runs())
        finally:
            journal.close()
        if unfinished:
            resume(directory, progress=progress, source=source() if source else None, hosts=hosts)
    else:
        batch = dataclasses.replace(load_spec(spec.path, text=text), warnings=())  # the search says them once
        batch = hosts(batch) if hosts else batch
        start(batch, random_plan(batch, runs, seed), directory, progress=progress, source=source() if source else None)
    return read_values(directory, metric, len(load_spec(spec.path, text=text).tests))


def finished(directory: str) -> bool:
    """Whether the batch in `directory` ran every run it planned."""
    if not Journal.exists(directory) or not _planned(directory):
        return False
    journal = Journal.open(directory, read_only=True)
    try:
        return all(r["status"] == DONE for r in journal.runs())
    finally:
        journal.close()


def _planned(directory: str, read_only: bool = True) -> bool:
    """Whether the batch's journal holds its plan (a batch killed while its journal was being
    created has the file, and no plan: the plan is committed before any trial runs). Where the
    batch is to run (`read_only` False) the journal is opened for writing: after a kill -9 its
    write-ahead log may need the recovery a read-only connection cannot make ("attempt to write
    a readonly database")."""
    if read_only:  # the guarded reader of journals (store/journal_reader.py): a directory from elsewhere is only read
        try:
            Journal.open(directory, read_only=True).close()
        except DataError:
            return False
        return True
    conn = sqlite3.connect(journal_path(directory))
    try:
        return conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone() is not None
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return False
        raise
    finally:
        conn.close()


def random_plan(spec: Spec, runs: int, seed: int) -> ExperimentPlan:
    """Every worker's `runs` runs, each in a fresh random order of the tests (no fixed arm: a
    commit's position would otherwise be tied to it)."""
    names = tuple(t.name for t in spec.tests)
    workers = []
    for w in spec.workers:
        s = worker_seed(seed, w.name, len(spec.workers))
        planned = tuple(PlannedRun(index=i, arm=RANDOM, arm_index=i, order=o) for i, o in enumerate(probe_orders(runs, len(names), s)))
        workers.append(WorkerPlan(w.name, w.kind, w.target, Plan(seed=s, runs_per_arm=runs, test_names=names, runs=planned)))
    return ExperimentPlan(seed=seed, runs_per_arm=runs, cells=(), workers=tuple(workers), sequential=None,
                          digest=experiment_digest(spec, runs, seed))


def read_values(directory: str, metric: str, tests: int) -> tuple[np.ndarray, tuple[str, ...]]:
    journal = Journal.open(directory, read_only=True)
    try:
        index = {t["id"]: k for k, t in enumerate(journal.tests())}
        by_trial: dict[int, tuple[int, int]] = {}
        values: dict[int, dict[int, float]] = {}
        worker_of: dict[int, str] = {}
        for row in journal.trial_rows():
            trial, run, test, status, wall = row[0], row[1], row[4], row[11], row[13]
            if status != "ok":
                continue
            by_trial[trial] = (run, index[test])
            worker_of[run] = str(row[3])
            if metric == "wall_time" and wall is not None:
                values.setdefault(run, {})[index[test]] = float(wall)
        if metric != "wall_time":
            for trial, name, value in journal.trial_values():
                if name == metric and trial in by_trial and value is not None and math.isfinite(value):
                    run, k = by_trial[trial]
                    values.setdefault(run, {})[k] = float(value)
    finally:
        journal.close()
    complete = [(run, per) for run, per in sorted(values.items()) if len(per) == tests]
    out = np.array([[per[k] for k in range(tests)] for _, per in complete], dtype=np.float64).reshape(-1, tests)
    if (out <= 0).any():
        raise ExperimentError(f"{directory}: metric {metric!r} has values <= 0; bisect compares ratios and needs positive values")
    return out, tuple(worker_of[run] for run, _ in complete)


def dumps(doc: dict[str, Any]) -> str:
    """TOML for a parsed spec (the one emitter: spec/emit.py; any Unicode a command holds)."""
    return emit.dumps(doc)
