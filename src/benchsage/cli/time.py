"""`benchsage time COMMAND...`: hyperfine's command line, order-safe. The options become an
ordinary spec (spec/commandline.py) carried out, journaled and analysed as `run` does."""

from __future__ import annotations

import os
import secrets
import time as clock
from typing import Any, Sequence

import click

from benchsage.cli.common import REPORT_NAME, exit_for, finish_report, print_analysis, report_option, stopped_by_failures
from benchsage.errors import UsageError

SPEC_NAME = "benchsage-time.toml"  # where the command line's spec stands (the journal keeps its text): the current folder


@click.command(name="time", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("commands", nargs=-1, required=True)
@click.option("-r", "--runs", type=click.IntRange(min=1), default=10, show_default=True, help="Runs per arm: this many in the fixed order, as many in random orders.")
@click.option("-n", "--command-name", "names", multiple=True, metavar="NAME", help="A command's name, in the order of the commands (repeat for each).")
@click.option("-w", "--warmup", type=click.IntRange(min=0), default=0, help="Trials of every command before the first run, not recorded.")
@click.option("-p", "--prepare", multiple=True, metavar="CMD", help="Before every trial, not timed: one for all commands, or one per command.")
@click.option("--reset", default=None, metavar="CMD", help="Before every run (the experiment's reset): return the machine to a clean state.")
@click.option("-s", "--setup", default=None, metavar="CMD", help="Once, before everything.")
@click.option("-c", "--cleanup", default=None, metavar="CMD", help="Once, after everything, whatever happens.")
@click.option("-N", "no_shell", is_flag=True, help="Run every command without a shell: its words, split as a shell would, are executed.")
@click.option("-S", "--shell", type=click.Choice(["sh", "none"]), default="sh", show_default=True,
              help="none: as -N. (sh: a command with shell syntax runs in /bin/sh -c; any other is executed directly.)")
@click.option("-P", "--parameter-scan", "ranges", nargs=3, multiple=True, metavar="NAME MIN MAX",
              help="A parameter scan: {NAME} in the commands takes MIN, MIN+STEP, ... MAX; each value a command named cmd[NAME=v].")
@click.option("-D", "--parameter-step-size", "step", default=None, metavar="STEP", help="The step of -P (default 1).")
@click.option("-L", "--parameter-list", "lists", nargs=2, multiple=True, metavar="NAME VALUES", help="A parameter scan over comma-separated VALUES.")
@click.option("-i", "--ignore-failure", "--ignore-failures", "ignore_failure", is_flag=True,
              help="Commands that fail do not stop the experiment nor change the exit status (by default: stop, exit 4).")
@click.option("--timeout", type=click.FloatRange(0, min_open=True), default=None, metavar="S", help="Seconds after which a trial is killed (a timeout).")
@click.option("--cpus", default=None, metavar="LIST", help="Pin every trial to these CPUs (taskset list syntax: 2-3).")
@click.option("--stop", type=click.Choice(["sequential"]), default=None, help="Stop as soon as the answer is clear (group-sequential looks).")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed of the random orders (default: drawn, and recorded).")
@click.option("-o", "--output", "directory", type=click.Path(file_okay=False, path_type=str), default=None,
              help="Experiment directory (default results/time-<UTC time>); `benchsage analyze`, `report`, `export` and `resume` read it.")
@click.option("--save-spec", type=click.Path(dir_okay=False, path_type=str), default=None, metavar="FILE",
              help="Write the experiment as a spec: `benchsage run FILE` draws the same plan.")
@click.option("--export-json", type=click.Path(dir_okay=False, path_type=str), default=None, metavar="FILE",
              help="hyperfine's JSON (results: command, mean, median, times, ...) with a benchsage object: arms, orders, verdict.")
@click.option("--export-markdown", type=click.Path(dir_okay=False, path_type=str), default=None, metavar="FILE",
              help="hyperfine's Markdown table, each command's median relative to the fastest with its interval.")
@click.option("--export-csv", type=click.Path(dir_okay=False, path_type=str), default=None, metavar="FILE", help="hyperfine's CSV.")
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as JSON on stdout (progress on stderr).")
@click.option("--quiet", is_flag=True, help="No progress output.")
@report_option
def time_command(commands: Sequence[str], runs: int, names: Sequence[str], warmup: int, prepare: Sequence[str], reset: str | None,
                 setup: str | None, cleanup: str | None, no_shell: bool, shell: str,
                 ranges: Sequence[tuple[str, str, str]], step: str | None, lists: Sequence[tuple[str, str]], ignore_failure: bool,
                 timeout: float | None, cpus: str | None, stop: str | None, seed: int | None, directory: str | None,
                 save_spec: str | None, export_json: str | None, export_markdown: str | None, export_csv: str | None, as_json: bool,
                 quiet: bool, report: bool) -> None:
    """Time COMMANDs interleaved, in a fixed and in fresh random orders, and say which is faster
    and whether the order mattered (hyperfine's options, order-safe)."""
    from benchsage.spec.commandline import TimeRequest, scan_list, scan_range, time_spec_text

    if step is not None and not ranges:
        raise UsageError("-D/--parameter-step-size needs -P NAME MIN MAX")
    scans = tuple(scan_range(name, low, high, step) for name, low, high in ranges) + tuple(scan_list(name, values) for name, values in lists)
    if len({s.name for s in scans}) != len(scans):
        raise UsageError("a parameter is scanned twice (one -P or -L per name)")
    folder = os.getcwd()
    request = TimeRequest(tuple(commands), folder, tuple(names), runs, seed if seed is not None else secrets.randbelow(2**31),
                          reset, setup, timeout, cpus, stop, scans, warmup, tuple(prepare), cleanup, no_shell or shell == "none")
    text = time_spec_text(request)
    exports = {kind: path for kind, path in (("json", export_json), ("markdown", export_markdown), ("csv", export_csv)) if path}
    for kind, path in exports.items():  # said before the experiment, not after it
        _check_writable(f"--export-{kind}", path)
    if save_spec is not None:
        _save(save_spec, text, folder)
    directory = directory or os.path.join("results", "time-" + clock.strftime("%Y%m%dT%H%M%SZ", clock.gmtime()))
    from benchsage.api import carry_out

    stopped_by_failures(lambda: carry_out(os.path.join(folder, SPEC_NAME), directory, quiet=quiet, ignore_failures=ignore_failure, text=text))
    _answer(directory, as_json, report, ignore_failure, exports)


def _check_writable(option: str, path: str) -> None:
    """A file the command will write: its folder exists and takes it, and it is no folder."""
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a directory")
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {path}: No such file or directory (no folder {parent})")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{option} {path}: Permission denied (cannot write into {parent})")


