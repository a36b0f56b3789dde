"""The search of `benchsage bisect`, journaled so that `benchsage resume DIR` continues it.

DIR/bisect.json holds the request (the spec's text, the commits, the options, the seed) and the
candidates; DIR/builds/ the builds, DIR/probes/ one experiment per look of each probe. The
search is a function of the request and of what those hold: resuming replays it, reading every
build and finished batch from its journal instead of building or measuring again, and carries
on where the data ends.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from benchsage.design.bisect import BisectRecord, Budget, look_points, probe_seed, run_search
from benchsage.design.plan import draw_seed
from benchsage.errors import UsageError, WorkerError, WorkerSetupError
from benchsage.execute.bisect import builds, git, ship
from benchsage.execute.bisect.probes import Arm, OnceMessages, finished, measure, probe_spec_text
from benchsage.execute.allocate import Held, spec_with
from benchsage.execute.progress import make_progress
from benchsage.execute.runner import signals_as_interrupts
from benchsage.spec import Spec, load_spec
from benchsage.store.modes import make_file, make_folder
from benchsage.store.secrets import spec_secret_names
from benchsage.vocabulary import HARNESS_METRIC_UNITS, HARNESS_METRICS, LOWER

RECORD = "bisect.json"
_FREE = ("seed", "keep_dirs")  # what a search started again in its directory may leave out or change


@dataclass(frozen=True)
class BisectRequest:
    spec_path: str
    repo: str | None  # None: the repository holding the spec
    good: str
    bad: str
    build: str | None = None
    test: str | None = None  # None: the spec's first test
    metric: str | None = None  # None: the test's first primary metric
    alpha: float = 0.05
    min_effect: float = 2.0
    seed: int | None = None
    keep_dirs: bool = False  # leave the bisect dirs on the workers' hosts when the search ends


def _resolved(request: BisectRequest) -> dict[str, Any]:
    """The request with everything resolved: the record bisect.json starts with."""
    spec = load_spec(request.spec_path)
    repo = git.repository_root(request.repo or spec.folder)
    good = git.resolve(repo, request.good, "--good")
    bad = git.resolve(repo, request.bad, "--bad")
    candidates = git.first_parent_line(repo, good, bad)
    test = _test(spec, request.test)
    metric = request.metric or test.primary_metrics[0]
    known = set(HARNESS_METRICS) | {m.name for m in test.metrics}
    if metric not in known:
        raise UsageError(f"--metric {metric}: test {test.name!r} has no such metric (it has {', '.join(sorted(known))})")
    return {
        "spec_path": spec.path, "spec_text": spec.text, "repo": repo, "good": good, "bad": bad,
        "good_rev": request.good, "bad_rev": request.bad, "build": request.build, "test": test.name, "metric": metric,
        "alpha": request.alpha, "min_effect": request.min_effect,
        "seed": request.seed if request.seed is not None else spec.seed if spec.seed is not None else draw_seed(),
        "max_runs": spec.runs, "looks": spec.looks or _default_looks(spec.runs), "candidates": candidates,
        "keep_dirs": request.keep_dirs,
    }


def _default_looks(runs: int) -> int:
    return max(1, min(3, runs // 8))


def _test(spec: Spec, name: str | None) -> Any:
    if name is None:
        return spec.tests[0]
    for t in spec.tests:
        if t.name == name:
            return t
    raise UsageError(f"--test {name}: {spec.path} has no such test (it has {', '.join(t.name for t in spec.tests)})")


def start_bisect(request: BisectRequest, directory: str, *, quiet: bool = False) -> BisectRecord:
    """Start a search in `directory` (or continue the same one found there)."""
    record = _resolved(request)
    path = os.path.join(directory, RECORD)
    if os.path.exists(path):
        kept = _read(directory)
        if {k: kept.get(k) for k in record if k not in _FREE} != {k: v for k, v in record.items() if k not in _FREE}:
            raise UsageError(f"{directory} holds another search; resume it with `benchsage resume {directory}`, or choose another -o DIR")
        record = {**kept, "keep_dirs": request.keep_dirs}
    elif os.path.exists(directory) and os.listdir(directory):
        raise UsageError(f"{directory} is not empty and holds no search; choose another -o DIR")
    else:  # made as an experiment directory is (store/modes.py): the record holds the spec as written
        private = bool(spec_secret_names(record["spec_text"]))
        make_folder(directory, private)
        tmp = path + ".tmp"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        make_file(tmp, private)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    return _search(record, directory, quiet)


def resume_bisect(directory: str, *, quiet: bool = False) -> BisectRecord:
    return _search(_read(directory), directory, quiet)


def read_bisect(directory: str) -> BisectRecord:
    """The search in `directory` as its records hold it, building and measuring nothing (for
    `benchsage report`); UsageError when it stopped before its answer."""
    return _search(_read(directory), directory, True, read_only=True)


def shared_reset(spec_path: str | None = None, test: str | None = None, directory: str | None = None) -> tuple[tuple[str, ...], str]:
    """(the roles other than the test's whose reset runs before every run, the test's name) of a
    search to start (its spec and --test) or of the one in `directory`."""
    if directory is not None:
        kept = _read(directory)
        spec, test = load_spec(kept["spec_path"], text=kept["spec_text"]), kept["test"]
    else:
        assert spec_path is not None
        spec = load_spec(spec_path)
        test = _test(spec, test).name
    return ship.shared_reset_roles(spec, test), str(test)


def is_bisect(directory: str) -> bool:
    return os.path.exists(os.path.join(directory, RECORD))


def _read(directory: str) -> dict[str, Any]:
    with open(os.path.join(directory, RECORD), encoding="utf-8") as fh:
        return dict(json.load(fh))


def plan_bisect(request: BisectRequest, directory: str | None = None) -> dict[str, Any]:
    """What a search is expected to cost: builds, probes, runs and trials (at least, at most);
    and where it measures: the hosts it deploys to with their bisect dirs (exact with -o DIR and
    a seed, else with <search> for the search's id), and whether an allocation is made once
    for the whole search."""
    record = _resolved(request)
    n = len(record["candidates"])
    points = look_points(record["max_runs"], record["looks"])
    probes = max(0, math.ceil(math.log2(n))) if n > 1 else 0
    spec = load_spec(record["spec_path"], text=record["spec_text"])
    return {
        "candidates": n, "good": record["good"], "bad": record["bad"], "test": record["test"], "metric": record["metric"],
        "builds": 2 + probes, "probes": probes, "looks": list(points),
        "runs": [points[0] * (1 + probes), points[-1] * (1 + probes)],
        "trials": [points[0] * (2 + 3 * probes), points[-1] * (2 + 3 * probes)],
        "workers": len(spec.workers),
        "alpha": record["alpha"], "min_effect": record["min_effect"], "budget": Budget(record["alpha"], n).test_alpha(1),
        "deploy": _planned_dirs(spec, record, directory, request.seed if request.seed is not None else spec.seed),
        "allocated_once": any(ws.allocated for ws in spec.workers), "keep_dirs": request.keep_dirs,
        "shared_reset": list(ship.shared_reset_roles(spec, record["test"])),
    }


def _planned_dirs(spec: Spec, record: dict[str, Any], directory: str | None, seed: int | None) -> list[dict[str, str]]:
    """Every host the search deploys to: its worker's name ({worker} for allocated ones), its
    target, its bisect dir."""
    if not ship.ships(spec):
        return []
    search = ship.search_id(directory, seed) if directory is not None and seed is not None else "<search>"
    arms = [Arm("good", "/good"), Arm("bad", "/bad")]
    batch = load_spec(spec.path, text=probe_spec_text(spec, record["test"], arms, record["repo"], 1, 0, search))
    return [{"worker": host.name, "host": None if host.allocated else host.target, "dir": host.dir}
            for ws in batch.workers for _, host in ship.hosts_of(ws) if host.dir is not None]


class _Measurer:
    """Builds and batches of one search, each done once: run_search's `build` and `measure`."""

    def __init__(self, record: dict[str, Any], directory: str, quiet: bool, read_only: bool = False) -> None:
        self.r = record
        self.read_only = read_only
        self.directory = os.path.abspath(directory)
        self.say: Callable[[str], None] = make_progress(quiet).message
        self.progress = OnceMessages()
        # Read-only (`benchsage report DIR`, perhaps of a directory from elsewhere): the spec's
        # [generator] is not run; a search measures a [[test]] of the spec, never a generated one.
        self.spec = load_spec(record["spec_path"], text=record["spec_text"], run_generator=not read_only)
        self.points = look_points(record["max_runs"], record["looks"])
        self.candidates: tuple[str, ...] = tuple(record["candidates"])
        self.builds = 0
        self.subjects: dict[str, str] = {}
        self.workers: dict[int, list[str]] = {}  # probe index (0: good against bad) -> the worker of each run measured
        self.search = ship.search_id(self.directory, record["seed"]) if ship.ships(self.spec) else None  # None: all local
        self.hosts: Callable[[Spec], Spec] | None = None  # the batches' specs on the hosts allocated for the search

    def prepare(self, commit: str) -> builds.Build:
        if self.read_only:
            self.subjects[commit] = self._subject(commit)
            self.builds += 1
            recorded = builds.recorded(self.directory, commit)
            if recorded is None:
                raise self._unfinished(f"commit {commit[:12]} is not built yet")
            return recorded
        self.subjects[commit] = git.subject(self.r["repo"], commit)
        build = builds.prepare(self.r["repo"], self.directory, commit, self.r["build"])
        self.builds += 1
        what = "build of" if self.r["build"] else "checkout of"
        self.say(f"{what} {commit[:12]} {self.subjects[commit]!r}: " + ("journaled" if build.cached else "ok" if build.ok else f"failed: {build.last_line}"))
        return build

    def _subject(self, commit: str) -> str:
        try:
            return git.subject(self.r["repo"], commit)
        except UsageError:  # the repository is not on this machine: the report names commits by hash
            return ""

    def _unfinished(self, what: str) -> UsageError:
        return UsageError(f"{self.directory}: the search stopped before its answer ({what}); `benchsage resume {self.directory}` "
                          "continues it")

    def build(self, index: int) -> str | None:
        built = self.prepare(self.candidates[index - 1])
        return None if built.ok else built.last_line

    def measure(self, index: int | None, look: int, runs: int) -> np.ndarray:
        commits = [self.r["good"], self.r["bad"]] + ([] if index is None else [self.candidates[index - 1]])
        name = "check" if index is None else f"{index:04d}-{commits[2][:12]}"
        labels = ["good", "bad"] + [c[:12] for c in commits[2:]]
        arms = [Arm(label, builds.worktree_path(self.directory, c)) for label, c in zip(labels, commits)]
        seed = probe_seed(self.r["seed"], name, look)
        text = probe_spec_text(self.spec, self.r["test"], arms, self.r["repo"], runs, seed, self.search)
        folder = os.path.join(self.directory, "probes", name, f"look-{look}")
        if self.read_only and not finished(folder):
            raise self._unfinished(f"{os.path.relpath(folder, self.directory)} is not measured yet")
        worktrees = os.path.join(self.directory, "worktrees")
        shipped = None if self.search is None else (lambda: ship.source(worktrees, [os.path.basename(a.worktree) for a in arms]))
        values, workers = measure(self.spec, text, folder, runs, seed, self.r["metric"], self.progress, shipped, self.hosts)
        self.workers.setdefault(0 if index is None else index, []).extend(workers)
        return values

    def batch_spec(self) -> Spec:
        """A batch's spec (good against bad) on the hosts the search holds: its workers' dirs are
        the search's bisect dirs."""
        arms = [Arm(label, builds.worktree_path(self.directory, c)) for label, c in (("good", self.r["good"]), ("bad", self.r["bad"]))]
        text = probe_spec_text(self.spec, self.r["test"], arms, self.r["repo"], 1, 0, self.search)
        batch = load_spec(self.spec.path, text=text)
        return self.hosts(batch) if self.hosts else batch

    def clean_up(self) -> None:
        """The search has its answer: remove the bisect dirs from the workers' hosts (unless
        --keep-dirs), saying each one that could not be."""
        if self.read_only or self.search is None or self.r.get("keep_dirs"):
            return
        try:
            left = [(host, d, why) for host, d, why in ship.remove_dirs(self.batch_spec(), os.path.join(self.directory, "workers"))
                    if why is not None]
        except (WorkerError, WorkerSetupError) as exc:
            self.say(f"warning: the bisect dirs are left on the workers' hosts: {exc}")
            return
        for host, d, why in left:
            self.say(f"warning: worker {host}: {d} is left: {why}")

    def tell(self, index: int | None, runs: int, verdict: str) -> None:
        what = "good against bad" if index is None else f"probe {self.candidates[index - 1][:12]}"
        self.say(f"{what}: {runs} runs: {verdict}")


def _search(r: dict[str, Any], directory: str, quiet: bool, read_only: bool = False) -> BisectRecord:
    m = _Measurer(r, directory, quiet, read_only)
    if read_only or not any(ws.allocated for ws in m.spec.workers):
        return _searched(r, directory, m)
    # Allocated once for the whole search, released at its end whatever happens (SIGTERM too)
    with signals_as_interrupts(), Held(m.directory, m.say) as held:
        held.hold(m.spec)
        m.hosts = lambda batch: spec_with(batch, held.allocations)
        return _searched(r, directory, m)


def _searched(r: dict[str, Any], directory: str, m: _Measurer) -> BisectRecord:
    for warning in m.spec.warnings:
        m.say(f"warning: {warning}")
    good, bad, candidates = r["good"], r["bad"], m.candidates
    for commit, option in ((good, "--good"), (bad, "--bad")):
        build = m.prepare(commit)
        if not build.ok:
            raise UsageError(f"the build of {option} {commit[:12]} failed: {build.last_line} "
                             f"(the whole output: {os.path.join(directory, 'builds', commit + '.log')})")
    out = run_search(len(candidates), r["alpha"], r["min_effect"], m.points, m.measure, m.build, tell=m.tell)
    m.clean_up()
    probes = tuple(dataclasses.replace(p, commit=candidates[p.index - 1], workers=tuple(m.workers.get(p.index, ())))
                   for p in out.probes)
    skipped = tuple((candidates[i - 1], why, line) for i, why, line in out.skipped)
    if out.range is not None:
        last = candidates[out.range[1] - 1]
        m.subjects.setdefault(last, m._subject(last))
    test = next(t for t in m.spec.tests if t.name == r["test"])
    unit, better = _unit(test, r["metric"])
    return BisectRecord(good=good, bad=bad, candidates=candidates, subjects=m.subjects, test=r["test"], metric=r["metric"],
                        unit=unit, better=better, alpha=r["alpha"], min_effect=r["min_effect"], points=m.points,
                        check=dataclasses.replace(out.check, commit=bad, workers=tuple(m.workers.get(0, ()))), probes=probes, skipped=skipped, range=out.range,
                        builds=m.builds, direction=out.direction)


def _unit(test: Any, metric: str) -> tuple[str, str]:
    for mm in test.metrics:
        if mm.name == metric:
            return mm.unit, mm.better
    return HARNESS_METRIC_UNITS.get(metric, ("", LOWER))
