"""What a look found, per test and in all: the record the runner journals, the JSON reports and
a resumed experiment reads back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Hashable, Mapping

from benchsage.stats.sequential.decision import CODES, DECISIONS, settled


@dataclass(frozen=True)
class TestLook:
    """One test at one look.

    z: the standardized Mann-Whitney statistic (positive: the fixed arm's values larger); None
        with fewer than min_values values in an arm or all values equal.
    critical: the Bonferroni boundary c_k(alpha / m) at this look: the efficacy boundary with
        Bonferroni, and the critical value of the repeated CI with either correction.
    shift, shift_ci: Hodges-Lehmann shift (fixed minus random, in the metric's unit) and its
        repeated CI at this look; shift_ci_pct: that CI in percent of median_fixed.
    decided: "effect", "no-effect" or None, as of this look (a decided test stays decided);
        decided_at_look / decided_at_runs: when (runs per arm); level: the per-test alpha at
        which an "effect" crossed (alpha / m, or alpha / h with Holm).
    """

    __test__ = False  # not a pytest test class

    test: Hashable
    n_fixed: int
    n_random: int
    z: float | None
    critical: float
    shift: float | None
    shift_ci: tuple[float, float] | None
    median_fixed: float | None
    shift_ci_pct: tuple[float, float] | None
    decided: str | None
    decided_at_look: int | None
    decided_at_runs: int | None
    level: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "test": _key_json(self.test),
            "n_fixed": self.n_fixed,
            "n_random": self.n_random,
            "z": self.z,
            "critical": _finite(self.critical),
            "shift": self.shift,
            "shift_ci": list(self.shift_ci) if self.shift_ci else None,
            "median_fixed": self.median_fixed,
            "shift_ci_pct": list(self.shift_ci_pct) if self.shift_ci_pct else None,
            "decided": self.decided,
            "decided_at_look": self.decided_at_look,
            "decided_at_runs": self.decided_at_runs,
            "level": self.level,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "TestLook":
        ci, pct = d.get("shift_ci"), d.get("shift_ci_pct")
        crit = d.get("critical")
        return cls(
            test=_key_from_json(d["test"]),
            n_fixed=int(d["n_fixed"]),
            n_random=int(d["n_random"]),
            z=d.get("z"),
            critical=math.inf if crit is None else float(crit),
            shift=d.get("shift"),
            shift_ci=(float(ci[0]), float(ci[1])) if ci else None,
            median_fixed=d.get("median_fixed"),
            shift_ci_pct=(float(pct[0]), float(pct[1])) if pct else None,
            decided=d.get("decided"),
            decided_at_look=d.get("decided_at_look"),
            decided_at_runs=d.get("decided_at_runs"),
            level=d.get("level"),
        )


@dataclass(frozen=True)
class Look:
    """The result of one interim analysis.

    index: 0-based look; runs: runs per arm at this look; information: runs / max_runs.
    alpha_spent: family-wise alpha spent by this look, m x alpha_k(alpha / m) (the Bonferroni
        bound over the m tests; alpha at the last look).
    decided: how many tests are decided after this look (cumulative); newly_decided: at it.
    stop: every test is decided, or this is the last look: the experiment ends here.
    """

    index: int
    runs: int
    information: float
    alpha_spent: float
    m: int
    tests: tuple[TestLook, ...]
    decided: int
    newly_decided: int
    stop: bool

    def decisions(self) -> dict[Hashable, str | None]:
        return {t.test: t.decided for t in self.tests}

    @property
    def verdict(self) -> str | None:
        """The experiment's verdict as of this look: "effect" (some test decided effect),
        "no-effect" (every test decided no-effect) or None (not settled); see `settled`."""
        return DECISIONS[int(settled([[CODES[t.decided] for t in self.tests]])[0])]

    def to_json(self) -> dict[str, Any]:
        """The look as an entry of the analysis JSON's `sequential.looks`."""
        return {"runs": self.runs, "decided": self.decided, "alpha_spent": self.alpha_spent}

    def to_record(self) -> dict[str, Any]:
        """Everything about the look, JSON-ready, for the journal (`Look.from_record` reads it
        back, e.g. to resume an experiment's looks)."""
        return {
            "index": self.index,
            "runs": self.runs,
            "information": self.information,
            "alpha_spent": self.alpha_spent,
            "m": self.m,
            "decided": self.decided,
            "newly_decided": self.newly_decided,
            "stop": self.stop,
            "tests": [t.to_json() for t in self.tests],
        }

    @classmethod
    def from_record(cls, d: Mapping[str, Any]) -> "Look":
        return cls(
            index=int(d["index"]),
            runs=int(d["runs"]),
            information=float(d["information"]),
            alpha_spent=float(d["alpha_spent"]),
            m=int(d["m"]),
            tests=tuple(TestLook.from_json(t) for t in d["tests"]),
            decided=int(d["decided"]),
            newly_decided=int(d["newly_decided"]),
            stop=bool(d["stop"]),
        )


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _key_json(key: Hashable) -> Any:
    return list(key) if isinstance(key, tuple) else key


def _key_from_json(key: Any) -> Hashable:
    return tuple(key) if isinstance(key, list) else key
