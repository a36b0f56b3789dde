"""Sequential stopping while an experiment runs: the looks between runs, and the stop.

Each worker carries its runs out in plan order. A look at p runs per arm analyses the first p
runs of each arm of every worker (design/sequential.py), so a worker that reaches a look point
waits there until every run below it is done, and the look is taken by the thread that
finished the last run it needed, while the others wait between runs: no trial runs during a
look. Runs that will not be carried out in this session do not hold a look back: those of a
lost worker (the others go on, as they do without looks) and those of a context whose build
failed on its worker. The look then analyses the pairs of runs that are complete, and its
boundaries are those of the runs it analysed (stats.sequential.SequentialDesign.decide says
why the family-wise error still holds); only the last look waits for every run, since no look
comes after it to take in what is missing (`benchsage resume` does).

Each look is journaled before anyone goes on, with the runs it analysed and, when every test
is decided (with `decide = "verdict"`: when the experiment's verdict is settled), the planned
runs it made unnecessary; a resumed experiment reads its looks back and
never takes one again.
"""

from __future__ import annotations

import math
import threading
from dataclasses import replace
from typing import Any, Hashable

from benchsage.design.sequential import SequentialPlan
from benchsage.execute.progress import Progress
from benchsage.stats.sequential import EFFECT, NO_EFFECT, Look
from benchsage.store.journal import Journal
from benchsage.vocabulary import DECIDE_VERDICT

Key = tuple[str, str]  # (test, metric): one comparison of the family
Pair = tuple[str, int]  # (worker, arm_index): the fixed and the random run of one pair

# What a look can do now: be taken, wait for runs still coming, or not be taken in this session.
TAKE, WAIT, NEVER = "take", "wait", "never"
SKIPPED = "skipped"  # run status: its context's build failed on its worker (runner.py)


