"""Carry a plan out: reset, snapshot, then every trial of every run, each journaled at once.

The loop below only runs trials and writes the journal; what the user sees goes through a
Progress object between trials. Resume and a fresh start share the same loop: unfinished runs
are (re)done from their reset, finished runs are never touched. Each worker carries out its
own copy of the plan in a thread of its own (the thread sleeps in read() while its agent
measures); the journal takes one writer at a time. A worker that is lost stops alone.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

from benchsage.design.treatments import Treatment
from benchsage.errors import BadReply, ExperimentError, SpecError, TestsFailed, WorkerError, WorkerLost, WorkerSetupError
from benchsage.execute.failfast import Failing, FailureWatch
from benchsage.execute.init import InitFailed, initialize, initialized
from benchsage.execute.metrics import MetricError, collected_files, extract, from_output
from benchsage.execute.progress import Progress
from benchsage.execute.sequential import Looks
from benchsage.execute.treatments import Applier
from benchsage.execute.worker import ProcessRequest, ProcessResult, Worker, failure_reason, last_line
from benchsage.spec import Spec, TestSpec
from benchsage.store.journal import Journal, TrialRecord
from benchsage.store.outcomes import output_tail
from benchsage.threads import Threads
from benchsage.vocabulary import FINISHED, MIN_RUNS_PER_ARM, NOT_NEEDED, OK


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
        oom = (f": out of memory (the kernel's OOM killer killed {result.oom_kills} of its processes)"
               if result.oom_kills else "")
        if status is not None and status < 0:
            try:
                name = signal.Signals(-status).name
            except ValueError:
                name = f"signal {-status}"
            return TrialOutcome("failed", f"killed by {name}{oom}", {})
        return TrialOutcome("failed", f"exit status {status}{oom}", {})
    values: dict[str, float] = {
        name: float(value) for name, value in (("peak_memory", result.peak_memory), ("cpu_time", result.cpu_time),
                                               ("energy", result.energy)) if value is not None
    }
    try:
        for metric in test.metrics:
            if metric.parser is None:
                values[metric.name] = extract(metric, result)
        if test.output is not None:
            values.update(from_output(test, result))
    except MetricError as exc:
        return TrialOutcome("bad-output", str(exc), {})
    # A collector without a value leaves that metric out; the trial itself stands, the reason journaled.
    values.update(result.collected)
    missing = "; ".join(f"collector '{name}': {why}" for name, why in sorted(result.uncollected.items()))
    return TrialOutcome("ok", missing or None, values)


REBOOT_COMMAND_TIMEOUT = 120.0  # seconds the reboot command itself may take before it returns
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 10.0


class _Stopped(Exception):
    """The user interrupted the experiment: stop this worker, keep what it measured."""


class _ResetFailed(Exception):
    """The reset before a run failed: the worker is lost (its state is unknown)."""


class Runner:
    """Executes the unfinished runs of one journaled experiment on its workers, in parallel."""

    def __init__(self, spec: Spec, journal: Journal, workers: Worker | Sequence[Worker], progress: Progress, *,
                 reinitialize: bool = False, stop_on_failure: bool = False) -> None:
        self.spec = spec
        self.journal = journal
        self.workers: list[Any] = list(workers) if isinstance(workers, (list, tuple)) else [workers]
        self.progress = progress
        self._commands = [(t.command, t.cwd) for t in spec.tests]
        # One request per test, built once: the trial loop only runs and records.
        self._requests = [
            ProcessRequest(
                command=t.command,
                cwd=t.cwd,
                env=t.env,
                timeout=t.timeout,
                output_limit=spec.output_limit,
                collect=tuple(m.file for m in t.metrics if m.file is not None) + collected_files(t),
                cpus=t.cpus,
                trial=True,
                role=t.role,
                shell=t.shell,
            )
            for t in spec.tests
        ]
        # The cells the plan drew when the experiment was created, as the journal recorded them.
        cells = tuple(Treatment.from_record(i, described) for i, described in enumerate(journal.meta().get("treatments") or ()))
        self._applier = Applier(spec, cells, self._requests)
        self._built: dict[str, str | None] = {}  # worker -> context of its last successful link-order build
        self._failed_contexts: dict[str, dict[str, str]] = {}  # worker -> {context: why its build failed}
        self._stop = threading.Event()
        self._lost: dict[str, str] = {}
        self._current: dict[str, int] = {}  # worker -> number of the run in flight
        self._directory = os.path.dirname(journal.path)
        # (worker, role) whose [init] is done; resume --redeploy initializes every host again
        self._initialized = initialized(journal) if spec.init is not None and not reinitialize else set()
        self._reinitialize = reinitialize
        # stop_on_failure: a test that fails in each of its first trials stops the experiment (exit 4)
        self._watch = FailureWatch(journal, [t.name for t in spec.tests], enabled=stop_on_failure)
        self._failing: tuple[Failing, ...] = ()
        self._prepares: dict[int, tuple[ProcessRequest, ProcessRequest]] = {}  # trial request -> its prepare's

    def execute(self) -> None:
        """Run every run not yet done on every worker. Raises ExperimentError (exit 3) when a
        worker was lost or the user interrupted; everything measured until then is kept."""
        journal = self.journal
        interrupted = journal.interrupt_unfinished()
        observer = self.spec.treatments.observer
        # sequential stopping; None: every run
        self._looks = Looks.open(journal, self.progress, self._stop, observer.baseline if observer else None)
        runs = journal.runs()
        tests = self.spec.tests
        by_worker = self._assign(runs)
        done_runs, done_trials = journal.progress()
        self.progress.start(len(runs), len(runs) * len(tests), done_runs, done_trials)
        not_needed = sum(1 for r in runs if r["status"] == NOT_NEEDED)  # a sequential experiment decided before
        if not_needed:
            self.progress.dropped(not_needed, not_needed * len(tests), "not needed")
        if interrupted:
            self.progress.message(f"{interrupted} interrupted run(s) will be redone from their reset")
        runs_per_arm = len(runs) // (2 * max(1, len(by_worker)))
        if runs_per_arm < MIN_RUNS_PER_ARM and done_runs == 0:
            self.progress.message(
                f"warning: {runs_per_arm} runs per arm are too few to test for an order effect "
                f"(Kruskal-Wallis needs at least {MIN_RUNS_PER_ARM}; docs/validation.md says how many detect what)"
            )
        if self.spec.reset is None and done_runs == 0:
            self.progress.message(
                "warning: no reset: runs do not start from a clean state, so one run's leftovers can reach the next "
                "(a [reset] in a spec; --reset CMD with benchsage time)"
            )
        with _signals_as_interrupts(), Threads() as threads:
            try:
                for worker in self.workers:
                    threads.start(self._thread, worker, by_worker.get(worker.name, []), name=f"worker {worker.name}")
                threads.wait_all()  # sleeps until every worker is done; Ctrl-C and SIGTERM interrupt it
            except KeyboardInterrupt:
                self._stop.set()
                if self._looks is not None:
                    self._looks.wake()  # workers waiting for a look stop waiting
                _hang_up_all(self.workers)  # requests and connections being started return at once
                threads.join()
                self.progress.stop()
                done, trials = journal.progress()
                where = ", ".join(f"run {n} on {w}" if len(self.workers) > 1 else f"run {n}" for w, n in self._current.items())
                raise ExperimentError(
                    f"interrupted{' during ' + where if where else ''}; {done} finished runs ({trials} trials) are kept in "
                    f"{self._directory}; continue with `benchsage resume {self._directory}`"
                ) from None
        self.progress.stop()
        self._tidy_up()
        if self._lost:
            raise ExperimentError(self._lost_message())
        if self._failing:
            raise TestsFailed(self._failing_message())
        if any(self._failed_contexts.values()):
            raise SpecError(self._failed_contexts_message())

    def _assign(self, runs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        by_worker: dict[str, list[dict[str, Any]]] = {}
        for run in runs:
            by_worker.setdefault(run["worker"], []).append(run)
        names = [w.name for w in self.workers]
        if len(names) == 1 and len(by_worker) == 1 and names[0] not in by_worker:
            # A one-worker journal resumed under another worker name (e.g. older journals: 'local').
            by_worker = {names[0]: next(iter(by_worker.values()))}
        unknown = sorted(set(by_worker) - set(names))
        if unknown:
            raise SpecError(f"{self.journal.path}: the journal has runs for workers the spec does not name: {', '.join(unknown)}")
        return by_worker

    def _failed_contexts_message(self) -> str:
        done, trials = self.journal.progress()
        skipped = sum(1 for r in self.journal.runs() if r["status"] == "skipped")
        failed = "; ".join(
            f"{context}{' on worker ' + worker if len(self.workers) > 1 else ''} ({why})"
            for worker, contexts in sorted(self._failed_contexts.items()) for context, why in sorted(contexts.items())
        )
        decided = self._decided()
        if decided:  # the looks went ahead without the skipped runs, and the stop ruled them out
            return (f"{self.spec.path}: [context] key 'link_order': the build failed for {failed}; {decided} without "
                    f"their runs, so they are not needed; {done} runs ({trials} trials) are measured in {self._directory}; "
                    "fix the build before measuring with these contexts again")
        then = " and takes the last look" if self._looks is not None else ""
        return (f"{self.spec.path}: [context] key 'link_order': the build failed for {failed}; their {skipped} runs were skipped, "
                f"the other {done} runs ({trials} trials) are measured in {self._directory}; fix the build, then "
                f"`benchsage resume {self._directory}` runs the skipped ones{then}")

    def _failing_message(self) -> str:
        """The tests that failed in every trial, what is kept and what to do next."""
        done, trials = self.journal.progress()
        tests = "; ".join(f"{f.test} failed in all {f.trials} of its trials" + (f" ({f.reason}" if f.reason else "")
                          + (f": {f.output.splitlines()[-1]}" if f.output else "") + (")" if f.reason else "") for f in self._failing)
        return (f"stopped: {tests}; {done} finished runs ({trials} trials) are kept in {self._directory}; fix the test and run "
                f"again, or carry on with `benchsage resume {self._directory} --ignore-failures`")

    def _lost_message(self) -> str:
        """The lost workers and why, what the others did (finished; stopped because every test
        was decided; or did not finish), what is kept and what to do next."""
        done, trials = self.journal.progress()
        kept = f"{done} finished runs ({trials} trials) are kept in {self._directory}"
        decided = self._decided()
        if len(self.workers) == 1:
            (reason,) = self._lost.values()
            return f"{reason}; {kept}; fix it, then `benchsage resume {self._directory}`"
        lost = "; ".join(f"{name}: {reason}" for name, reason in sorted(self._lost.items()))
        then = (f"`benchsage analyze {self._directory}` reports the result" if decided else
                f"`benchsage resume {self._directory}` continues exactly the missing runs")
        return f"{len(self._lost)} of {len(self.workers)} workers lost ({lost}); {self._others(decided)}{kept}; {then}"

    def _decided(self) -> str | None:
        """Where a sequential experiment stopped early: "every test was decided at look 2 of 4
        (20 runs per arm)"; None when it did not (a lost worker or a failed context keeps the
        last look from being taken, so an experiment they touched can only stop early)."""
        if self._looks is None:
            return None
        looks, points = self._looks.taken, self._looks.points
        if not looks or not looks[-1].stop or looks[-1].decided < looks[-1].m:
            return None
        last = looks[-1]
        return f"every test was decided at look {last.index + 1} of {len(points)} ({points[last.index]} runs per arm)"

    def _others(self, decided: str | None) -> str:
        """What the workers that were not lost did, as the lost-worker message says it."""
        others = [w.name for w in self.workers if w.name not in self._lost]
        if not others:
            return ""
        if decided:
            return f"the other {len(others)} stopped when {decided}, so the runs not carried out are not needed; "
        left = {name: 0 for name in others}
        for run in self.journal.runs():
            if run["worker"] in left and run["status"] not in FINISHED:
                left[run["worker"]] += 1
        unfinished = {name: n for name, n in left.items() if n}
        if not unfinished:
            text = f"the other {len(others)} finished"
            if self._looks is not None:  # their runs are all done, and the last look needs the lost workers' too
                text += f", and the last look waits for the runs {' and '.join(sorted(self._lost))} did not carry out"
            return text + "; "
        counts = ", ".join(f"{name}: {n} runs left" for name, n in unfinished.items()) + self._held()
        if len(unfinished) == len(others):
            return f"the other {len(others)} did not finish ({counts}); "
        finished = [name for name in others if name not in unfinished]
        return f"{', '.join(finished)} finished, {', '.join(unfinished)} did not ({counts}); "

    def _held(self) -> str:
        """Why workers that were not lost stopped short in a sequential experiment: the next
        look has no new pair of runs to analyse without the lost workers' and skipped runs."""
        if self._looks is None:
            return ""
        k, points = len(self._looks.taken), self._looks.points
        return (f"; look {k + 1} of {len(points)} at {points[k]} run{'s' if points[k] != 1 else ''} per arm has no new pair "
                "of runs to analyse without the missing ones")

    def _thread(self, worker: Any, runs: list[dict[str, Any]]) -> None:
        try:
            self._carry_out(worker, runs)
        except WorkerError as exc:  # from its [init]: a bad reply, a dropped connection; it names the worker
            self._lost[worker.name] = str(exc)
        except BaseException as exc:  # noqa: BLE001 - a bug must not hang the controller
            if not isinstance(exc, _Stopped):
                self._lost[worker.name] = f"worker {worker.name}: {type(exc).__name__}: {exc}"
        finally:
            if self._looks is not None:
                self._looks.leave(worker.name)

    def _carry_out(self, worker: Any, runs: list[dict[str, Any]]) -> None:
        first = runs[0]["id"] if runs else 0
        # A worker with nothing left to run is not initialized, unless asked (resume --redeploy:
        # what was deployed again is initialized again).
        if self.spec.init is not None and (self._reinitialize or any(run["status"] not in ("done", "skipped", NOT_NEEDED) for run in runs)):
            try:
                initialize(self.spec.init, self.journal, worker, self._initialized)
            except InitFailed as exc:
                self._lost[worker.name] = str(exc)
                return
        pending = [run for run in runs if run["status"] not in ("done", "skipped", NOT_NEEDED)]
        if self.spec.warmup and pending:
            self._warm_up(worker, pending[0])
        for run in runs:
            if run["status"] in ("done", "skipped", NOT_NEEDED):
                continue
            if self._looks is not None and not self._looks.may_start(worker.name, run):
                return  # decided (the run is not needed), or waiting for a look this session cannot take
            number = run["id"] - first + 1
            while True:
                if self._stop.is_set():
                    return
                try:
                    self._run_one(worker, run, number)
                    break
                except _Stopped:
                    return
                except _ResetFailed as exc:
                    self._lost[worker.name] = str(exc)
                    return
                except WorkerSetupError as exc:
                    self._lost[worker.name] = str(exc)
                    return
                except WorkerLost as exc:
                    if self._stop.is_set():
                        return
                    timeout = getattr(worker, "reconnect_timeout", 0.0)
                    self.progress.message(
                        f"worker {worker.name}: {_strip(exc, worker.name)} during run {number}; "
                        f"reconnecting (up to {timeout:g} s), then the run is redone from its reset"
                    )
                    try:
                        worker.reconnect(stop=self._stop)
                    except (WorkerError, _Stopped) as again:
                        if not self._stop.is_set():
                            self._lost[worker.name] = f"worker {worker.name}: lost during run {number}: {_strip(again, worker.name)}"
                        return
                except WorkerError as exc:
                    self._lost[worker.name] = str(exc)
                    return
            if self._looks is not None:
                self._looks.run_finished(worker.name, run)

    def _prepare_request(self, request: ProcessRequest, test: TestSpec) -> ProcessRequest:
        """A test's `prepare`, run before each of its trials as the trial is (its env, cwd, CPUs,
        treatment), but not measured: no trial of its own, nothing collected."""
        key = id(request)
        found = self._prepares.get(key)
        if found is None or found[0] is not request:
            assert test.prepare is not None
            found = self._prepares[key] = (request, dataclasses.replace(request, command=test.prepare, trial=False, collect=(), shell=True))
        return found[1]

    def _warm_up(self, worker: Any, run: dict[str, Any]) -> None:
        """`warmup` trials of every test (each after its `prepare`), under the first run's
        treatment, before the first run of this session on `worker`: not recorded."""
        tests = self.spec.tests
        self.progress.message(f"{self._prefix(worker)}warm-up: {self.spec.warmup} trial{'s' if self.spec.warmup != 1 else ''} of each of "
                              f"the {len(tests)} tests, not recorded")
        for _ in range(self.spec.warmup):
            for test_id, test in enumerate(tests):
                if self._stop.is_set():
                    return
                request = self._applier.request(test_id, run.get("treatment"))
                if test.prepare is not None and not worker.run(self._prepare_request(request, test)).ok:
                    continue
                worker.run(request)

    def _run_one(self, worker: Any, run: dict[str, Any], number: int) -> None:
        journal, spec = self.journal, self.spec
        attempt_id, attempt = journal.begin_attempt(run["id"], worker.name)
        self._current[worker.name] = number
        self.progress.run_started(run["id"], run["arm"], attempt, worker=worker.name)
        cell = run.get("treatment")
        failed = self._failed_contexts.get(worker.name, {})
        context = self._applier.cells[cell].context if self._applier.active and cell is not None else None
        if context is not None and context.label in failed:
            self._skip(worker, run, attempt_id, f"context {context.label}: {failed[context.label]}")
            return
        try:
            self._reset(worker, number, attempt_id)
            if not self._prepare(worker, run, number, attempt_id):
                return
            snapshot = worker.snapshot([], spec.folder, self._commands)
            snapshot["spec_hash"] = spec.digest
            journal.record_snapshot(attempt_id, snapshot)
            journal.flushed()  # the run before is on disk before this one measures anything
            boot = snapshot.get("boot_id")
            previous: int | None = None
            for position, test_id in enumerate(run["order"]):
                if self._stop.is_set():
                    raise _Stopped()
                test = spec.tests[test_id]
                request = self._applier.request(test_id, cell)
                prepared = worker.run(self._prepare_request(request, test)) if test.prepare is not None else None
                if prepared is not None and not prepared.ok:  # the trial cannot start from where it should
                    result, outcome = prepared, TrialOutcome("failed", f"prepare `{test.prepare}` {failure_reason(prepared, test.timeout)}", {})
                else:
                    result = worker.run(request)
                    outcome = classify(test, result)
                if result.note:
                    self.progress.message(f"{self._prefix(worker)}{result.note}")
                journal.add_trial(_record(run["id"], attempt_id, worker.name, test_id, position, previous, result, outcome, boot))
                output = output_tail(result.stdout, result.stderr) if outcome.status != OK else None
                self.progress.trial_done(test.name, outcome.status, _shown(test, result, outcome), outcome.reason, worker=worker.name,
                                         output=output)
                self._watch.trial(test_id, outcome.status, outcome.reason, output)
                previous = test_id
        except (_Stopped, KeyboardInterrupt):
            journal.finish_attempt(attempt_id, run["id"], "interrupted", "interrupted by the user")
            raise _Stopped() from None
        except WorkerLost as exc:
            if self._stop.is_set():
                journal.finish_attempt(attempt_id, run["id"], "interrupted", "interrupted by the user")
                raise _Stopped() from None
            journal.finish_attempt(attempt_id, run["id"], "failed", f"connection lost: {exc}")
            raise
        except _ResetFailed as exc:
            journal.finish_attempt(attempt_id, run["id"], "reset-failed", str(exc))
            raise
        except WorkerError as exc:
            journal.finish_attempt(attempt_id, run["id"], "failed", str(exc))
            raise
        except BaseException as exc:
            journal.finish_attempt(attempt_id, run["id"], "failed", f"{type(exc).__name__}: {exc}")
            raise
        self._current.pop(worker.name, None)
        journal.finish_attempt(attempt_id, run["id"], "done")
        self.progress.run_done(run["id"], run["arm"], worker=worker.name)
        failing = self._watch.failing()
        if failing and not self._stop.is_set():
            self._failing = failing
            self._stop.set()  # every worker stops before its next trial
            if self._looks is not None:
                self._looks.wake()

    def _skip(self, worker: Any, run: dict[str, Any], attempt_id: int, detail: str) -> None:
        """Finish a run of a context whose build failed on this worker without measuring it."""
        self.journal.finish_attempt(attempt_id, run["id"], "context-failed", detail)
        self._current.pop(worker.name, None)
        self.progress.dropped(1, len(run["order"]), "skipped")

    def _prepare(self, worker: Any, run: dict[str, Any], number: int, attempt_id: int) -> bool:
        """Run the steps of the run's treatment (a link-order build, factor setups) after its
        reset. False when its context's build failed: the run is then skipped (finished
        "context-failed"), as are that context's later runs on this worker."""
        for step in self._applier.steps(run.get("treatment"), self._built.get(worker.name)):
            result = worker.run(step.request)
            status = "ok" if result.ok else "timeout" if result.timed_out else "failed"
            self.journal.record_setup(attempt_id, step.kind, step.what, step.request.command, status, result.exit_status,
                                      result.wall_time, result.stdout, result.stderr)
            if status == "ok":
                if step.context is not None:
                    self._built[worker.name] = step.context
                continue
            why = failure_reason(result, step.request.timeout)
            if step.context is not None:
                self._built[worker.name] = None
                self._failed_contexts.setdefault(worker.name, {})[step.context] = why
                self.progress.message(f"{self._prefix(worker)}the link-order build for {step.what} failed ({why}); "
                                      f"its runs are skipped, the others go on")
                self._skip(worker, run, attempt_id, f"{step.what}: link-order build failed: {why}")
                return False
            raise _ResetFailed(f"{self._prefix(worker)}{step.what}: the setup `{step.request.command}` failed before run {number} ({why})")
        return True

    def _tidy_up(self) -> None:
        """Remove the longer working directories the contexts made in the tests' folders, on
        every worker still connected; a failure is a warning (what was measured stands)."""
        requests = self._applier.tidy_up()
        for worker in self.workers:
            if worker.name in self._lost:
                continue
            for request in requests:
                try:
                    result = worker.run(request)
                    problem = None if result.ok else result.error or last_line(result.stderr) or f"exit status {result.exit_status}"
                except WorkerError as exc:
                    problem = _strip(exc, worker.name)
                if problem:
                    self.progress.message(f"warning: {self._prefix(worker)}cannot remove the longer working directories "
                                          f"in {request.cwd}: {problem}")

    def _prefix(self, worker: Any) -> str:
        return f"worker {worker.name}: " if len(self.workers) > 1 or worker.kind != "local" else ""

    def _reset(self, worker: Any, number: int, attempt_id: int) -> None:
        reset = self.spec.reset
        if reset is None:
            self.journal.record_reset(attempt_id, "none", None, None, b"", b"")
            return
        if reset.steps and hasattr(worker, "members"):
            self._reset_steps(worker, number, attempt_id)
            return
        if reset.kind == "reboot":
            self._reboot(worker, number, attempt_id)
            return
        result = worker.run(ProcessRequest(command=reset.command, cwd=reset.cwd, env=reset.env, timeout=reset.timeout))
        status = "ok" if result.ok else "timeout" if result.timed_out else "failed"
        self.journal.record_reset(attempt_id, status, result.exit_status, result.wall_time, result.stdout, result.stderr)
        if status != "ok":
            raise _ResetFailed(f"{self._prefix(worker)}reset failed before run {number} ({failure_reason(result, reset.timeout)})")

    def _reset_steps(self, worker: Any, number: int, attempt_id: int) -> None:
        """A group's reset: each step on its role's host (a step without a role on every role's
        host, in declared order), a reboot verified per host; what they printed is journaled
        together, each under its host."""
        assert self.spec.reset is not None
        t0 = time.monotonic()
        out: list[bytes] = []
        for step in self.spec.reset.steps:
            for role in [step.role] if step.role else worker.roles:
                member = worker.member(role)
                if step.kind == "reboot":
                    self._reboot(member, number, attempt_id, step)
                    out.append(f"[{member.name}] rebooted and verified\n".encode())
                    continue
                result = member.run(ProcessRequest(command=step.command, cwd=step.cwd, env=step.env, timeout=step.timeout))
                out.append(f"[{member.name}] {step.command}\n".encode() + result.stdout + result.stderr)
                if not result.ok:
                    status = "timeout" if result.timed_out else "failed"
                    self.journal.record_reset(attempt_id, status, result.exit_status, time.monotonic() - t0, b"".join(out), b"")
                    raise _ResetFailed(f"worker {member.name}: reset step `{step.command}` failed before run {number} "
                                       f"({failure_reason(result, step.timeout)})")
        self.journal.record_reset(attempt_id, "ok", 0, time.monotonic() - t0, b"".join(out), b"")

    def _reboot(self, worker: Any, number: int, attempt_id: int, step: Any = None) -> None:
        """Reboot the host and verify it: a new boot id when the agent answers again, within the
        reset's timeout. A reboot command that fails, a host that never comes back, or one that
        comes back with the same boot id is a failed reset. `step`: a group's reset step (its
        command, timeout, cwd and env), else the spec's [reset]."""
        reset = step or self.spec.reset
        assert reset is not None
        t0 = time.monotonic()
        before = worker.boot_id()
        if not before:
            raise _ResetFailed(f"{self._prefix(worker)}cannot read the boot id before run {number}; set `boot_id` in its [[worker]]")
        dropped = False
        try:
            result = worker.run(
                ProcessRequest(command=reset.command, cwd=reset.cwd, env=reset.env, timeout=min(reset.timeout, REBOOT_COMMAND_TIMEOUT))
            )
        except WorkerLost:
            result, dropped = None, True  # the host went down under the command: as expected
        if result is not None and not result.ok:
            why = failure_reason(result, min(reset.timeout, REBOOT_COMMAND_TIMEOUT), verb="return")
            self.journal.record_reset(attempt_id, "failed", result.exit_status, time.monotonic() - t0, result.stdout, result.stderr)
            raise _ResetFailed(f"{self._prefix(worker)}the reboot command `{reset.command}` failed before run {number} ({why})")
        worker.disconnect()
        deadline = t0 + reset.timeout
        delay = BACKOFF_FIRST
        same_seen = False
        last_error = "no answer"
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if self._stop.wait(min(delay, left)):
                raise _Stopped()
            delay = min(delay * 2, BACKOFF_MAX)
            try:
                worker.connect(timeout=max(1.0, min(60.0, deadline - time.monotonic())), stop=self._stop)
                now = worker.boot_id()
            except (WorkerSetupError, BadReply):  # not a host still rebooting: retrying will not help
                raise
            except WorkerError as exc:
                # The host did not answer; unless the reset's own deadline cut the attempt
                # short (a slow answer then proves nothing), it went down.
                dropped = dropped or time.monotonic() < deadline
                last_error = _strip(exc, worker.name)
                worker.disconnect()
                continue
            if now and now != before:
                summary = f"boot id {before} -> {now}; connection dropped: {'yes' if dropped else 'no'}; back after {time.monotonic() - t0:.1f} s\n"
                self.journal.record_reset(attempt_id, "ok", 0, time.monotonic() - t0, summary.encode(), b"")
                return
            same_seen = True
            worker.disconnect()
        elapsed = time.monotonic() - t0
        if same_seen and not dropped:
            reason = (
                f"the host did not reboot before run {number}: it still answered with boot id {before} after {reset.timeout:g} s "
                f"(the reboot command `{reset.command}` exited 0; check that it really reboots, e.g. passwordless sudo)"
            )
        elif same_seen:
            reason = f"the host came back with the same boot id {before} before run {number}: it was not rebooted"
        else:
            reason = f"the host did not come back within {reset.timeout:g} s after the reboot before run {number} ({last_error})"
        self.journal.record_reset(attempt_id, "timeout", None, elapsed, reason.encode(), b"")
        raise _ResetFailed(f"{self._prefix(worker)}{reason}")


