"""A bisect search summarised: the first bad commit, its effect, every probe's ratio to good.

Ratios are medians of within-run ratios (probe / good, in the same run), with the
distribution-free interval of the median (stats/median_ci.py, exact binomial, 95 %).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchsage.design.bisect import BAD, CHANGE, BisectRecord
from benchsage.stats.median_ci import grouped_median_ci

LEVEL = 0.95


@dataclass(frozen=True)
class WorkerRatio:
    worker: str
    runs: int
    ratio_to_good: float
    ci: tuple[float | None, float | None]


@dataclass(frozen=True)
class ProbeResult:
    index: int
    commit: str
    subject: str
    verdict: str
    runs: int
    ratio_to_good: float
    ci: tuple[float | None, float | None]
    by_worker: tuple[WorkerRatio, ...] = ()  # with several workers: the same ratio on each


@dataclass(frozen=True)
class BisectResult:
    decided: bool  # a commit was named, or no change was found
    change: bool  # good and bad differ by at least min_effect
    first_bad: str | None
    subject: str | None
    parent: str | None
    effect_pct: float | None  # the first bad commit against good
    ci: tuple[float | None, float | None]
    range: tuple[str, str] | None  # when undecided: the first and last commit that may be the first bad one
    range_size: int
    builds: int
    trials: int
    bad_vs_good: ProbeResult  # the check, as a ratio bad / good
    probes: tuple[ProbeResult, ...]
    skipped: tuple[tuple[str, str, str], ...]
    candidates: int
    test: str
    metric: str
    unit: str
    better: str
    alpha: float
    min_effect: float
    points: tuple[int, ...]
    # With several workers: those where the first bad commit's interval (against good) lies
    # beyond 1 in bad's direction, and those where it does not: a change on some machines only.
    changed_on: tuple[str, ...] = ()
    unchanged_on: tuple[str, ...] = ()


def ratio(values: np.ndarray, column: int) -> tuple[float, tuple[float | None, float | None]]:
    """Median of values[:, column] / values[:, 0] per run, and its 95 % interval."""
    if values.shape[0] == 0:
        return float("nan"), (None, None)
    r = values[:, column] / values[:, 0]
    ci = grouped_median_ci(r, np.zeros(r.size, dtype=np.int64), 1, LEVEL)
    low, high = float(ci.low[0]), float(ci.high[0])
    return float(ci.median[0]), (None if np.isnan(low) else low, None if np.isnan(high) else high)


def by_worker(values: np.ndarray, workers: tuple[str, ...], column: int) -> tuple[WorkerRatio, ...]:
    """ratio() on each worker's runs; () unless the runs come from several workers."""
    if len(set(workers)) < 2 or len(workers) != values.shape[0]:
        return ()
    names = np.asarray(workers)
    out = []
    for w in sorted(set(workers)):
        mine = values[names == w]
        m, ci = ratio(mine, column)
        out.append(WorkerRatio(w, int(mine.shape[0]), m, ci))
    return tuple(out)


def summarize(record: BisectRecord) -> BisectResult:
    def subject(c: str) -> str:
        return record.subjects.get(c, "")

    m, (lo, hi) = ratio(record.check.values, 1)
    check = ProbeResult(0, record.bad, subject(record.bad), record.check.verdict, record.check.values.shape[0], m, (lo, hi),
                        by_worker(record.check.values, record.check.workers, 1))
    probes = []
    for p in record.probes:
        m, ci = ratio(p.values, 2)
        probes.append(ProbeResult(p.index, p.commit, subject(p.commit), p.verdict, p.values.shape[0], m, ci,
                                  by_worker(p.values, p.workers, 2)))
    trials = record.check.values.size + sum(p.values.size for p in record.probes)
    change = record.check.verdict == CHANGE
    first_bad = parent = None
    effect: float | None = None
    eci: tuple[float | None, float | None] = (None, None)
    rng = None
    size = 0
    changed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    if change and record.range is not None:
        a, b = record.range
        size = b - a + 1
        cands = record.candidates
        if a == b:
            first_bad = cands[b - 1]
            parent = cands[b - 2] if b >= 2 else record.good
            own = next((p for p in probes if p.commit == first_bad and p.verdict == BAD), None)
            base = own or check
            effect = (base.ratio_to_good - 1.0) * 100.0
            eci = tuple(None if x is None else (x - 1.0) * 100.0 for x in base.ci)  # type: ignore[assignment]
            changed, unchanged = _where_changed(base.by_worker, record.direction)
        else:
            rng = (cands[a - 1], cands[b - 1])
    return BisectResult(
        decided=(not change and record.check.verdict != "undecided") or first_bad is not None, change=change,
        first_bad=first_bad, subject=subject(first_bad) if first_bad else None, parent=parent, effect_pct=effect, ci=eci,
        range=rng, range_size=size, builds=record.builds, trials=int(trials), bad_vs_good=check, probes=tuple(probes),
        skipped=record.skipped, candidates=len(record.candidates), test=record.test, metric=record.metric, unit=record.unit,
        better=record.better, alpha=record.alpha, min_effect=record.min_effect, points=record.points,
        changed_on=changed, unchanged_on=unchanged,
    )


def _where_changed(ratios: tuple[WorkerRatio, ...], direction: float) -> tuple[tuple[str, ...], tuple[str, ...]]:
    def moved(w: WorkerRatio) -> bool:
        lo, hi = w.ci
        return (lo is not None and lo > 1.0) if direction > 0 else (hi is not None and hi < 1.0)

    return tuple(w.worker for w in ratios if moved(w)), tuple(w.worker for w in ratios if not moved(w))
