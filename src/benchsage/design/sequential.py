"""Sequential stopping in the plan: when the looks happen, and what their results mean.

With `stop = "sequential"` the plan's runs are a most: the runner looks at the data after
p_1 < p_2 < ... < p_K runs per arm on every worker and stops at the first look where every test
is decided, or with `decide = "verdict"` where the experiment's verdict is settled
(stats/sequential/ decides). This module fixes those points from the spec and the
journal's meta, so that `benchsage plan`, the runner and the analysis agree on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from benchsage.errors import SpecError
from benchsage.spec import Spec
from benchsage.vocabulary import DECIDE_EACH, DECIDE_VERDICT, FIXED_STOP, STOPPED_DECIDED, STOPPED_LAST_LOOK, STOPPED_VERDICT
from benchsage.stats.sequential import Look, SequentialDesign

DEFAULT_LOOKS = 4
# A look decides nothing before an arm holds this many values (stats.sequential's min_values,
# the fixed analysis's minimum too); the default never plans a look that adds fewer runs.
RUNS_PER_LOOK = 5
SPENDING = "obrien-fleming"


def default_looks(runs_per_arm: int) -> int:
    """Looks when the spec names none: four (a look every quarter of the runs), fewer when the
    runs are too few for each look to add RUNS_PER_LOOK runs per arm.

    Four and not more: O'Brien-Fleming-type spending keeps early boundaries so high that a look
    before a quarter of 40 runs can decide nothing, and every look pauses a fleet until its
    slowest worker catches up. A look at half the runs is where most early stops happen.
    """
    return max(1, min(DEFAULT_LOOKS, runs_per_arm // RUNS_PER_LOOK))


@dataclass(frozen=True)
class SequentialPlan:
    """The looks of one sequential experiment.

    runs_per_arm: the most runs per arm on each worker (the spec's `runs`); looks: how many
    interim analyses; workers: how many workers carry the plan out. A look at p runs per arm
    analyses the first p runs of each arm of every worker, their values pooled: the design
    (stats.sequential.SequentialDesign) counts runs per arm over all workers. decide: the
    spec's `decide`, "each" or "verdict" (SequentialDesign's rule).
    """

    runs_per_arm: int
    looks: int
    workers: int
    alpha: float
    correction: str
    min_effect: float
    decide: str = DECIDE_EACH

    @classmethod
    def of(cls, spec: Spec, runs_per_arm: int) -> "SequentialPlan | None":
        """The spec's looks for `runs_per_arm` runs per arm (the spec's, or --runs); None when
        the spec stops at a fixed number of runs. A `looks` above the runs is a SpecError."""
        if spec.stop == FIXED_STOP:
            return None
        looks = spec.looks if spec.looks is not None else default_looks(runs_per_arm)
        if looks > runs_per_arm:
            source = "its 'runs'" if runs_per_arm == spec.runs else f"--runs {runs_per_arm}"
            raise SpecError(f"{spec.path}: [experiment]: key 'looks' ({looks}) is larger than {source}: "
                            "each look needs at least one new run per arm; lower 'looks' or raise the runs")
        return cls(runs_per_arm, looks, len(spec.workers), spec.alpha, spec.correction, spec.min_effect, spec.decide)

    @property
    def design(self) -> SequentialDesign:
        return SequentialDesign(
            max_runs=self.workers * self.runs_per_arm, looks=self.looks, alpha=self.alpha, correction=self.correction,
            min_effect=self.min_effect, spending=SPENDING, rule=self.decide,
        )

    @property
    def points(self) -> tuple[int, ...]:
        """Runs per arm on each worker at each look; the last is runs_per_arm.

        One worker: ceil(k runs / looks). Several: the design's points over all workers, each
        shared out (rounded down, so that a look never holds more values than the boundaries
        were computed for); with `looks` dividing `runs` this is ceil(k runs / looks) too.
        """
        return tuple(p // self.workers for p in self.design.look_points())

    def method(self, m: int | None = None) -> str:
        if self.workers == 1:
            return self.design.method(m)
        # The looks analyse each worker's rounded-down share, and their boundaries are those of
        # the runs analysed (SequentialDesign.decide's `runs`), not the design's planned points.
        text = self.design.method(m, points=[p * self.workers for p in self.points])
        points = ", ".join(str(p) for p in self.points)
        return text + (f"; the values of {self.workers} workers pooled, looks at {points} runs per arm on every worker "
                       "(the runs per arm above count all workers)")

    def to_meta(self) -> dict[str, Any]:
        """What the journal's meta records under "sequential"."""
        return {
            "looks": self.looks, "runs_per_arm": self.runs_per_arm, "workers": self.workers, "alpha": self.alpha,
            "correction": self.correction, "min_effect": self.min_effect, "spending": SPENDING, "points": list(self.points),
            "decide": self.decide,
        }

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> "SequentialPlan":
        return cls(int(meta["runs_per_arm"]), int(meta["looks"]), int(meta["workers"]), float(meta["alpha"]),
                   str(meta["correction"]), float(meta["min_effect"]), str(meta.get("decide", DECIDE_EACH)))

    def summary(self, looks: Sequence[Look]) -> dict[str, Any]:
        """The analysis JSON's "sequential" object, in runs per arm on each worker: the looks taken,
        where the experiment stopped (null while it has not), the most runs and the method; then
        the decide rule, the experiment's verdict as of the last look ("effect": some test has
        an order effect, "no-effect": every test is shown smaller than min_effect, null: not
        settled), why it stopped (null while it has not) and the tests left undecided."""
        points = self.points
        last = looks[-1] if looks else None
        return {
            "looks": [{"runs": points[lk.index], "decided": lk.decided, "alpha_spent": lk.alpha_spent} for lk in looks],
            "stopped_at_runs": points[last.index] if last is not None and last.stop else None,
            "max_runs": self.runs_per_arm,
            "method": self.method(last.m if last is not None else None),
            "planned_looks": list(points),
            "tests": last.m if last is not None else None,
            "min_effect": self.min_effect,
            "spending": SPENDING,
            "correction": self.correction,
            "decide": self.decide,
            "verdict": last.verdict if last is not None else None,
            "stopped_because": self.stopped_because(last),
            "undecided": [_test_json(t.test) for t in last.tests if t.decided is None] if last is not None else [],
        }

    def stopped_because(self, last: Look | None) -> str | None:
        """Why the experiment stopped at look `last` (its last look taken), None if it has not:
        its verdict settled (decide = "verdict"), every test decided, or the most runs done."""
        if last is None or not last.stop:
            return None
        if self.decide == DECIDE_VERDICT and last.verdict is not None:
            return STOPPED_VERDICT
        if last.decided == last.m:
            return STOPPED_DECIDED
        return STOPPED_LAST_LOOK

    def decisions(self, looks: Sequence[Look]) -> dict[Any, tuple[str | None, int | None]]:
        """Each test's (decision, runs per arm on each worker when it was made), as of the last look."""
        if not looks:
            return {}
        points = self.points
        return {t.test: (t.decided, points[t.decided_at_look] if t.decided_at_look is not None else None)
                for t in looks[-1].tests}


def _test_json(key: Any) -> Any:
    """A test of the family as the JSON names it: {"test", "metric"} for a (test, metric) key."""
    if isinstance(key, tuple) and len(key) == 2:
        return {"test": key[0], "metric": key[1]}
    return key
