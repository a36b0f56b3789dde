"""Sequential stopping while an experiment runs: the looks between runs, and the stop.

Each worker carries its runs out in plan order. A look at p runs per arm analyses the first p
runs of each arm of every worker (design/sequential.py), so a worker that reaches a look point
waits there until every worker has, and the look is taken by the thread that finished the last
run it needed, while the others wait between runs: no trial runs during a look. Each look is
journaled before anyone goes on, with, when every test is decided, the planned runs it made
unnecessary; a resumed experiment reads its looks back and never takes one again.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Hashable

from benchsage.design.sequential import SequentialPlan
from benchsage.execute.progress import Progress
from benchsage.stats.sequential import EFFECT, NO_EFFECT, Look
from benchsage.store.journal import Journal

Key = tuple[str, str]  # (test, metric): one comparison of the family


class Looks:
    """The looks of one sequential experiment, shared by its workers' threads."""

    def __init__(self, plan: SequentialPlan, journal: Journal, progress: Progress, stop: threading.Event) -> None:
        self.plan = plan
        self.design = plan.design
        self.points = plan.points
        self.journal = journal
        self.progress = progress
        self._stop = stop
        tests = journal.tests()
        self._names = {t["id"]: t["name"] for t in tests}
        self._family: list[Key] = [(t["name"], m["name"]) for t in tests for m in t["metrics"] if m.get("primary")]
        self._several = len({test for test, _ in self._family}) < len(self._family)  # a test with two primary metrics
        self._looks = [Look.from_record(row["record"]) for row in journal.looks()]
        self._gone: set[str] = set()
        self._cond = threading.Condition()

    @classmethod
    def open(cls, journal: Journal, progress: Progress, stop: threading.Event) -> "Looks | None":
        """The looks of the journal's experiment (None when it stops at a fixed number of runs),
        after taking any look whose runs were finished before a crash left it untaken."""
        recorded = journal.meta().get("sequential")
        if not recorded:
            return None
        looks = cls(SequentialPlan.from_meta(recorded), journal, progress, stop)
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
        stops, or the look cannot be taken in this session (a worker it needs is gone, or one
        of its runs was skipped): `benchsage resume` then continues from there."""
        with self._cond:
            while True:
                if self._stop.is_set() or self.stopped:
                    return False
                point = self.points[len(self._looks)]
                if run["arm_index"] < point:
                    return True
                missing = [r for r in self.journal.runs() if r["arm_index"] < point and r["status"] != "done"]
                if not missing:
                    self._take_due()
                    continue
                if any(r["worker"] in self._gone or r["status"] not in ("planned", "running") for r in missing):
                    return False
                self._cond.wait()

    def run_finished(self, worker: str, run: dict[str, Any]) -> None:
        """After `worker` finished `run` (journaled): take the look it completes, if any."""
        with self._cond:
            if not self.stopped and run["arm_index"] + 1 >= self.points[len(self._looks)]:
                self._take_due()
            self._cond.notify_all()

    def leave(self, worker: str) -> None:
        """`worker` carries out nothing more in this session (done, lost or stopped)."""
        with self._cond:
            self._gone.add(worker)
            self._cond.notify_all()

    @property
    def stopped(self) -> bool:
        """The last look taken ended the experiment (every test decided, or the last look)."""
        return bool(self._looks) and self._looks[-1].stop

    # -- the looks -------------------------------------------------------------------------

    def _take_due(self) -> None:
        """Take every look whose runs are all done (the caller holds the lock)."""
        while not self.stopped:
            k = len(self._looks)
            point = self.points[k]
            runs = self.journal.runs()
            if any(r["arm_index"] < point and r["status"] != "done" for r in runs):
                return
            look = self.design.decide(k, self._data(point), self._looks)
            not_needed = [r["id"] for r in runs if r["status"] != "done"] if look.stop else []
            self.journal.record_look(k, point, look.to_record(), not_needed)
            self._looks.append(look)
            self.progress.message(self._describe(look, point, len(not_needed)))

    def _data(self, point: int) -> dict[Hashable, tuple[list[float], list[float]]]:
        """Each comparison's (fixed values, random values) in the first `point` runs of each
        arm of every worker; failed trials and non-finite values leave one fewer."""
        data: dict[Hashable, tuple[list[float], list[float]]] = {key: ([], []) for key in self._family}
        for test_id, arm, metric, value in self.journal.look_values(point):
            pair = data.get((self._names[test_id], metric))
            if pair is not None and math.isfinite(value):
                pair[0 if arm == "fixed" else 1].append(value)
        return data

    def _describe(self, look: Look, point: int, not_needed: int) -> str:
        """What the progress display says about a look: where, what it decided, what comes next."""
        where = f"look {look.index + 1} of {len(self.points)} at {point} runs per arm"
        if self.plan.workers > 1:
            where += f" on each of {self.plan.workers} workers"
        groups: dict[str | None, list[str]] = {EFFECT: [], NO_EFFECT: [], None: []}
        for t in look.tests:
            test, metric = t.test  # type: ignore[misc]
            groups[t.decided].append(f"{test} [{metric}]" if self._several else str(test))
        parts = [f"{label}: {', '.join(names)}" for label, names in
                 (("effect", groups[EFFECT]), ("no-effect", groups[NO_EFFECT]), ("undecided", groups[None])) if names]
        text = f"{where}: {look.decided} of {look.m} tests decided ({'; '.join(parts)})"
        if look.decided == look.m:
            return text + (f"; every test is decided: the experiment stops, {not_needed} planned runs are not needed"
                           if not_needed else "; every test is decided")
        if look.stop:
            return text + "; this was the last look"
        return text + f"; going on to {self.points[look.index + 1]} runs per arm"
