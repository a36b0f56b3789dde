"""The group-sequential design of an order experiment: its looks, their boundaries, and the
analysis of each look (SequentialDesign.decide, which the runner calls between runs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Hashable, Mapping, Sequence

import numpy as np

from benchsage.stats.ranksum import mann_whitney_z
from benchsage.stats.sequential.boundaries import Boundaries, check_information, spending_boundaries
from benchsage.stats.sequential.decision import (CODES, DECIDED_EFFECT, DECISIONS, EACH, RULES, UNDECIDED, decide_step, relative_interval,
                                                 stops)
from benchsage.stats.sequential.looks import Look, TestLook
from benchsage.stats.sequential.spending import alpha_spending, check_alpha, check_spending
from benchsage.stats.shift import shift_ci

CORRECTIONS: tuple[str, ...] = ("bonferroni", "holm")


@dataclass(frozen=True)
class SequentialDesign:
    """A group-sequential order experiment: at most `max_runs` runs per arm, `looks` interim
    analyses evenly spaced in runs, family-wise error `alpha` over all tests and looks.

    correction: "bonferroni" (each test at alpha / m with its own spending boundaries) or "holm"
        (step-down across tests and looks; rejects everything Bonferroni rejects, and possibly
        more). spending: "obrien-fleming" (default) or "pocock" (see `alpha_spending`).
    min_effect: percent; a test is decided "no-effect" when the repeated CI of the shift lies
        within +-min_effect % of the fixed-arm median. min_values: a test with fewer values in
        an arm is not decided at that look (benchsage's fixed analysis needs 5 too).
    rule: when the experiment stops before its last look: "each" (default), at the first look
        where every test is decided; "verdict", at the first look where the experiment's
        verdict is settled (an effect in some test, or every test decided no-effect), the tests
        still undecided then staying undecided. Stopping earlier only takes decisions away, so
        the family-wise error of "each" bounds that of "verdict", experiment by experiment.
    """

    max_runs: int
    looks: int
    alpha: float = 0.05
    correction: str = "bonferroni"
    min_effect: float = 2.0
    spending: str = "obrien-fleming"
    min_values: int = 5
    rule: str = EACH
    _points: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("max_runs", "looks", "min_values"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        if self.max_runs < 1:
            raise ValueError(f"max_runs must be at least 1, got {self.max_runs}")
        if self.looks < 1:
            raise ValueError(f"looks must be at least 1, got {self.looks}")
        if self.looks > self.max_runs:
            raise ValueError(f"looks ({self.looks}) cannot exceed the runs per arm ({self.max_runs}): each look needs at least one new run")
        if self.min_values < 1:
            raise ValueError(f"min_values must be at least 1, got {self.min_values}")
        check_alpha(self.alpha)
        if self.correction not in CORRECTIONS:
            raise ValueError(f"unknown correction {self.correction!r}: expected one of {', '.join(CORRECTIONS)}")
        check_spending(self.spending)
        if self.rule not in RULES:
            raise ValueError(f"unknown rule {self.rule!r}: expected one of {', '.join(RULES)}")
        if not isinstance(self.min_effect, (int, float, np.floating)) or not math.isfinite(self.min_effect) or self.min_effect <= 0:
            raise ValueError(f"min_effect must be a positive number of percent, got {self.min_effect!r}")
        points = tuple(math.ceil(k * self.max_runs / self.looks) for k in range(1, self.looks + 1))
        object.__setattr__(self, "_points", points)

    # -- the plan ---------------------------------------------------------------------------

    def look_points(self) -> tuple[int, ...]:
        """Runs per arm at each look: ceil(k max_runs / looks), k = 1..looks; the last is max_runs."""
        return self._points

    def information(self) -> tuple[float, ...]:
        """Information fractions t_k = runs at look k / max_runs."""
        return tuple(p / self.max_runs for p in self._points)

    def boundaries(self, level: float) -> Boundaries:
        """Two-sided spending boundaries of one test at per-test level `level` at this design's looks."""
        return spending_boundaries(self.information(), level, self.spending)

    def critical(self, m: int, h: int | None = None, information: Sequence[float] | None = None) -> tuple[float, ...]:
        """c_k(alpha / h) at every look, for a family of m tests (h defaults to m: Bonferroni):
        at the planned looks, or at `information`, the fractions of the looks as taken (c_k
        depends on t_1..t_k only, so a prefix of the looks gives their boundaries)."""
        h = m if h is None else h
        if m < 1 or not 1 <= h <= m:
            raise ValueError(f"need 1 <= h <= m, got h={h}, m={m}")
        t = self.information() if information is None else check_information(information)
        return spending_boundaries(t, self.alpha / h, self.spending).critical

    def alpha_spent(self, m: int, information: Sequence[float] | None = None) -> tuple[float, ...]:
        """Family-wise alpha spent by each look with m tests: m x alpha_k(alpha / m), at the
        planned looks or at `information` (the looks as taken)."""
        if m < 1:
            raise ValueError(f"m must be at least 1, got {m}")
        t = self.information() if information is None else check_information(information)
        spent = alpha_spending(np.array(t), self.alpha / m, self.spending)
        # exactly alpha at t = 1, not alpha within rounding
        return tuple(float(self.alpha) if tk >= 1.0 else float(m * s) for tk, s in zip(t, spent))

    def method(self, m: int | None = None, points: Sequence[int] | None = None) -> str:
        """One sentence naming every choice, for the JSON's `sequential.method`; `points`: the
        runs per arm the looks analyse when they are not the planned ones (decide's `runs`)."""
        spend = {"obrien-fleming": "O'Brien-Fleming-type", "pocock": "Pocock-type"}[self.spending]
        family = f" over {m} tests" if m is not None else ""
        corr = "Bonferroni" if self.correction == "bonferroni" else "Holm step-down across tests and looks"
        at = ", ".join(str(p) for p in (points if points is not None else self._points))
        return (
            f"group-sequential Mann-Whitney test of the fixed vs random arm, {self.looks} look"
            f"{'s' if self.looks != 1 else ''} at {at} runs per arm; Lan-DeMets {spend} alpha spending; "
            f"{corr}{family}, family-wise alpha {self.alpha:g}; no-effect when the repeated "
            f"Hodges-Lehmann CI of the shift lies within +-{self.min_effect:g}% of the fixed-arm median"
        )

    # -- one look ---------------------------------------------------------------------------

    def decide(
        self,
        look: int,
        data: Mapping[Hashable, tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]],
        previous: Sequence[Look] = (),
        runs: int | None = None,
    ) -> Look:
        """Analyse look `look` (0-based) and decide what can be decided.

        data: for every test of the family (the same tests at every look), its (fixed-arm
            values, random-arm values) so far: at most `runs` values per arm (a failed trial
            leaves one fewer; boundaries stay those of the runs).
        previous: the Look results of looks 0..look-1, in order (the Holm step-down uses the
            earlier looks' statistics; decisions already made are kept).
        runs: the runs per arm this look analyses, when they are not the planned
            look_points()[look]: more than the previous look's, at most max_runs.
        Returns the Look; `look.stop` says whether the experiment can end.

        Looks at other runs than planned keep the family-wise error at most alpha. The
        boundaries are those of the looks as taken: c_k solves the exit probability of the
        canonical joint distribution (corr(Z_j, Z_k) = sqrt(t_j / t_k)) at the information
        fractions t_j = runs_j / max_runs of this look and the earlier ones, spending
        alpha(t_k) by look k. That is Lan & DeMets' (1983) use of a spending function: the
        type I error stays alpha(t_K) <= alpha whatever the looks' times, as long as they do not
        depend on the values seen (Jennison & Turnbull 2000, section 7.2). A fleet's looks
        analyse every worker's first p runs per arm, p a per-worker share of the planned runs
        (rounded down): fewer runs than planned, so boundaries at the planned fractions would
        assume more correlation between looks than there is, and the error exceed alpha (with
        3 workers of 7 runs and 5 looks, 0.052 at alpha = 0.05: tests/stats/sequential/test_design.py).
        The same holds when a look goes ahead without the runs of a lost worker or of a failed
        context: what is missing is fixed by events outside the values, and the runs analysed
        at a look include those of every earlier look.
        """
        keys = _family(look, self.looks, data, previous)
        runs = self._points[look] if runs is None else runs
        information = self._taken(look, runs, previous)
        m = len(keys)
        arrays = [_arms(key, data[key], runs, look) for key in keys]
        crit = self.critical(m, information=information)[look]
        z, shift, low, high, med = _statistics(arrays, crit, self.min_values)
        lo_pct, hi_pct = relative_interval(low, high, med)
        with np.errstate(invalid="ignore"):
            within = (lo_pct >= -self.min_effect) & (hi_pct <= self.min_effect)
        prior = previous[-1].tests if previous else None
        state = np.array([[CODES[t.decided] for t in prior]] if prior else [[UNDECIDED] * m])
        abs_z = np.full((1, m, look + 1), np.nan)
        for l, prev in enumerate(previous):
            abs_z[0, :, l] = [abs(t.z) if t.z is not None else np.nan for t in prev.tests]
        abs_z[0, :, look] = np.abs(z)
        new_state, level = decide_step(self, look, abs_z, within[None, :], state, information)
        tests = []
        for i, key in enumerate(keys):
            code = int(new_state[0, i])
            if prior and prior[i].decided is not None:
                at_look, at_runs, lvl = prior[i].decided_at_look, prior[i].decided_at_runs, prior[i].level
            elif code != UNDECIDED:
                at_look, at_runs = look, runs
                lvl = float(level[0, i]) if code == DECIDED_EFFECT else None
            else:
                at_look = at_runs = lvl = None
            defined = not math.isnan(shift[i])
            tests.append(
                TestLook(
                    test=key,
                    n_fixed=len(arrays[i][0]),
                    n_random=len(arrays[i][1]),
                    z=_opt(z[i]),
                    critical=float(crit),
                    shift=_opt(shift[i]),
                    shift_ci=(float(low[i]), float(high[i])) if defined and math.isfinite(low[i]) else None,
                    median_fixed=_opt(med[i]),
                    shift_ci_pct=(float(lo_pct[i]), float(hi_pct[i])) if defined and math.isfinite(lo_pct[i]) and math.isfinite(hi_pct[i]) else None,
                    decided=DECISIONS[code],
                    decided_at_look=at_look,
                    decided_at_runs=at_runs,
                    level=lvl,
                )
            )
        decided = int((new_state != UNDECIDED).sum())
        newly = decided - int((state != UNDECIDED).sum())
        return Look(
            index=look,
            runs=runs,
            information=information[look],
            alpha_spent=self.alpha_spent(m, information)[look],
            m=m,
            tests=tuple(tests),
            decided=decided,
            newly_decided=newly,
            stop=bool(stops(new_state, self.rule)[0]) or look == self.looks - 1,
        )

    def _taken(self, look: int, runs: int, previous: Sequence[Look]) -> tuple[float, ...]:
        """The information fractions of the looks up to `look` as taken; the planned ones (all
        of them, so that the boundaries are exactly the planned ones) while every look so far
        analysed its planned runs."""
        if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or not 1 <= runs <= self.max_runs:
            raise ValueError(f"runs must be an integer in 1..{self.max_runs}, got {runs!r}")
        if previous and runs <= previous[-1].runs:
            raise ValueError(f"look {look} at {runs} runs per arm adds nothing to look {look - 1} at {previous[-1].runs}: "
                             "a look needs new runs")
        planned = self.information()
        taken = tuple(p.information for p in previous) + (runs / self.max_runs,)
        return planned if taken == planned[: look + 1] else taken

    def run(self, data_at_looks: Sequence[Mapping[Hashable, tuple[Any, Any]]]) -> tuple[Look, ...]:
        """All looks in turn on the data each look saw, stopping at the first look that stops
        (e.g. to replay an experiment's looks from its journal)."""
        looks: list[Look] = []
        for k, data in enumerate(data_at_looks):
            looks.append(self.decide(k, data, looks))
            if looks[-1].stop:
                break
        return tuple(looks)

    def summary(self, looks: Sequence[Look]) -> dict[str, Any]:
        """The analysis JSON's `sequential` object for the looks done so far."""
        if not looks:
            raise ValueError("no looks yet")
        return {
            "looks": [lk.to_json() for lk in looks],
            "stopped_at_runs": looks[-1].runs,
            "max_runs": self.max_runs,
            "method": self.method(looks[-1].m),
            "spending": self.spending,
            "correction": self.correction,
            "min_effect": float(self.min_effect),
            "decide": self.rule,
        }


