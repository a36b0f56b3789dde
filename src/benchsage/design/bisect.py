"""The bisect search, pure: which probe comes next, how each probe is decided, and the error
budget over the whole search. No I/O; execute/bisect/ measures, analyze/bisect.py summarises.

Candidates are the commits of the first-parent line after good up to bad, indexed 1..n (0 is
good, n is bad). The search keeps the range (lo, hi] that holds the first bad commit and
probes the unskipped commit nearest to its middle. Each probe is measured in runs that hold
good, bad and the probe in a random order, and decided by two one-sided Wilcoxon signed-rank
tests on the within-run log ratios (stats/signed_rank.py): "bad" when the probe is above good
in bad's direction, "good" when it is below bad in good's direction and not above good; a
probe shown to be both is "bad" only when it is above good by more than min_effect (a build a
little off its level, the same code in another worktree, is no move: measurement bias;
validation/bisection.py, "builds off by"). Under "the probe performs like good", probe and good
are exchangeable in every run (random positions), so the test of that hypothesis holds its
level whatever the noise looks like; the same holds for "like bad". A probe is tested at looks (`points`, runs pooled over the looks) with
its level spent over them (Pocock-type spending, Lan & DeMets 1983, used as a union bound), and
the j-th test of the search (the first is good vs bad) gets level `test_alpha(j)`: the sum over
every test the search could make is at most alpha, so the chance that any decision is wrong,
and with it the chance of naming a wrong commit, is at most alpha (a union bound; it holds
whatever the tests share, and a test that is only taken when an earlier one stayed undecided
errs no more often than if it were always taken). A probe still undecided after its last look
is measured again as long (EXTENSIONS), its runs pooled, as the search's next test; then it is
skipped like a commit that does not build: the range may end wider than one commit, and the
search says so.

This is noisy bisection with decisions made at a guaranteed level (Karp & Kleinberg 2007's
"repeat each comparison until it is reliable" strategy) rather than Waeber, Frazier &
Henderson's (2013) probabilistic bisection, whose posterior needs a likelihood of the noise;
the signed-rank decisions need none (docs/validation.md, "Bisect", measures both the error
rate and the cost).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from benchsage.stats.signed_rank import signed_rank_p

GOOD = "good"
BAD = "bad"
UNDECIDED = "undecided"
BUILD_FAILED = "build-failed"
CHANGE = "change"
NO_CHANGE = "no-change"
# Share of alpha given to the tests a plain bisection needs (the check and ceil(log2 n) probes);
# the rest is kept, halving, for the probes that replace undecided ones.
_PLANNED_SHARE = 0.9


@dataclass(frozen=True)
class Budget:
    """The error budget of a search over `candidates` commits at family-wise level `alpha`."""

    alpha: float
    candidates: int

    @property
    def planned(self) -> int:
        """The tests a bisection without undecided probes needs: good vs bad, then ceil(log2 n)."""
        return 1 + max(1, math.ceil(math.log2(max(self.candidates, 2))))

    def test_alpha(self, j: int) -> float:
        """The level of the j-th test of the search (0: good vs bad). Summed over every j >= 0:
        _PLANNED_SHARE alpha + (1 - _PLANNED_SHARE) alpha (1/2 + 1/4 + ...) = alpha."""
        if j < self.planned:
            return self.alpha * _PLANNED_SHARE / self.planned
        return self.alpha * (1.0 - _PLANNED_SHARE) * 0.5 ** (j - self.planned + 1)


def look_alphas(alpha: float, points: tuple[int, ...]) -> tuple[float, ...]:
    """`alpha` spent over looks at `points` runs: the increments of Pocock-type spending
    alpha ln(1 + (e - 1) t), t = points / points[-1] (Lan & DeMets 1983). They sum to alpha."""
    t = np.asarray(points, dtype=np.float64) / points[-1]
    spent = alpha * np.log1p((math.e - 1.0) * t)
    return tuple(float(x) for x in np.diff(np.r_[0.0, spent]))


def look_points(max_runs: int, looks: int) -> tuple[int, ...]:
    """Runs at each look, evenly spaced, the last at max_runs."""
    looks = max(1, min(looks, max_runs))
    return tuple(math.ceil(max_runs * (k + 1) / looks) for k in range(looks))


@dataclass(frozen=True)
class ProbeDecision:
    verdict: str  # GOOD, BAD or UNDECIDED (so far)
    p_like_good: float  # one-sided p of "the probe performs like good" (small: it moved towards bad)
    p_like_bad: float  # one-sided p of "the probe performs like bad"


def decide_probe(good: np.ndarray, bad: np.ndarray, probe: np.ndarray, direction: float, level: float,
                 margin: float = 0.0) -> ProbeDecision:
    """One look at a probe: log values per run (the same runs in the three arrays), `direction`
    the sign of log bad - log good, `level` this look's share of the probe's alpha, `margin`
    the log of 1 + min_effect. "bad" when the probe has moved from good's level towards bad's,
    "good" when it is short of bad's. A probe shown to be both (between the two levels) is bad
    only when it has moved by more than the margin: the same code built in two worktrees may
    differ by a percent or two (where its files lie, how the linker placed it: measurement
    bias), and such a build is nearer good's level than bad's. Either verdict still needs its
    own test to reject, so each errs at most at `level`."""
    towards_bad = direction * (probe - good)
    towards_good = direction * (bad - probe)
    p_good = signed_rank_p(towards_bad)
    p_bad = signed_rank_p(towards_good)
    if p_good <= level and p_bad <= level:
        verdict = BAD if signed_rank_p(towards_bad - margin) <= level else GOOD
    elif p_good <= level:
        verdict = BAD  # the first move from good's level towards bad's, even if not all the way
    elif p_bad <= level:
        verdict = GOOD
    else:
        verdict = UNDECIDED
    return ProbeDecision(verdict, p_good, p_bad)


@dataclass(frozen=True)
class CheckDecision:
    verdict: str  # CHANGE, NO_CHANGE or UNDECIDED (so far)
    direction: float  # +1 when bad is above good, -1 below (0 when undecided)
    p_change: float


def decide_check(good: np.ndarray, bad: np.ndarray, level: float, min_effect: float, last: bool) -> CheckDecision:
    """Good vs bad (log values per run): CHANGE when the two-sided signed-rank test of
    log bad - log good rejects at `level` and the median shift is at least `min_effect` percent;
    NO_CHANGE when both one-sided tests against a shift of +-min_effect reject (the shift lies
    within it), or at the `last` look when no change was found."""
    d = bad - good
    up, down = signed_rank_p(d), signed_rank_p(-d)
    p = min(1.0, 2.0 * min(up, down))
    margin = math.log1p(min_effect / 100.0)
    if p <= level and abs(float(np.median(d))) >= margin:
        return CheckDecision(CHANGE, 1.0 if up < down else -1.0, p)
    if (signed_rank_p(margin - d) <= level / 2 and signed_rank_p(d + margin) <= level / 2) or last:
        return CheckDecision(NO_CHANGE, 0.0, p)
    return CheckDecision(UNDECIDED, 0.0, p)


@dataclass
class Search:
    """The range of the first bad commit, (lo, hi] in candidate indices, and the probes made."""

    candidates: int
    lo: int = 0
    hi: int = -1
    skipped: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.hi < 0:
            self.hi = self.candidates

    def next_probe(self) -> int | None:
        """The unskipped commit strictly inside (lo, hi) nearest to the middle; None when the
        range holds one commit, or nothing is left to probe in it."""
        mid = (self.lo + self.hi) / 2.0
        inside = [i for i in range(self.lo + 1, self.hi) if i not in self.skipped]
        if not inside:
            return None
        return min(inside, key=lambda i: (abs(i - mid), i))

    def record(self, index: int, verdict: str) -> None:
        if verdict == GOOD:
            self.lo = index
        elif verdict == BAD:
            self.hi = index
        else:
            self.skipped.add(index)

    @property
    def found(self) -> bool:
        return self.hi - self.lo == 1

    @property
    def range(self) -> tuple[int, int]:
        """The first bad commit is one of lo+1 .. hi."""
        return self.lo + 1, self.hi


def probe_orders(runs: int, tests: int, seed: int) -> list[tuple[int, ...]]:
    """A fresh random order of the tests (good, bad, probe...) for every run."""
    rng = np.random.Generator(np.random.PCG64(seed))
    return [tuple(int(i) for i in rng.permutation(tests)) for _ in range(runs)]


def probe_seed(seed: int, *parts: object) -> int:
    """The seed of one batch of runs: drawn from the search's seed and what the batch measures."""
    digest = hashlib.sha256("\0".join([str(seed), *map(str, parts)]).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True, eq=False)
