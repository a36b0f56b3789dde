"""Carry a plan out: reset, snapshot, then every trial of every run, each journaled at once.

The loop below only runs trials and writes the journal; what the user sees goes through a
Progress object between trials. Resume and a fresh start share the same loop: unfinished runs
are (re)done from their reset, finished runs are never touched.
"""

from __future__ import annotations

import os
import resource
import signal
import time
from dataclasses import dataclass
from typing import Any

import benchsage
from benchsage.design.plan import Plan, draw_seed, make_plan
from benchsage.errors import ExperimentError, SpecError, WorkerError
from benchsage.execute.metrics import MetricError, extract
from benchsage.execute.progress import Progress
from benchsage.execute.snapshot import command_files
from benchsage.execute.worker import ProcessRequest, ProcessResult, Worker
from benchsage.spec import Spec, TestSpec, load_spec
from benchsage.store.journal import Journal, TrialRecord, check_directory_for
from benchsage.store.table import HARNESS_METRIC_INFO


MIN_RUNS_PER_ARM = 5  # below this the analysis reports no p-value


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived; handled like Ctrl-C."""


@dataclass(frozen=True)
class TrialOutcome:
    status: str  # ok | failed | timeout | bad-output
    reason: str | None
    values: dict[str, float]


def classify(test: TestSpec, result: ProcessResult) -> TrialOutcome:
    """A trial is a number only when it exited 0 in time and every declared metric parsed."""
    if result.error is not None:
        return TrialOutcome("failed", result.error, {})
    if result.timed_out:
        return TrialOutcome("timeout", f"exceeded its timeout of {test.timeout:g} s and was killed", {})
    if result.exit_status != 0:
        status = result.exit_status
        if status is not None and status < 0:
            try:
                name = signal.Signals(-status).name
            except ValueError:
                name = f"signal {-status}"
            return TrialOutcome("failed", f"killed by {name}", {})
        return TrialOutcome("failed", f"exit status {status}", {})
    values: dict[str, float] = {}
    for metric in test.metrics:
        try:
            values[metric.name] = extract(metric, result)
        except MetricError as exc:
            return TrialOutcome("bad-output", str(exc), {})
    return TrialOutcome("ok", None, values)


def _metrics_meta(test: TestSpec) -> list[dict[str, Any]]:
    primary = set(test.primary_metrics)
    declared = [{"name": m.name, "unit": m.unit, "better": m.better, "primary": True} for m in test.metrics]
    harness = [
        {"name": n, "unit": info.unit, "better": info.better, "primary": n in primary} for n, info in HARNESS_METRIC_INFO.items()
    ]
    return declared + harness


def create_experiment(spec: Spec, directory: str, *, seed: int | None = None, runs: int | None = None) -> tuple[Journal, Plan]:
    """Write the plan into a new journal in `directory` before anything executes."""
    runs_per_arm = runs if runs is not None else spec.runs
    if runs_per_arm < 1:
        raise SpecError(f"--runs must be at least 1, got {runs_per_arm}")
    seed = seed if seed is not None else spec.seed if spec.seed is not None else draw_seed()
    digest = experiment_digest(spec, runs_per_arm, seed)
    check_directory_for(directory, digest)
    plan = make_plan([t.name for t in spec.tests], runs_per_arm, seed)
    meta = {
        "name": spec.name,
        "spec_digest": digest,
        "spec_hash": spec.digest,
        "spec_path": spec.path,
        "spec_text": spec.text,
        "generated": list(spec.generated),
        "seed": seed,
        "runs_per_arm": runs_per_arm,
        "alpha": spec.alpha,
        "correction": spec.correction,
        "reset": spec.reset.command if spec.reset else None,
        "created": time.time(),
        "tool_version": benchsage.__version__,
    }
    tests = [{"name": t.name, "command": t.command, "metrics": _metrics_meta(t)} for t in spec.tests]
    journal = Journal.create(
        directory, meta, tests, [{"id": r.index, "arm": r.arm, "arm_index": r.arm_index, "order": r.order} for r in plan.runs]
    )
    return journal, plan


def experiment_digest(spec: Spec, runs_per_arm: int, seed: int) -> str:
    import hashlib

    return hashlib.sha256(f"{spec.digest}\0{runs_per_arm}\0{seed}".encode()).hexdigest()


def spec_from_journal(journal: Journal) -> Spec:
    """The spec the experiment started with (the journal's copy, resolved at its original place)."""
    meta = journal.meta()
    spec = load_spec(meta["spec_path"], text=meta["spec_text"], generated=meta.get("generated") or None)
    names = [t["name"] for t in journal.tests()]
    if [t.name for t in spec.tests] != names:
        raise SpecError(f"{journal.path}: the journal's tests do not match its spec; it cannot be resumed")
    return spec


class Runner:
    """Executes the unfinished runs of one journaled experiment on one worker."""

    def __init__(self, spec: Spec, journal: Journal, worker: Worker, progress: Progress) -> None:
        self.spec = spec
        self.journal = journal
        self.worker = worker
        self.progress = progress
        self._files = sorted({f for t in spec.tests for f in command_files(t.command, t.cwd)})
        # One request per test, built once: the trial loop only runs and records.
        self._requests = [
            ProcessRequest(
                command=t.command,
                cwd=t.cwd,
                env=t.env,
                timeout=t.timeout,
                output_limit=spec.output_limit,
                collect=tuple(m.file for m in t.metrics if m.file is not None),
            )
            for t in spec.tests
        ]

    def execute(self) -> None:
        """Run every run not yet done. Raises ExperimentError (exit 3) when it cannot finish;
        everything measured until then is in the journal."""
        journal = self.journal
        interrupted = journal.interrupt_unfinished()
        runs = journal.runs()
        tests = self.spec.tests
        done_runs, done_trials = journal.progress()
        self.progress.start(len(runs), len(runs) * len(tests), done_runs, done_trials)
        if interrupted:
            self.progress.message(f"{interrupted} interrupted run(s) will be redone from their reset")
        runs_per_arm = len(runs) // 2
        if runs_per_arm < MIN_RUNS_PER_ARM and done_runs == 0:
            self.progress.message(
                f"warning: {runs_per_arm} runs per arm are too few to test for an order effect "
                f"(Kruskal-Wallis needs at least {MIN_RUNS_PER_ARM}; docs/validation.md says how many detect what)"
            )
        if self.spec.reset is None and done_runs == 0:
            self.progress.message(
                "warning: the spec has no [reset]: runs do not start from a clean state, so one run's leftovers can reach the next"
            )
        with _signals_as_interrupts():
            for run in runs:
                if run["status"] == "done":
                    continue
                self._run_one(run)
        self.progress.stop()

    def _run_one(self, run: dict[str, Any]) -> None:
        journal, spec = self.journal, self.spec
        attempt_id, number = journal.begin_attempt(run["id"], self.worker.name)
        self.progress.run_started(run["id"], run["arm"], number)
        try:
            self._reset(run, attempt_id)
            snapshot = self.worker.snapshot(self._files, spec.folder)
            snapshot["spec_hash"] = spec.digest
            # Linux charges every child, at exec, the peak RSS of the process that spawned it,
            # so a trial's max_rss is never below the controller's own peak: record that floor.
            snapshot["max_rss_floor_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            journal.record_snapshot(attempt_id, snapshot)
            previous: int | None = None
            for position, test_id in enumerate(run["order"]):
                test = spec.tests[test_id]
                result = self.worker.run(self._requests[test_id])
                outcome = classify(test, result)
                journal.add_trial(_record(run["id"], attempt_id, self.worker.name, test_id, position, previous, result, outcome))
                self.progress.trial_done(test.name, outcome.status, _shown(test, result, outcome), outcome.reason)
                previous = test_id
        except KeyboardInterrupt:
            journal.finish_attempt(attempt_id, run["id"], "interrupted", "interrupted by the user")
            self.progress.stop()
            done, trials = journal.progress()
            raise ExperimentError(
                f"interrupted during run {run['id'] + 1}; {done} finished runs ({trials} trials) are kept in "
                f"{os.path.dirname(journal.path)}; continue with `benchsage resume {os.path.dirname(journal.path)}`"
            ) from None
        except ExperimentError as exc:
            journal.finish_attempt(attempt_id, run["id"], "reset-failed", str(exc))
            self.progress.stop()
            raise
        except WorkerError as exc:
            journal.finish_attempt(attempt_id, run["id"], "failed", str(exc))
            self.progress.stop()
            raise
        journal.finish_attempt(attempt_id, run["id"], "done")
        self.progress.run_done(run["id"], run["arm"])

    def _reset(self, run: dict[str, Any], attempt_id: int) -> None:
        reset = self.spec.reset
        if reset is None:
            self.journal.record_reset(attempt_id, "none", None, None, b"", b"")
            return
        result = self.worker.run(ProcessRequest(command=reset.command, cwd=reset.cwd, env=reset.env, timeout=reset.timeout))
        status = "ok" if result.ok else "timeout" if result.timed_out else "failed"
        self.journal.record_reset(attempt_id, status, result.exit_status, result.wall_time, result.stdout, result.stderr)
        if status != "ok":
            why = (
                result.error
                or (f"did not finish within {reset.timeout:g} s" if result.timed_out else f"exit status {result.exit_status}")
            )
            last = _last_line(result.stderr) or _last_line(result.stdout)
            done, trials = self.journal.progress()
            directory = os.path.dirname(self.journal.path)
            raise ExperimentError(
                f"reset failed before run {run['id'] + 1} ({why}{': ' + last if last else ''}); "
                f"{done} finished runs ({trials} trials) are kept in {directory}; fix the reset, then `benchsage resume {directory}`"
            )


def _last_line(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[-1][:200] if lines else ""


def _shown(test: TestSpec, result: ProcessResult, outcome: TrialOutcome) -> str:
    if outcome.status != "ok":
        return ""
    if test.metrics:
        m = test.metrics[0]
        return f"{m.name}={outcome.values[m.name]:.6g}{(' ' + m.unit) if m.unit else ''}"
    return f"{result.wall_time:.4g} s"


def _record(
    run_id: int, attempt_id: int, worker: str, test_id: int, position: int, previous: int | None, result: ProcessResult, outcome: TrialOutcome
) -> TrialRecord:
    return TrialRecord(
        run_id=run_id,
        attempt_id=attempt_id,
        worker=worker,
        test_id=test_id,
        position=position,
        predecessor_id=previous,
        started=result.started,
        ended=result.ended,
        duration=result.wall_time,
        exit_status=result.exit_status,
        status=outcome.status,
        reason=outcome.reason,
        wall_time=result.wall_time,
        user_time=result.user_time,
        sys_time=result.sys_time,
        max_rss=float(result.max_rss),
        stdout_tail=result.stdout,
        stderr_tail=result.stderr,
        stdout_dropped=result.stdout_dropped,
        stderr_dropped=result.stderr_dropped,
        values=outcome.values,
    )


class _signals_as_interrupts:
    """SIGTERM and SIGHUP end the experiment the way Ctrl-C does: the trial in flight is killed,
    everything finished is kept, and resume can continue."""

    def __enter__(self) -> None:
        self._old: dict[int, Any] = {}

        def handler(signum: int, frame: Any) -> None:
            raise Interrupted()

        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                self._old[sig] = signal.signal(sig, handler)
            except ValueError:  # not the main thread
                pass

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
