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
        return Interleaving(None, "no run start times in the data: cannot tell whether the arms were interleaved", n_fixed, n_random)
    # Each worker has its own sequence of runs (and possibly its own clock).
    verdicts: list[bool] = []
    judged: list[tuple[bool, str]] = []
    workers = np.unique(worker[timed])
    for w in workers.tolist():
        sel = timed & (worker == w)
        order = np.argsort(start[sel], kind="stable")
        ok, detail = _judge(arm[sel][order], alpha)
        verdicts.append(ok)
        judged.append((ok, detail if len(workers) == 1 else f"worker {worker_names[w]}: {detail}"))
    # Problems first; a fleet of workers gets a count rather than a line per worker.
    judged.sort(key=lambda item: item[0])
    details = [d for _, d in judged[:MAX_WORKER_DETAILS]]
    if len(judged) > MAX_WORKER_DETAILS:
        details.append(f"{sum(verdicts)} of {len(verdicts)} workers interleaved")
    untimed = int((~timed).sum())
    if untimed:
        details.append(f"{untimed} run{'s' if untimed != 1 else ''} without a start time left out")
    return Interleaving(all(verdicts), "; ".join(details), n_fixed, n_random)


def _judge(seq: np.ndarray, alpha: float) -> tuple[bool, str]:
    """Interleaved or not, and why, for one worker's arms in time order."""
    n_fixed, n_random = int((seq == FIXED_CODE).sum()), int((seq == RANDOM_CODE).sum())
    if n_fixed == 0 or n_random == 0:
        only = ARMS[FIXED_CODE] if n_random == 0 else ARMS[RANDOM_CODE]
        return False, f"only {only} runs ({len(seq)}): the other arm ran elsewhere or not at all"
    where_f, where_r = np.flatnonzero(seq == FIXED_CODE), np.flatnonzero(seq == RANDOM_CODE)
    if where_f.max() < where_r.min():
        return False, f"all {n_fixed} fixed runs precede all {n_random} random runs"
    if where_r.max() < where_f.min():
        return False, f"all {n_random} random runs precede all {n_fixed} fixed runs"
    stretches, expected, p = runs_test_lower(seq)
    test = f"{stretches} stretches of one arm, {expected:.1f} expected by chance (Wald-Wolfowitz runs test, one-sided p = {p:.3g})"
    if math.isfinite(p) and p < alpha:
        return False, f"{n_fixed} fixed and {n_random} random runs are clustered in time: {test}"
    return True, f"{n_fixed} fixed and {n_random} random runs are interleaved in time: {test}"
