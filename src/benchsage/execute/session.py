"""Start or resume an experiment: connect its workers, create or open its journal, run the loop.

The plan comes drawn (design.experiment) or recorded (the journal); nothing here draws one.

The workers are connected before the journal is written, so a misconfigured fleet (an unknown
host key, no usable python) leaves nothing behind to clean up: fix it and run again.
"""

from __future__ import annotations

import contextlib
import os
from typing import Callable, Sequence

from benchsage.design.experiment import ExperimentPlan
from benchsage.errors import SpecError
from benchsage.execute.allocate import Allocation, Held
from benchsage.execute.create import create_experiment, is_private, make_directory
from benchsage.execute.deploy import DeploySource, check_resumable, deploy_fleet, read_source
from benchsage.execute.fleet import check_cpus, close_all, connect_all, make_workers
from benchsage.execute.init import tear_down
from benchsage.execute.progress import Progress, make_progress
from benchsage.execute.runner import Runner, signals_as_interrupts
from benchsage.execute.treatments import check_wrappers
from benchsage.spec import Spec, check_files, load_spec
from benchsage.store.journal import Journal, check_directory_for


def run_experiment(spec: Spec, draw: Callable[[Spec], ExperimentPlan], directory: str, *, quiet: bool = False,
                   stop_on_failure: bool = False) -> None:
    """Allocate the hosts of the spec's allocated workers (if any), draw the plan (`draw`) on
    the workers they make, carry it out, and release them whatever happens (`stop_on_failure`:
    a test that fails in each of its first trials stops the experiment: execute/failfast.py)."""
    if not any(ws.allocated for ws in spec.workers):
        start(spec, draw(spec), directory, quiet=quiet, stop_on_failure=stop_on_failure)
        return
    check_directory_for(directory, spec.digest)
    progress = make_progress(quiet)
    with signals_as_interrupts(), Held(directory, progress.message, private=is_private(spec)) as held:
        spec = held.allocate(spec)
        start(spec, draw(spec), directory, quiet=quiet, allocations=held.allocations, stop_on_failure=stop_on_failure)


def start(spec: Spec, plan: ExperimentPlan, directory: str, *, quiet: bool = False, allocations: Sequence[Allocation] = (),
          progress: Progress | None = None, source: DeploySource | None = None, stop_on_failure: bool = False) -> None:
    """Write `plan` into a new journal in `directory`, then carry it out on every worker
    (`progress`: where it is told; default make_progress(quiet); `source`: what to deploy
    instead of the spec's [deploy], e.g. bisect's worktrees; `stop_on_failure`: see
    run_experiment)."""
    check_directory_for(directory, plan.digest)
    source = source if source is not None else read_source(spec)
    check_files(spec)  # a file the workers need that is missing is said before the directory is made
    make_directory(spec, directory)
    workers = make_workers(spec, directory)
    try:
        connect_all(workers)
        check_cpus(spec, workers)
        check_wrappers(spec, workers)
        shipped = deploy_fleet(spec, workers, source)
        journal = create_experiment(spec, plan, directory)
        if source is not None:
            journal.set_meta("deploy", source.describe())
        for done in shipped:
            journal.record_deploy(done.record())
        if allocations:  # what `benchsage release` frees after a crash
            journal.set_meta("allocations", [a.record() for a in allocations])
        progress = progress or make_progress(quiet)
        for warning in spec.warnings:
            progress.message(f"warning: {warning}")
        try:
            Runner(spec, journal, workers, progress, stop_on_failure=stop_on_failure).execute()
        finally:
            try:
                tear_down(spec.teardown, workers, progress.message)
            finally:
                journal.close()
    finally:
        close_all(workers)


def resume(directory: str, *, quiet: bool = False, redeploy: bool = False, progress: Progress | None = None,
           source: DeploySource | None = None, hosts: Callable[[Spec], Spec] | None = None, stop_on_failure: bool = False) -> None:
    """Finish an experiment from its journal; runs already done are not touched, nor a host's
    verified deploy of the same tree or a worker's journaled [init], unless `redeploy`
    (`source`: what start was given instead of the spec's [deploy]; `hosts`: the spec on the
    hosts its caller holds for its allocated workers, neither allocated nor released here;
    `stop_on_failure`: see run_experiment)."""
    journal = Journal.open(directory)
    try:
        spec = spec_from_journal(journal)
        progress = progress or make_progress(quiet)
        if os.path.exists(spec.path):
            with open(spec.path, encoding="utf-8", errors="replace") as fh:
                if fh.read() != spec.text:
                    progress.message(f"note: {spec.path} changed since the experiment started; resuming with the journal's copy")
        recorded = journal.meta().get("deploy")
        if source is None:
            source = read_source(spec, commit=(recorded or {}).get("commit"), dirty=(recorded or {}).get("dirty") or ())
        check_resumable(source, recorded)
        allocated = any(ws.allocated for ws in spec.workers) and hosts is None
        if hosts is not None:
            spec = hosts(spec)
        with signals_as_interrupts() if allocated else contextlib.nullcontext(), Held(directory, progress.message) as held:
            if allocated:
                spec = held.resume(spec, journal)
            workers = make_workers(spec, directory)
            try:
                connect_all(workers)
                check_cpus(spec, workers)
                check_wrappers(spec, workers)
                for done in deploy_fleet(spec, workers, source, verified=journal.deploys(), redeploy=redeploy):
                    journal.record_deploy(done.record())
                try:
                    Runner(spec, journal, workers, progress, reinitialize=redeploy, stop_on_failure=stop_on_failure).execute()
                finally:
                    tear_down(spec.teardown, workers, progress.message)
            finally:
                close_all(workers)
    finally:
        journal.close()


def spec_from_journal(journal: Journal) -> Spec:
    """The spec the experiment started with (the journal's copy, resolved at its original
    place), for resume: it says how to run the tests; the plan comes from the journal."""
    meta = journal.meta()
    spec = load_spec(meta["spec_path"], text=meta["spec_text"], generated=meta.get("generated") or None)
    names = [t["name"] for t in journal.tests()]
    if [t.name for t in spec.tests] != names:
        raise SpecError(f"{journal.path}: the journal's tests do not match its spec; it cannot be resumed")
    return spec
