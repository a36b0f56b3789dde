"""Progress of a running experiment, on stderr: runs and trials done, ETA, the last value.

Nothing here runs while a trial runs: the runner calls these between trials only, and the rich
display never refreshes on its own (auto_refresh off), so no thread wakes up to draw while a
test is being measured.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Protocol

from benchsage.vocabulary import format_duration


class Progress(Protocol):
    """Called between trials, from each worker's thread (implementations serialize)."""

    def start(self, total_runs: int, total_trials: int, done_runs: int, done_trials: int) -> None: ...
    def run_started(self, run_index: int, arm: str, attempt: int, worker: str = "") -> None: ...
    def trial_done(self, test: str, status: str, shown_value: str, reason: str | None, worker: str = "", output: str | None = None) -> None: ...
    def run_done(self, run_index: int, arm: str, worker: str = "") -> None: ...
    def dropped(self, runs: int, trials: int, why: str) -> None: ...
    def message(self, text: str) -> None: ...
    def stop(self) -> None: ...


class _Counter:
    """Shared bookkeeping: counts and an ETA from the pace of this session's trials."""

    def __init__(self) -> None:
        self.total_runs = self.total_trials = self.done_runs = self.done_trials = 0
        self.session_trials = 0
        self.t0 = time.monotonic()
        self.lock = threading.RLock()
        self.workers_seen: set[str] = set()
        self.dropped_runs: dict[str, int] = {}  # why -> planned runs that will not be carried out
        self.failed_before: set[str] = set()  # tests whose failure has been shown with its output

    def failure_lines(self, test: str, status: str, reason: str | None, output: str | None, tag: str) -> list[str]:
        """A failed trial in words: "trial typo: failed (exit status 127)", and the first time the
        test fails, the last lines of its output under it."""
        lines = [f"  {tag}trial {test}: {status}" + (f" ({reason})" if reason else "")]
        if output and test not in self.failed_before:
            lines.extend(f"    | {line}" for line in output.splitlines())
        self.failed_before.add(test)
        return lines

    def tag(self, worker: str) -> str:
        """"[node1] " once several workers report, so lines say where they come from."""
        if worker:
            self.workers_seen.add(worker)
        return f"[{worker}] " if worker and len(self.workers_seen) > 1 else ""

    def start(self, total_runs: int, total_trials: int, done_runs: int, done_trials: int) -> None:
        self.total_runs, self.total_trials = total_runs, total_trials
        self.done_runs, self.done_trials = done_runs, done_trials
        self.dropped_runs = {}
        self.t0 = time.monotonic()

    def dropped(self, runs: int, trials: int, why: str) -> None:
        """`runs` planned runs (`trials` trials) will not be carried out in this session, `why`:
        "not needed" (a sequential experiment stopped before them), "skipped" (their context's
        build failed). The totals shrink to the runs carried out, so the display ends full."""
        with self.lock:
            self.total_runs -= runs
            self.total_trials -= trials
            self.dropped_runs[why] = self.dropped_runs.get(why, 0) + runs

    def dropped_note(self) -> str:
        """", 20 not needed" for the runs dropped so far; "" when none were."""
        return "".join(f", {n} {why}" for why, n in self.dropped_runs.items())

    def eta(self) -> str:
        if self.session_trials == 0:
            return "?"
        pace = (time.monotonic() - self.t0) / self.session_trials
        return format_duration(pace * max(0, self.total_trials - self.done_trials))