class ProbeRecord:
    """What one probe (or, at index 0, the check of good against bad) measured and decided."""

    index: int  # candidate index, 1..n; 0 for the check of good against bad
    commit: str
    verdict: str  # GOOD, BAD, UNDECIDED; for the check CHANGE, NO_CHANGE, UNDECIDED
    values: np.ndarray  # the metric per run (rows): good, bad and, for a probe, the probed commit
    level: float  # the probe's share of alpha
    p_like_good: float | None = None
    p_like_bad: float | None = None
    workers: tuple[str, ...] = ()  # the worker of each run (row), when the record is of real runs


@dataclass(frozen=True, eq=False)
class BisectRecord:
    """A search as it went: the input, every probe, what was skipped, and the range it ended
    with (lo, hi: the first bad commit is one of candidates lo+1..hi, 1-based; None: no change
    was found between good and bad)."""

    good: str
    bad: str
    candidates: tuple[str, ...]  # oldest first, bad last
    subjects: dict[str, str]  # of good, bad and every commit probed or skipped
    test: str
    metric: str
    unit: str
    better: str
    alpha: float
    min_effect: float
    points: tuple[int, ...]
    check: ProbeRecord
    probes: tuple[ProbeRecord, ...]
    skipped: tuple[tuple[str, str, str], ...]  # (commit, BUILD_FAILED or UNDECIDED, the build's last line or "")
    range: tuple[int, int] | None
    builds: int
    direction: float  # +1: bad's metric is above good's


