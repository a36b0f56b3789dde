"""How long an experiment's runs, resets and trials took, from its journal: what `benchsage
plan` turns into an expected duration and run advice into time.
"""

from __future__ import annotations

import glob
import os
import statistics
from dataclasses import dataclass

from benchsage.store.journal import Journal, journal_path


@dataclass(frozen=True)
class RunTimes:
    """Medians over an experiment's completed runs: a whole run (reset, snapshot and trials), its
    reset (0 without one), and the sum of the tests' median trial durations."""

    run_seconds: float
    reset_seconds: float
    trial_seconds: float


def run_times(directory: str) -> RunTimes | None:
    """The median durations of the completed runs of the experiment in `directory`; None when
    it is not a journal's directory (imported data has no durations) or no run completed."""
    if not (os.path.isdir(directory) and Journal.exists(directory)):
        return None
    journal = Journal.open(directory, read_only=True)
    try:
        attempts = [a for a in journal.attempts() if a["status"] == "done" and a["ended"] is not None]
        durations: dict[int, list[float]] = {}
        for row in journal.trial_rows(analysed_only=True):
            durations.setdefault(row[4], []).append(row[9])
    finally:
        journal.close()
    if not attempts:
        return None
    run = statistics.median(a["ended"] - a["started"] for a in attempts)
    resets = [a["reset_wall"] for a in attempts if a["reset_wall"] is not None]
    trials = sum(statistics.median(d) for d in durations.values())
    return RunTimes(run_seconds=round(run, 4), reset_seconds=round(statistics.median(resets), 4) if resets else 0.0,
                    trial_seconds=round(trials, 4))


def earlier_run_seconds(spec_hash: str, tests: int, root: str = "results") -> tuple[float, str] | None:
    """Seconds per run (the tests' median trial durations and the median reset) of the newest
    experiment under `root` of the spec whose hash is `spec_hash`, in which every one of its
    `tests` tests ran, and that experiment's directory; None when there is none."""
    candidates = sorted(glob.glob(journal_path(os.path.join(root, "*"))), key=os.path.getmtime, reverse=True)
    for path in candidates:
        try:
            journal = Journal.open(os.path.dirname(path), read_only=True)
        except Exception:  # noqa: BLE001 - an unreadable journal is simply not a candidate
            continue
        try:
            if journal.meta().get("spec_hash") != spec_hash:
                continue
            durations: dict[int, list[float]] = {}
            for row in journal.trial_rows(analysed_only=False):
                durations.setdefault(row[4], []).append(row[9])
            resets = [a["reset_wall"] for a in journal.attempts() if a.get("reset_wall") is not None]
        finally:
            journal.close()
        if len(durations) < tests:
            continue
        per_run = sum(statistics.median(d) for d in durations.values())
        if resets:
            per_run += statistics.median(resets)
        return per_run, os.path.dirname(path)
    return None