class PlainProgress(_Counter):
    """One line per finished run (and per failed trial); for logs and non-terminals."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__()
        self.stream = stream or sys.stderr
        self.last = ""
        self.run_failures = 0

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def start(self, total_runs: int, total_trials: int, done_runs: int, done_trials: int) -> None:
        super().start(total_runs, total_trials, done_runs, done_trials)
        resumed = f", resuming after {done_runs} done" if done_runs else ""
        self._print(f"benchsage: {total_runs} runs, {total_trials} trials{resumed}")

    def run_started(self, run_index: int, arm: str, attempt: int, worker: str = "") -> None:
        with self.lock:
            self.run_failures = 0
            if attempt > 1:
                self._print(f"{self.tag(worker)}run {run_index + 1}: redoing from its reset (attempt {attempt})")

    def trial_done(self, test: str, status: str, shown_value: str, reason: str | None, worker: str = "", output: str | None = None) -> None:
        with self.lock:
            self.done_trials += 1
            self.session_trials += 1
            if status == "ok":
                self.last = f"{test} {shown_value}"
            else:
                for line in self.failure_lines(test, status, reason, output, self.tag(worker)):
                    self._print(line)

    def run_done(self, run_index: int, arm: str, worker: str = "") -> None:
        with self.lock:
            self.done_runs += 1
            self._print(
                f"{self.tag(worker)}run {self.done_runs}/{self.total_runs} ({arm}) done; trials {self.done_trials}/{self.total_trials}; "
                f"ETA {self.eta()}; last: {self.last or '-'}"
            )

    def message(self, text: str) -> None:
        with self.lock:
            self._print(text)

    def stop(self) -> None:
        pass


# A redraw of the bar takes 1-2 ms of the controller's time (rich renders every column): between
# two trials, three times the harness's own gap. The bar is redrawn at most this often (s).
REDRAW_EVERY = 1.0


class RichProgress(_Counter):
    """A progress bar redrawn only between trials, and at most once every REDRAW_EVERY seconds:
    most gaps between trials draw nothing (a failed trial's line and messages show at once)."""

    def __init__(self) -> None:
        super().__init__()
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        from rich.text import Text

        self.text = Text  # a failed trial's lines: the test's name and output are never read as markup

        self.console = Console(stderr=True)
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("trials"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[last]}"),
            console=self.console,
            auto_refresh=False,
            transient=False,
        )
        self.task = None
        self.arms: dict[str, str] = {}
        self.drawn = float("-inf")  # time.monotonic() of the last redraw

    def _draw(self) -> None:
        now = time.monotonic()
        if now - self.drawn >= REDRAW_EVERY:
            self.bar.refresh()
            self.drawn = now

    def start(self, total_runs: int, total_trials: int, done_runs: int, done_trials: int) -> None:
        super().start(total_runs, total_trials, done_runs, done_trials)
        self.bar.start()
        self.task = self.bar.add_task(self._label(), total=total_trials, completed=done_trials, last="")
        self.bar.refresh()

    def _label(self) -> str:
        return f"run {min(self.done_runs + 1, self.total_runs)}/{self.total_runs}{self.dropped_note()}"

    def dropped(self, runs: int, trials: int, why: str) -> None:
        with self.lock:
            super().dropped(runs, trials, why)
            if self.task is None:  # before start(): start() sets the totals
                return
            self.bar.update(self.task, total=self.total_trials, description=self._label())
            self._draw()

    def run_started(self, run_index: int, arm: str, attempt: int, worker: str = "") -> None:
        with self.lock:
            tag = self.tag(worker)
            if attempt > 1:
                self.bar.console.print(f"{tag}run {run_index + 1}: redoing from its reset (attempt {attempt})", markup=False)
            assert self.task is not None
            self.bar.update(self.task, description=f"{self._label()} {arm:<6}")
            if worker:
                self.arms[worker] = arm
            self._draw()

    def trial_done(self, test: str, status: str, shown_value: str, reason: str | None, worker: str = "", output: str | None = None) -> None:
        with self.lock:
            self.done_trials += 1
            self.session_trials += 1
            tag = self.tag(worker)
            assert self.task is not None
            if status != "ok":
                first, *shown = self.failure_lines(test, status, reason, output, tag)
                self.bar.console.print(self.text(first, style="yellow"), highlight=False)
                for line in shown:
                    self.bar.console.print(self.text(line, style="dim"), highlight=False)
                self.bar.advance(self.task)
            else:
                self.bar.update(self.task, advance=1, last=f"{tag}{test} {shown_value}")
            self._draw()

    def run_done(self, run_index: int, arm: str, worker: str = "") -> None:
        with self.lock:
            self.done_runs += 1
            assert self.task is not None
            self.bar.update(self.task, description=f"{self._label()} {', '.join(sorted(set(self.arms.values()))) if len(self.arms) > 1 else arm:<6}")

    def message(self, text: str) -> None:
        with self.lock:
            self.bar.console.print(text, markup=False, highlight=False)

    def stop(self) -> None:
        self.bar.refresh()  # the last counts, whenever the last redraw was
        self.bar.stop()


def make_progress(quiet: bool = False) -> Progress:
    if quiet:
        return QuietProgress()
    return RichProgress() if sys.stderr.isatty() else PlainProgress()


class QuietProgress(_Counter):
    def run_started(self, run_index: int, arm: str, attempt: int, worker: str = "") -> None:
        pass

    def trial_done(self, test: str, status: str, shown_value: str, reason: str | None, worker: str = "", output: str | None = None) -> None:
        pass

    def run_done(self, run_index: int, arm: str, worker: str = "") -> None:
        pass

    def message(self, text: str) -> None:
        print(text, file=sys.stderr)

    def stop(self) -> None:
        pass
