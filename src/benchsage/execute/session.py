"""Start or resume an experiment: create or open its journal, pick the worker, run the loop."""

from __future__ import annotations

import os

from benchsage.execute.local import LocalWorker
from benchsage.execute.progress import make_progress
from benchsage.execute.runner import Runner, create_experiment, spec_from_journal
from benchsage.spec import load_spec
from benchsage.store.journal import Journal


def start(spec_path: str, directory: str, *, runs: int | None = None, seed: int | None = None, quiet: bool = False) -> None:
    """Plan the experiment into a new journal, then execute it."""
    spec = load_spec(spec_path)
    journal, _plan = create_experiment(spec, directory, seed=seed, runs=runs)
    try:
        Runner(spec, journal, LocalWorker(), make_progress(quiet)).execute()
    finally:
        journal.close()


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
        Runner(spec, journal, LocalWorker(), progress).execute()
    finally:
        journal.close()