# Once undecided at its last look, a probe is measured again this many times as long (its runs
# pooled, each time as a new test of the search, at that test's level) before it is skipped:
# the search spends more before it gives up a commit.
EXTENSIONS = 1

# measure(index, look, runs): `runs` new runs of good, bad and candidate `index` (index None:
# good and bad only), the metric's values, one row per run. build(index): None when candidate
# `index` is ready to measure, else why not (its build's last line).
Measure = Callable[[int | None, int, int], np.ndarray]
Build = Callable[[int], str | None]


@dataclass(frozen=True, eq=False)
class SearchOutcome:
    check: ProbeRecord
    probes: tuple[ProbeRecord, ...]
    skipped: tuple[tuple[int, str, str], ...]  # (index, BUILD_FAILED or UNDECIDED, the build's last line or "")
    range: tuple[int, int] | None  # the first bad commit is one of lo..hi (1-based); None: no change
    direction: float


def run_search(candidates: int, alpha: float, min_effect: float, points: tuple[int, ...], measure: Measure, build: Build,
               extensions: int = EXTENSIONS, tell: Callable[[int | None, int, str], None] | None = None) -> SearchOutcome:
    """The whole search over candidates 1..n (n is bad): good against bad, then bisection with
    the probes' decisions (decide_check, decide_probe) at the levels of `Budget`. Pure but for
    what `measure` and `build` do (and `tell`, told each look's runs and verdict);
    validation/bisection.py runs it on simulated values."""
    budget = Budget(alpha, candidates)
    j = 0

    def looks(index: int | None, decide: Callable[[np.ndarray, float, bool], Any]) -> tuple[Any, np.ndarray, float]:
        nonlocal j
        values: np.ndarray | None = None
        decision, spent = None, 0.0
        for e in range(extensions + 1 if index is not None else 1):
            level = budget.test_alpha(j)
            j += 1
            spent += level
            offset = e * points[-1]
            for k, (p, a) in enumerate(zip(points, look_alphas(level, points))):
                done = 0 if values is None else values.shape[0]
                new = measure(index, e * len(points) + k, offset + p - done)
                values = new if values is None else np.vstack([values, new])
                decision = decide(np.log(values), a, index is None and k == len(points) - 1)
                if tell is not None:
                    tell(index, values.shape[0], decision.verdict)
                if decision.verdict != UNDECIDED:
                    return decision, values, spent
        return decision, values, spent

    check, values, level = looks(None, lambda v, a, last: decide_check(v[:, 0], v[:, 1], a, min_effect, last))
    check_record = ProbeRecord(0, "", check.verdict, values, level)
    if check.verdict != CHANGE:
        return SearchOutcome(check_record, (), (), None, check.direction)
    search = Search(candidates)
    probes: list[ProbeRecord] = []
    skipped: list[tuple[int, str, str]] = []
    while (index := search.next_probe()) is not None:
        why = build(index)
        if why is not None:
            search.record(index, BUILD_FAILED)
            skipped.append((index, BUILD_FAILED, why))
            continue
        decision, values, level = looks(index, lambda v, a, last: decide_probe(v[:, 0], v[:, 1], v[:, 2], check.direction, a,
                                                                              math.log1p(min_effect / 100.0)))
        probes.append(ProbeRecord(index, "", decision.verdict, values, level, decision.p_like_good, decision.p_like_bad))
        search.record(index, decision.verdict)
        if decision.verdict == UNDECIDED:
            skipped.append((index, UNDECIDED, ""))
    return SearchOutcome(check_record, tuple(probes), tuple(skipped), search.range, check.direction)