def _family(look: int, looks: int, data: Mapping[Hashable, Any], previous: Sequence[Look]) -> list[Hashable]:
    """The tests of look `look` (0-based, of `looks`), checked against the earlier looks'."""
    if isinstance(look, bool) or not isinstance(look, (int, np.integer)) or not 0 <= look < looks:
        raise ValueError(f"look must be an integer in 0..{looks - 1}, got {look!r}")
    if len(previous) != look:
        raise ValueError(f"look {look} needs the {look} earlier looks' results, got {len(previous)}")
    keys = list(data)
    if not keys:
        raise ValueError("no tests to decide")
    for i, prev in enumerate(previous):
        if prev.index != i:
            raise ValueError(f"previous[{i}] is look {prev.index}, expected look {i}")
        if [t.test for t in prev.tests] != keys:
            raise ValueError(f"the tests at look {look} differ from those at look {i}: the family must stay the same")
    return keys


def _arms(key: Hashable, pair: Any, runs: int, look: int) -> tuple[np.ndarray, np.ndarray]:
    """A test's (fixed-arm values, random-arm values) at a look of `runs` runs per arm, checked."""
    if len(pair) != 2:
        raise ValueError(f"test {key!r}: expected (fixed values, random values)")
    f, r = (np.asarray(v, dtype=np.float64).ravel() for v in pair)
    if np.isnan(f).any() or np.isnan(r).any() or np.isinf(f).any() or np.isinf(r).any():
        raise ValueError(f"test {key!r}: values must be finite numbers (drop failed trials)")
    if len(f) > runs or len(r) > runs:
        raise ValueError(f"test {key!r}: {len(f)} fixed and {len(r)} random values, more than the {runs} runs per arm of look {look}")
    return f, r


def _statistics(arrays: Sequence[tuple[np.ndarray, np.ndarray]], critical: float, min_values: int) -> tuple[np.ndarray, ...]:
    """Per test: the Mann-Whitney z, the Hodges-Lehmann shift with its repeated CI at the
    critical value, and the fixed arm's median; NaN for a test with fewer than min_values values
    in an arm. Tests whose arms have the same sizes are computed together."""
    m = len(arrays)
    z, shift, low, high, med = (np.full(m, np.nan) for _ in range(5))
    by_size: dict[tuple[int, int], list[int]] = {}
    for i, (f, r) in enumerate(arrays):
        if len(f) >= min_values and len(r) >= min_values:
            by_size.setdefault((len(f), len(r)), []).append(i)
    for idx in by_size.values():
        fx = np.stack([arrays[i][0] for i in idx])
        rx = np.stack([arrays[i][1] for i in idx])
        z[idx] = mann_whitney_z(fx, rx).z
        ci = shift_ci(fx, rx, critical)
        shift[idx], low[idx], high[idx] = ci.estimate, ci.low, ci.high
        med[idx] = np.median(fx, axis=1)
    return z, shift, low, high, med


def _opt(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)