def _hang_up(worker: Any) -> None:
    hang_up = getattr(worker, "hang_up", None)
    if hang_up is not None:
        hang_up()


def _hang_up_all(workers: Sequence[Any]) -> None:
    """Hang up every worker at once: each may wait a moment for its transport to exit."""
    threads = [threading.Thread(target=_hang_up, args=(w,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _strip(exc: BaseException, name: str) -> str:
    return str(exc).removeprefix(f"worker {name}: ")


def _shown(test: TestSpec, result: ProcessResult, outcome: TrialOutcome) -> str:
    if outcome.status != "ok":
        return ""
    shown = [m for m in test.metrics if m.name in outcome.values]
    if shown:
        m = next((m for m in shown if m.name == test.primary_metrics[0]), shown[0])
        return f"{m.name}={outcome.values[m.name]:.6g}{(' ' + m.unit) if m.unit else ''}"
    return f"{result.wall_time:.4g} s"


def _record(
    run_id: int,
    attempt_id: int,
    worker: str,
    test_id: int,
    position: int,
    previous: int | None,
    result: ProcessResult,
    outcome: TrialOutcome,
    boot_id: str | None = None,
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
        boot_id=boot_id,
        spawn=result.spawn or None,
        leftovers=result.leftovers,
        hosts=result.hosts,
    )


class _signals_as_interrupts:
    """SIGTERM and SIGHUP end the experiment the way Ctrl-C does: the trial in flight is killed,
    everything finished is kept, and resume can continue. Only the first of these signals
    interrupts: a second Ctrl-C while the workers stop (a few seconds at most) changes nothing."""

    def __enter__(self) -> None:
        self._old: dict[int, Any] = {}
        fired = threading.Event()

        def handler(signum: int, frame: Any) -> None:
            if fired.is_set():
                return
            fired.set()
            raise KeyboardInterrupt() if signum == signal.SIGINT else Interrupted()

        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            try:
                self._old[sig] = signal.signal(sig, handler)
            except ValueError:  # not the main thread
                pass

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


signals_as_interrupts = _signals_as_interrupts  # for the sessions that hold an allocation: SIGTERM releases it too
