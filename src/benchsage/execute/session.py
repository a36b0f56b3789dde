"""Start or resume an experiment: connect its workers, create or open its journal, run the loop.

The workers are connected before the journal is written, so a misconfigured fleet (an unknown
host key, no usable python) leaves nothing behind to clean up: fix it and run again.
"""

from __future__ import annotations

import os

from benchsage.execute.fleet import check_cpus, close_all, connect_all, make_workers
from benchsage.execute.progress import make_progress
from benchsage.execute.runner import Runner, create_experiment, experiment_digest, resolve_runs_and_seed, spec_from_journal
from benchsage.execute.treatments import check_wrappers
from benchsage.spec import load_spec
from benchsage.store.journal import Journal, check_directory_for


def start(spec_path: str, directory: str, *, runs: int | None = None, seed: int | None = None, quiet: bool = False) -> None:
    """Plan the experiment into a new journal, then execute it on every worker."""
    spec = load_spec(spec_path)
    runs_per_arm, seed = resolve_runs_and_seed(spec, runs, seed)
    check_directory_for(directory, experiment_digest(spec, runs_per_arm, seed))
    workers = make_workers(spec, directory)
    try:
        connect_all(workers)
        check_cpus(spec, workers)
        check_wrappers(spec, workers)
        journal, _plan = create_experiment(spec, directory, seed=seed, runs=runs)
        progress = make_progress(quiet)
        for warning in spec.warnings:
            progress.message(f"warning: {warning}")
        try:
            Runner(spec, journal, workers, progress).execute()
        finally:
            journal.close()
    finally:
        close_all(workers)


def resume(directory: str, *, quiet: bool = False) -> None:
    """Finish an experiment from its journal; runs already done are not touched."""
    journal = Journal.open(directory)
    try:
        spec = spec_from_journal(journal)
        progress = make_progress(quiet)
        if os.path.exists(spec.path):
            with open(spec.path, encoding="utf-8", errors="replace") as fh:
                if fh.read() != spec.text:
                    progress.message(f"note: {spec.path} changed since the experiment started; resuming with the journal's copy")
        workers = make_workers(spec, directory)
        try:
            connect_all(workers)
            check_cpus(spec, workers)
            check_wrappers(spec, workers)
            Runner(spec, journal, workers, progress).execute()
        finally:
            close_all(workers)
    finally:
        journal.close()