def _save(path: str, text: str, folder: str) -> None:
    """The spec, runnable from wherever it is saved: the commands keep running in this folder."""
    if os.path.dirname(os.path.abspath(path)) != folder:
        from benchsage.spec.emit import string

        text = text.replace("[experiment]\n", f"[experiment]\ncwd = {string(folder)}\n", 1)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise UsageError(f"--save-spec {path}: {exc.strerror or exc}") from None


def _answer(directory: str, as_json: bool, report: bool, ignore_failure: bool, exports: dict[str, str]) -> None:
    """The answer of the command line: per command, the fastest against the others, the order
    verdict; the exports, then the report, last."""
    from benchsage.analyze.timings import per_test_timings
    from benchsage.api import analyze_sources

    analysis, table = analyze_sources([directory], format="benchsage")
    page = os.path.join(directory, REPORT_NAME) if report else None
    if as_json:
        print_analysis(analysis, True, {"directory": directory, "report": page})
    else:
        from benchsage.report.terminal import make_console
        from benchsage.report.timing import render_timing

        render_timing(analysis, per_test_timings(table, level=analysis.ci_level, method=analysis.ci_method), make_console())
        click.echo(f"Results: {directory} (benchsage analyze {directory} --all: every table and diagnostic)")
    _export(analysis, table, exports)
    finish_report(analysis, table, page, as_json)
    exit_for(analysis, False, ignore_failure)


def _export(analysis: Any, table: Any, exports: dict[str, str]) -> None:
    """hyperfine's formats, each to its file (report/hyperfine.py)."""
    if not exports:
        return
    from benchsage.report.hyperfine import hyperfine_csv, hyperfine_json_text, hyperfine_markdown

    writers = {"json": hyperfine_json_text, "markdown": hyperfine_markdown, "csv": hyperfine_csv}
    for kind, path in exports.items():
        try:
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(writers[kind](analysis, table))
        except OSError as exc:
            raise UsageError(f"--export-{kind} {path}: {exc.strerror or exc}") from None