class Looks:
    """The looks of one sequential experiment, shared by its workers' threads."""

    def __init__(self, plan: SequentialPlan, journal: Journal, progress: Progress, stop: threading.Event,
                 baseline: str | None = None) -> None:
        self.plan = plan
        self.points = plan.points
        self.journal = journal
        self.progress = progress
        self._stop = stop
        tests = journal.tests()
        self._names = {t["id"]: t["name"] for t in tests}
        self._family: list[Key] = [(t["name"], m["name"]) for t in tests for m in t["metrics"] if m.get("primary")]
        self._several = len({test for test, _ in self._family}) < len(self._family)  # a test with two primary metrics
        cells = journal.meta().get("treatments") or []
        self._cells = max(1, len(cells))
        # With observer levels the order analysis examines the baseline level's runs only
        # (analyze/treatments/table.py, order_rows), and so do the looks: their information is a
        # fraction of the baseline's pairs in the plan, which the last look analyses.
        self._examined = None if baseline is None else {i for i, cell in enumerate(cells) if cell.get("observer") == baseline}
        pairs = len(_complete_pairs([{**r, "status": "done"} for r in journal.runs() if self._counted(r)]))
        self.design = replace(plan.design, max_runs=max(pairs, plan.looks))  # plan.design itself without observer levels
        self._looks = [Look.from_record(row["record"]) for row in journal.looks()]
        self._gone: set[str] = set()
        self._cond = threading.Condition()

    @classmethod
    def open(cls, journal: Journal, progress: Progress, stop: threading.Event, baseline: str | None = None) -> "Looks | None":
        """The looks of the journal's experiment (None when it stops at a fixed number of runs),
        after taking any look whose runs were finished before a crash left it untaken.
        baseline: the observer level the order analysis examines; None without observer levels."""
        recorded = journal.meta().get("sequential")
        if not recorded:
            return None
        looks = cls(SequentialPlan.from_meta(recorded), journal, progress, stop, baseline)
        if looks._looks:
            last = looks._looks[-1]
            progress.message(f"resuming after look {last.index + 1} of {len(looks.points)} at {looks.points[last.index]} runs "
                             f"per arm: {last.decided} of {last.m} tests decided")
        with looks._cond:
            looks._take_due()
        return looks

    # -- the workers' hooks ----------------------------------------------------------------

    def may_start(self, worker: str, run: dict[str, Any]) -> bool:
        """Whether `worker` may carry out `run` now. A run beyond the next look point waits for
        that look; False when the experiment is decided (the run is not needed), the user
        stops, or the look cannot be taken in this session (the last look, or one with no new
        complete pair, while runs below it will not be carried out): `benchsage resume` then
        continues from there."""
        with self._cond:
            while True:
                if self._stop.is_set() or self.stopped:
                    return False
                taken = len(self._looks)
                if run["arm_index"] < self.points[taken]:
                    return True
                state = self._take_due()
                if len(self._looks) > taken:
                    continue  # a look was taken: the run may be below the next point
                if state == NEVER:
                    return False
                self._cond.wait()

    def run_finished(self, worker: str, run: dict[str, Any]) -> None:
        """After `worker` finished `run` (journaled, or skipped): take the look it completes, if any."""
        with self._cond:
            self._take_due()
            self._cond.notify_all()

    def leave(self, worker: str) -> None:
        """`worker` carries out nothing more in this session (done, lost or stopped): the looks
        no longer wait for its runs."""
        with self._cond:
            self._gone.add(worker)
            self._cond.notify_all()

    def wake(self) -> None:
        """After the user stopped the experiment (the stop event is set): every worker waiting
        for a look returns from may_start."""
        with self._cond:
            self._cond.notify_all()

    @property
    def stopped(self) -> bool:
        """The last look taken ended the experiment (every test decided, or the last look)."""
        return bool(self._looks) and self._looks[-1].stop

    @property
    def taken(self) -> tuple[Look, ...]:
        """The looks taken so far, this session's and those of the sessions before."""
        return tuple(self._looks)

    # -- the looks -------------------------------------------------------------------------

    def _take_due(self) -> str:
        """Take every look that is due (the caller holds the lock); what the next look can do."""
        while not self.stopped and not self._stop.is_set():
            k = len(self._looks)
            point = self.points[k]
            runs = self.journal.runs()
            state, pairs = self._state(k, point, runs)
            if state != TAKE:
                return state
            look = self.design.decide(k, self._data(pairs, runs), self._looks, runs=len(pairs))
            if look.stop and k + 1 < len(self.points) and point < self._cells:
                look = replace(look, stop=False)  # every treatment first needs a run in each arm
            not_needed = [r["id"] for r in runs if r["status"] != "done"] if look.stop else []
            if not_needed:
                # Nothing is in flight at a look: the runs a lost worker left failed go back to
                # planned with the rest, so that the look rules them all out.
                self.journal.interrupt_unfinished()
            missing = [r["id"] for r in runs
                       if r["arm_index"] < point and self._counted(r) and (r["worker"], r["arm_index"]) not in pairs]
            self.journal.record_look(k, point, {**look.to_record(), "missing_runs": missing}, not_needed)
            self._looks.append(look)
            self.progress.message(self._describe(look, point, len(not_needed), runs, missing))
            # Runs skipped in this session were dropped from the progress then.
            fresh = sum(1 for r in runs if r["status"] not in ("done", SKIPPED)) if look.stop else 0
            if fresh:
                self.progress.dropped(fresh, fresh * len(self._names), "not needed")
        return NEVER  # the experiment stopped, or the user stops it

    def _state(self, k: int, point: int, runs: list[dict[str, Any]]) -> tuple[str, set[Pair]]:
        """Whether look k can be taken now, and the complete pairs of runs below its point that
        it analyses."""
        below = [r for r in runs if r["arm_index"] < point]
        if any(r["status"] != "done" and r["worker"] not in self._gone and r["status"] != SKIPPED for r in below):
            return WAIT, set()
        examined = [r for r in below if self._counted(r)]
        pairs = _complete_pairs(examined)
        if len(pairs) < len(examined) // 2 and k + 1 == len(self.points):
            return NEVER, pairs  # the last look analyses every run
        if not pairs or (self._looks and len(pairs) <= self._looks[-1].runs):
            return NEVER, pairs  # nothing new since the last look
        return TAKE, pairs

    def _counted(self, run: dict[str, Any]) -> bool:
        """Whether the looks examine `run`: every run, or with observer levels the baseline's."""
        return self._examined is None or run.get("treatment") in self._examined

    def _data(self, pairs: set[Pair], runs: list[dict[str, Any]]) -> dict[Hashable, tuple[list[float], list[float]]]:
        """Each comparison's (fixed values, random values) in the complete pairs of runs; failed
        trials and non-finite values leave one fewer."""
        analysed = {r["id"] for r in runs if (r["worker"], r["arm_index"]) in pairs}
        data: dict[Hashable, tuple[list[float], list[float]]] = {key: ([], []) for key in self._family}
        wanted = {metric for _, metric in self._family}
        trials: dict[int, tuple[str, str]] = {}  # trial id -> (test, arm)
        with self.journal.lock:  # one reader of the shared connection at a time
            for row in self.journal.trial_rows():  # id, run, arm, worker, test, ..., status (11), ..., wall_time (13)
                trial_id, run_id, arm, test_id, status, wall_time = row[0], row[1], row[2], row[4], row[11], row[13]
                if run_id in analysed and status == "ok":
                    trials[trial_id] = (self._names[test_id], arm)
                    _add(data, (self._names[test_id], "wall_time"), arm, wall_time)
            for trial_id, metric, value in self.journal.trial_values():
                if trial_id in trials and metric in wanted:
                    test, arm = trials[trial_id]
                    _add(data, (test, metric), arm, value)
        return data

    def _describe(self, look: Look, point: int, not_needed: int, runs: list[dict[str, Any]], missing: list[int]) -> str:
        """What the progress display says about a look: where, what it decided, what comes next."""
        where = f"look {look.index + 1} of {len(self.points)} at {point} runs per arm"
        if self.plan.workers > 1:
            where += f" on each of {self.plan.workers} workers"
        if missing:
            where += f" ({_without(runs, set(missing), self._gone)})"
        groups: dict[str | None, list[str]] = {EFFECT: [], NO_EFFECT: [], None: []}
        for t in look.tests:
            test, metric = t.test  # type: ignore[misc]
            groups[t.decided].append(f"{test} [{metric}]" if self._several else str(test))
        parts = [f"{label}: {', '.join(names)}" for label, names in
                 (("effect", groups[EFFECT]), ("no-effect", groups[NO_EFFECT]), ("undecided", groups[None])) if names]
        text = f"{where}: {look.decided} of {look.m} tests decided ({'; '.join(parts)})"
        verdict = look.verdict if self.plan.decide == DECIDE_VERDICT else None
        if verdict is not None:
            reason = _settled(verdict, groups[EFFECT], len(groups[None]))
            if not look.stop:
                return text + (f"; {reason}, but the {self._cells} treatments need a run in each arm first: "
                               f"going on to {self.points[look.index + 1]} runs per arm")
            return text + (f"; {reason}: the experiment stops, {not_needed} planned runs are not needed" if not_needed else f"; {reason}")
        if look.decided == look.m and look.stop:
            return text + (f"; every test is decided: the experiment stops, {not_needed} planned runs are not needed"
                           if not_needed else "; every test is decided")
        if look.stop:
            return text + "; this was the last look"
        if look.decided == look.m:
            return text + (f"; every test is decided, but the {self._cells} treatments need a run in each arm first: "
                           f"going on to {self.points[look.index + 1]} runs per arm")
        return text + f"; going on to {self.points[look.index + 1]} runs per arm"


