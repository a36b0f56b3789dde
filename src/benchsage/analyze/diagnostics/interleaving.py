"""Interleaving: were the fixed and random runs interleaved in time?

Each run's start is provenance["run_starts"][run] when the source recorded it, else the earliest
start of its trials. Per worker, runs are ordered by start: the arms are "not interleaved" when
one arm's runs all precede the other's (the hard flag), or when the arms are clustered in time:
the Wald-Wolfowitz runs test on the sequence of arms finds fewer stretches of one arm than chance
would give (one-sided p < alpha). Slow drift then cannot masquerade as an order effect.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import special

from benchsage.analyze.diagnostics.notes import (
    ArmFirst, InterleavingDetail, InterleavingPart, Judgement, NoRunStarts, OneArm, OnWorker, RunsTest, RunsWithoutStart,
    WorkersInterleaved,
)
from benchsage.analyze.verdict import Interleaving
from benchsage.store.table import ARMS, FIXED_CODE, RANDOM_CODE, TrialTable

MAX_WORKER_DETAILS = 3  # interleaving details spelled out per worker


def run_starts(table: TrialTable) -> np.ndarray:
    """Start time of every run id (index = run id; NaN when unknown).

    provenance["run_starts"] (what the source recorded) wins; otherwise the earliest start of
    the run's trials in the table.
    """
    known = table.run >= 0
    if not known.any():
        return np.zeros(0)
    size = int(table.run[known].max()) + 1
    starts = np.full(size, np.inf)
    timed = known & np.isfinite(table.time)
    np.minimum.at(starts, table.run[timed], table.time[timed])
    starts[np.isinf(starts)] = np.nan
    for run, start in dict(table.provenance.get("run_starts") or {}).items():
        if 0 <= int(run) < size and start is not None and math.isfinite(float(start)):
            starts[int(run)] = float(start)
    return starts


def runs_test_lower(arms: np.ndarray) -> tuple[int, float, float]:
    """Wald-Wolfowitz runs test: (stretches of one arm, expected stretches, one-sided p).

    Wald & Wolfowitz (1940), "On a test whether two samples are from the same population",
    Ann. Math. Statist. 11(2). With n1, n2 runs of each arm and R maximal stretches of equal
    arms in time order, E[R] = 2 n1 n2 / n + 1 and Var[R] = 2 n1 n2 (2 n1 n2 - n) / (n^2 (n - 1));
    p = Phi((R - E[R]) / sd), small when the arms are clustered (too few stretches).
    """
    n1 = int((arms == FIXED_CODE).sum())
    n2 = int((arms == RANDOM_CODE).sum())
    n = n1 + n2
    stretches = 1 + int(np.count_nonzero(arms[1:] != arms[:-1])) if n else 0
    expected = 2.0 * n1 * n2 / n + 1.0 if n else float("nan")
    if n1 == 0 or n2 == 0 or n < 3:
        return stretches, expected, float("nan")
    var = 2.0 * n1 * n2 * (2.0 * n1 * n2 - n) / (n * n * (n - 1.0))
    if var <= 0:
        return stretches, expected, float("nan")
    z = (stretches - expected) / math.sqrt(var)
    return stretches, expected, float(special.ndtr(z))


def interleaving_of_table(table: TrialTable, starts: np.ndarray, alpha: float) -> Interleaving | None:
    known = table.run >= 0
    if not known.any():
        return None
    # Each run's first row (np.unique would sort millions of run ids to find them).
    runs = table.run[known]
    place = np.full(int(runs.max()) + 1, len(runs), dtype=np.int64)
    np.minimum.at(place, runs, np.arange(len(runs)))
    ids = np.flatnonzero(place < len(runs))
    rows = np.flatnonzero(known)[place[ids]]
    return interleaving_of_runs(table.arm[rows].astype(np.int64), table.worker[rows], starts[ids], table.worker_names, alpha)


def interleaving_of_runs(arm: np.ndarray, worker: np.ndarray, start: np.ndarray, worker_names: Sequence[str], alpha: float) -> Interleaving:
    """The interleaving verdict from each run's arm, worker and start (runs in id order)."""
    n_fixed, n_random = int((arm == FIXED_CODE).sum()), int((arm == RANDOM_CODE).sum())
    timed = np.isfinite(start)
    if not timed.any():
        return Interleaving(None, InterleavingDetail((NoRunStarts(),)), n_fixed, n_random)
    # Each worker has its own sequence of runs (and possibly its own clock).
    verdicts: list[bool] = []
    judged: list[tuple[bool, Judgement | OnWorker]] = []
    workers = np.unique(worker[timed])
    for w in workers.tolist():
        sel = timed & (worker == w)
        order = np.argsort(start[sel], kind="stable")
        ok, detail = _judge(arm[sel][order], alpha)
        verdicts.append(ok)
        judged.append((ok, detail if len(workers) == 1 else OnWorker(worker_names[w], detail)))
    # Problems first; a fleet of workers gets a count rather than a line per worker.
    judged.sort(key=lambda item: item[0])
    details: list[InterleavingPart] = [d for _, d in judged[:MAX_WORKER_DETAILS]]
    if len(judged) > MAX_WORKER_DETAILS:
        details.append(WorkersInterleaved(sum(verdicts), len(verdicts)))
    untimed = int((~timed).sum())
    if untimed:
        details.append(RunsWithoutStart(untimed))
    return Interleaving(all(verdicts), InterleavingDetail(tuple(details)), n_fixed, n_random)


def _judge(seq: np.ndarray, alpha: float) -> tuple[bool, Judgement]:
    """Interleaved or not, and why, for one worker's arms in time order."""
    n_fixed, n_random = int((seq == FIXED_CODE).sum()), int((seq == RANDOM_CODE).sum())
    if n_fixed == 0 or n_random == 0:
        only = ARMS[FIXED_CODE] if n_random == 0 else ARMS[RANDOM_CODE]
        return False, OneArm(only, len(seq))
    fixed, random = ARMS[FIXED_CODE], ARMS[RANDOM_CODE]
    where_f, where_r = np.flatnonzero(seq == FIXED_CODE), np.flatnonzero(seq == RANDOM_CODE)
    if where_f.max() < where_r.min():
        return False, ArmFirst(fixed, n_fixed, random, n_random)
    if where_r.max() < where_f.min():
        return False, ArmFirst(random, n_random, fixed, n_fixed)
    stretches, expected, p = runs_test_lower(seq)
    interleaved = not (math.isfinite(p) and p < alpha)
    return interleaved, RunsTest(interleaved, n_fixed, n_random, stretches, expected, p)
