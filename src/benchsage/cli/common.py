"""What the commands that run and analyse share: printing an analysis, the report with the run,
the exit status, and the options every such command takes."""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import click

from benchsage.errors import EXIT_EFFECT, EXIT_OK, EXIT_TESTS_FAILED


def print_analysis(analysis: Any, as_json: bool, extra: dict[str, Any] | None = None, everything: bool = False) -> None:
    """The analysis as JSON on stdout, or answer-first on the terminal (everything: --all)."""
    if as_json:
        # Indented for a person at a terminal; compact when piped, where the diagnostics of a
        # large experiment would otherwise add megabytes of whitespace.
        from benchsage.report.json import analysis_json_text

        click.echo(analysis_json_text(analysis, extra, indent=2 if sys.stdout.isatty() else None))
        return
    from benchsage.report.terminal import make_console, render_analysis

    render_analysis(analysis, make_console(), everything=everything)


def exit_for(analysis: Any, fail_on_effect: bool, ignore_failures: bool = False) -> None:
    if analysis.tests_failed and not ignore_failures:
        status = EXIT_TESTS_FAILED
    else:
        status = EXIT_EFFECT if fail_on_effect and analysis.order_matters else EXIT_OK
    if PROGRAM.running:
        # Everything is printed: leave without tearing down the interpreter, whose freeing of a
        # large analysis's objects took 50 ms of the paper-scale benchmark's 1.5 s.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)


class _Program:
    running = False  # main() runs as the `benchsage` program (not called from Python)


PROGRAM = _Program()


def all_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--all", "everything", is_flag=True,
                        help="Print everything: the paper-style tables, the metrics outside the primary family, "
                             "every diagnostic and every warning in full (the JSON always has them).")(func)


def failure_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("-i", "--ignore-failures", "--ignore-failure", "ignore_failures", is_flag=True,
                        help="Tests whose trials fail do not stop the experiment nor change the exit status "
                             "(by default a test that fails in each of its first 2 trials stops it, and a test with "
                             "no successful trial or failing in more than half of them exits 4).")(func)


def report_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--report/--no-report", default=lambda: os.environ.get("BENCHSAGE_REPORT", "1").strip().lower() not in ("0", "no", "off", "false"),
                        show_default="yes, unless BENCHSAGE_REPORT=0",
                        help="Write the HTML report to DIR/report.html and print its path last.")(func)


def stopped_by_failures(carry_out: Callable[[], None]) -> None:
    """Carry the experiment out; a test that failed in each of its first trials stopped it: say
    so, and go on to the analysis, which names the test first (exit status 4)."""
    from benchsage.errors import TestsFailed

    try:
        carry_out()
    except TestsFailed as exc:
        click.echo(f"benchsage: {exc}", err=True)


def finish(directory: str, as_json: bool, fail_on_effect: bool, ignore_failures: bool = False, report: bool = True,
            everything: bool = False) -> None:
    """Analyse the experiment in `directory`, write its report (DIR/report.html) and print both:
    the analysis, then the report's path, last."""
    from benchsage.api import analyze_sources

    analysis, table = analyze_sources([directory], format="benchsage")
    page = os.path.join(directory, REPORT_NAME) if report else None
    if not as_json:
        click.echo(f"Experiment directory: {directory}")
    print_analysis(analysis, as_json, {"directory": directory, "report": page}, everything)
    finish_report(analysis, table, page, as_json)
    exit_for(analysis, fail_on_effect, ignore_failures)


def finish_report(analysis: Any, table: Any, page: str | None, as_json: bool) -> None:
    """Write the HTML report to `page` (None: none asked) and say where, last (on stderr beside
    JSON on stdout)."""
    if page is None:
        return
    from benchsage.report.html import write_report
    from benchsage.store.modes import FILE_MODE

    write_report(analysis, table, page, mode=FILE_MODE)
    click.echo(f"Report: {page}", err=as_json)


REPORT_NAME = "report.html"  # the report `run` and `resume` write into the experiment directory