def _settled(verdict: str, effects: list[str], undecided: int) -> str:
    """Why a look with decide = "verdict" ends the experiment: 'the verdict is settled: an order
    effect in d, 3 tests undecided' (the look's own words name the undecided tests)."""
    what = f"an order effect in {', '.join(effects)}" if verdict == EFFECT else "no order effect worth finding in any test"
    left = f", {undecided} test{'s' if undecided != 1 else ''} undecided" if undecided else ""
    return f"the verdict is settled: {what}{left}"


def _complete_pairs(runs: list[dict[str, Any]]) -> set[Pair]:
    """The pairs whose fixed and random runs are both done. A look analyses whole pairs only:
    each worker then adds as many runs to one arm as to the other, so that machines that
    differ cannot make an order effect (a lost worker may leave half a pair done)."""
    done: dict[Pair, int] = {}
    for r in runs:
        if r["status"] == "done":
            key = (r["worker"], r["arm_index"])
            done[key] = done.get(key, 0) + 1
    return {key for key, n in done.items() if n == 2}


def _add(data: dict[Hashable, tuple[list[float], list[float]]], key: Key, arm: str, value: Any) -> None:
    pair = data.get(key)
    if pair is not None and value is not None and math.isfinite(value):
        pair[0 if arm == "fixed" else 1].append(float(value))


def _without(runs: list[dict[str, Any]], missing: set[int], gone: set[str]) -> str:
    """Whose runs a look went ahead without: "without 3 runs of node3 (lost) and 2 runs of contexts whose build failed"."""
    by_worker: dict[str, int] = {}
    skipped = 0
    for r in runs:
        if r["id"] in missing:
            if r["status"] == SKIPPED and r["worker"] not in gone:
                skipped += 1
            else:
                by_worker[r["worker"]] = by_worker.get(r["worker"], 0) + 1
    parts = [f"{n} run{'s' if n != 1 else ''} of {w} (lost)" for w, n in sorted(by_worker.items())]
    if skipped:
        parts.append(f"{skipped} run{'s' if skipped != 1 else ''} of contexts whose build failed")
    return "without " + " and ".join(parts)
