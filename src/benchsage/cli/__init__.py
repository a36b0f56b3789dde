"""The `benchsage` command: parse arguments, call the library, print. No logic lives here.

Every BenchsageError becomes one line on stderr and its exit status (2 bad input, 3 could not
finish); argument errors from click become one line and exit status 2 as well.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Callable, Sequence

import click

from benchsage.cli.time import time_command
from benchsage.cli.common import PROGRAM, all_option, exit_for, failure_option, finish, print_analysis, report_option, stopped_by_failures
from benchsage.errors import EXIT_BAD_INPUT, EXIT_OK, BenchsageError, UsageError
from benchsage.vocabulary import VERSION

_FORMATS = click.Choice(["auto", "benchsage", "tidy", "ordersage"])
_CORRECTIONS = click.Choice(["bonferroni", "holm"])


def _fail(message: str, status: int) -> None:
    click.echo(f"benchsage: error: {message}", err=True)
    sys.exit(status)


def _analysis_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options every command that analyses shares."""
    opts = [
        click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None, help="Family-wise significance level (default: the experiment's, else 0.05)."),
        click.option("--correction", type=_CORRECTIONS, default=None, help="Family-wise correction (default: the experiment's, else bonferroni)."),
        click.option("--ci-method", type=click.Choice(["exact-binomial", "le-boudec"]), default="exact-binomial", show_default=True, help="Confidence interval of the median."),
        click.option("--ci-level", type=click.FloatRange(0.5, 1, max_open=True), default=0.95, show_default=True),
        click.option("--ci-case-rule", type=click.Choice(["paper", "algorithm-2"]), default="paper", show_default=True, help="'paper': case 2 when at least one median lies in the other interval; 'algorithm-2': both."),
        click.option("--no-diagnostics", is_flag=True, help="Skip the position, carry-over, interleaving and trend diagnostics."),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def _options(alpha: float | None, correction: str | None, ci_method: str, ci_level: float, ci_case_rule: str, no_diagnostics: bool) -> Any:
    from benchsage.analyze.options import Options

    return Options(alpha=alpha, correction=correction, ci_method=ci_method, ci_level=ci_level, ci_case_rule=ci_case_rule, diagnostics=not no_diagnostics)


def _compare_claims(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> tuple[tuple[str, str, str | None], ...]:
    out = []
    for value in values:
        parts = [part.strip() for part in value.split(",")]
        if len(parts) not in (2, 3) or not all(parts):
            raise click.BadParameter(f"{value!r}: expected A,B or A,B,METRIC (two test names, then optionally a metric)")
        out.append((parts[0], parts[1], parts[2] if len(parts) == 3 else None))
    return tuple(out)


def _treatment_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options of the treatment analyses (comparisons), shared by analyze and report."""
    opts = [
        click.option("--compare", "claims", multiple=True, metavar="A,B[,METRIC]", callback=_compare_claims,
                     help="Is test A better than test B (on METRIC; default their primary metric)? Repeatable; adds to the spec's [[compare]]."),
        click.option("--compare-method", type=click.Choice(["mann-whitney", "touati"]), default=COMPARE_DEFAULTS[0], show_default=True,
                     help="The test of a comparison: Mann-Whitney, or Touati's Speedup-Test protocol."),
        click.option("--ratio-ci", type=click.Choice(["bonett-price", "bauer"]), default=COMPARE_DEFAULTS[1], show_default=True,
                     help="The interval of a comparison's ratio of medians."),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


# The test and the ratio interval of a comparison unless asked otherwise: those of
# analyze.treatments.TreatmentOptions(), which is not imported for them (it imports scipy).
COMPARE_DEFAULTS = ("mann-whitney", "bonett-price")


def _treatments(claims: Sequence[tuple[str, str, str | None]], compare_method: str, ratio_ci: str) -> Any:
    """The TreatmentOptions asked for, or None (the defaults) when nothing but the defaults was."""
    if not claims and (compare_method, ratio_ci) == COMPARE_DEFAULTS:
        return None
    from benchsage.analyze.treatments import CompareRequest, TreatmentOptions

    return TreatmentOptions(tuple(CompareRequest(*c) for c in claims), compare_method, ratio_ci)


def _analyze(sources: Sequence[str], fmt: str, options: Any, treatments: Any) -> tuple[Any, Any]:
    """Load and analyse, tuned for a process that exits afterwards (benchsage._runtime): the
    data is read while the analysis's own imports load in the background."""
    from benchsage._runtime import tune_short_lived_process

    tune_short_lived_process()
    from benchsage.api import analyze_sources

    return analyze_sources(list(sources), format=fmt, options=options, treatments=treatments)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(VERSION, prog_name="benchsage")
def cli() -> None:
    """Run performance experiments in fixed and random orders, and say whether the order mattered."""


@cli.command()
@click.argument("spec", type=click.Path(dir_okay=False, path_type=str))
@click.option("-o", "--output", "directory", type=click.Path(file_okay=False, path_type=str), help="Experiment directory (default results/<name>-<UTC time>).")
@click.option("--runs", type=click.IntRange(min=1), default=None, help="Runs per arm (overrides the spec).")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed of the plan (overrides the spec).")
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as JSON on stdout (progress stays on stderr).")
@click.option("--quiet", is_flag=True, help="No progress output.")
@click.option("--fail-on-effect", is_flag=True, help="Exit 1 when an order effect is found.")
@failure_option
@report_option
@all_option
def run(spec: str, directory: str | None, runs: int | None, seed: int | None, as_json: bool, quiet: bool, fail_on_effect: bool,
        ignore_failures: bool, report: bool, everything: bool) -> None:
    """Plan and execute the experiment in SPEC, then analyze it and write DIR/report.html."""
    from benchsage.api import carry_out

    directory = directory or _default_directory(spec)
    stopped_by_failures(lambda: carry_out(spec, directory, runs=runs, seed=seed, quiet=quiet, ignore_failures=ignore_failures))
    finish(directory, as_json, fail_on_effect, ignore_failures, report, everything)


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as JSON on stdout.")
@click.option("--quiet", is_flag=True, help="No progress output.")
@click.option("--fail-on-effect", is_flag=True, help="Exit 1 when an order effect is found.")
@click.option("--redeploy", is_flag=True, help="Deploy [deploy] to every worker again, also where it was verified before, and run [init] again.")
@failure_option
@report_option
@all_option
def resume(directory: str, as_json: bool, quiet: bool, fail_on_effect: bool, redeploy: bool, ignore_failures: bool, report: bool,
           everything: bool) -> None:
    """Finish an interrupted experiment: redo the interrupted run from its reset, then the rest."""
    from benchsage.execute.bisect.search import is_bisect, resume_bisect

    if is_bisect(directory):
        _shared_reset_note(directory=directory)
        _bisect_finish(resume_bisect(directory, quiet=quiet), directory, as_json)
    from benchsage.execute.session import resume as resume_experiment

    stopped_by_failures(lambda: resume_experiment(directory, quiet=quiet, redeploy=redeploy, stop_on_failure=not ignore_failures))
    finish(directory, as_json, fail_on_effect, ignore_failures, report, everything)


@cli.command()
@click.argument("spec", type=click.Path(dir_okay=False, path_type=str))
@click.option("--good", required=True, help="A commit where the metric has its old level.")
@click.option("--bad", required=True, help="A later commit (good must be its ancestor) where it has its new level.")
@click.option("--repo", type=click.Path(file_okay=False, path_type=str), default=None, help="The git repository (default: the spec's folder's).")
@click.option("--build", default=None, help="Shell command that builds a commit in its worktree, once per commit.")
@click.option("--test", "test_name", default=None, help="The test to measure (default: the spec's first).")
@click.option("--metric", default=None, help="The metric to follow (default: the test's first primary metric).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True,
              help="The most probability of naming a wrong commit, over the whole search.")
@click.option("--min-effect", type=click.FloatRange(0, min_open=True), default=2.0, show_default=True,
              help="Percent: a smaller difference between good and bad is 'no change'.")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed of the random orders (default: the spec's, else drawn).")
@click.option("-o", "--output", "directory", type=click.Path(file_okay=False, path_type=str), help="Search directory (default results/<name>-bisect-<UTC time>).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@click.option("--plan", "plan_only", is_flag=True, help="Print how many builds and runs to expect, and where; build and run nothing.")
@click.option("--keep-dirs", is_flag=True, help="Leave the bisect dirs on the workers' hosts when the search ends (default: removed).")
@click.option("--quiet", is_flag=True, help="No progress output.")
def bisect(spec: str, good: str, bad: str, repo: str | None, build: str | None, test_name: str | None, metric: str | None, alpha: float,
           min_effect: float, seed: int | None, directory: str | None, as_json: bool, plan_only: bool, keep_dirs: bool, quiet: bool) -> None:
    """Find the commit between --good and --bad that first moved the metric, with P(wrong commit) <= --alpha."""
    from benchsage.execute.bisect import BisectRequest, plan_bisect, start_bisect

    request = BisectRequest(spec, repo, good, bad, build, test_name, metric, alpha, min_effect, seed, keep_dirs)
    if directory is None and not plan_only:
        directory = _default_directory(spec).rstrip("/") + "-bisect"
    if plan_only:
        doc = plan_bisect(request, directory)
        if as_json:
            click.echo(json.dumps(doc, indent=2))
        else:
            from benchsage.report.bisect import plan_lines

            for line in plan_lines(doc):
                click.echo(line)
        return
    assert directory is not None
    _shared_reset_note(spec, test_name)
    _bisect_finish(start_bisect(request, directory, quiet=quiet), directory, as_json)


def _shared_reset_note(spec: str | None = None, test: str | None = None, directory: str | None = None) -> None:
    """Say so when the search's reset runs on role hosts other than its test's."""
    from benchsage.execute.bisect.search import shared_reset
    from benchsage.report.words.bisect import shared_reset as note

    roles, name = shared_reset(spec, test, directory)
    if roles:
        click.echo(note(roles, name), err=True)


def _bisect_finish(record: Any, directory: str, as_json: bool) -> None:
    from benchsage.analyze.bisect import summarize
    from benchsage.errors import EXIT_UNFINISHED
    from benchsage.report.bisect import bisect_json, render_bisect, write_bisect_html

    result = summarize(record)
    html = write_bisect_html(result, directory)
    if as_json:
        click.echo(json.dumps({"bisect": bisect_json(result), "directory": directory, "report": html}, indent=2 if sys.stdout.isatty() else None))
    else:
        from benchsage.report.terminal import make_console

        click.echo(f"Search directory: {directory}")
        render_bisect(result, make_console())
        click.echo(f"wrote {html}", err=True)
    sys.exit(EXIT_OK if result.decided else EXIT_UNFINISHED)


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=str))
@click.option("--yes", is_flag=True, help="Run a recorded release command that the spec at the recorded path does not confirm "
              "(without it: printed, with where it came from, and nothing run; exit 2).")
def release(directory: str, yes: bool) -> None:
    """Free the hosts an experiment still holds (Slurm job, `allocate` hosts) after a crash.

    A recorded release command runs only when the spec it came from (your own file) still gives
    it; otherwise it is printed with where it came from, and runs only with --yes."""
    from benchsage.api import release as release_allocations

    for line in release_allocations(directory, yes=yes):
        click.echo(line)


def _default_directory(spec_path: str) -> str:
    from benchsage.spec import load_spec

    name = load_spec(spec_path, run_generator=False).name
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return os.path.join("results", f"{name}-{stamp}")


@cli.command()
@click.argument("spec", type=click.Path(dir_okay=False, path_type=str))
@click.option("--runs", type=click.IntRange(min=1), default=None, help="Runs per arm (overrides the spec).")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed of the plan (overrides the spec).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.option("--pilot", type=click.Path(path_type=str), default=None,
              help="A finished pilot experiment DIR (or data file) of the same tests: advise the runs per arm each test needs.")
@click.option("--effect", type=click.FloatRange(0, min_open=True), default=None,
              help="With --pilot: the order effect to detect, in percent (default: the spec's min_effect, else 2).")
def plan(spec: str, runs: int | None, seed: int | None, as_json: bool, pilot: str | None, effect: float | None) -> None:
    """Print the plan (runs, arms, orders) and an estimate of its duration; run nothing. With
    --pilot, also the runs per arm each test needs to detect an order effect with 80% power."""
    from benchsage.api import plan as plan_document

    if effect is not None and pilot is None:
        raise UsageError("--effect needs --pilot DIR: the advice resamples a pilot experiment's values")
    doc = plan_document(spec, runs=runs, seed=seed, pilot=pilot, effect=effect)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    from benchsage.report.plan import render_plan
    from benchsage.report.terminal import make_console

    render_plan(doc, make_console())


@cli.command()
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--format", "fmt", type=_FORMATS, default="auto", show_default=True, help="Input format of the sources.")
@_analysis_options
@_treatment_options
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as JSON.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=str), default=None, help="Also write the per-test table as CSV to this file.")
@click.option("--fail-on-effect", is_flag=True, help="Exit 1 when an order effect is found.")
@failure_option
@all_option
def analyze(sources: Sequence[str], fmt: str, alpha: float | None, correction: str | None, ci_method: str, ci_level: float,
            ci_case_rule: str, no_diagnostics: bool, claims: Sequence[tuple[str, str, str | None]], compare_method: str, ratio_ci: str,
            as_json: bool, csv_path: str | None, fail_on_effect: bool, ignore_failures: bool, everything: bool) -> None:
    """Analyze experiment directories or data files (tidy CSV, OrderSage CSV)."""
    from benchsage._runtime import tune_short_lived_process

    tune_short_lived_process()
    from benchsage.api import analyze_sources_only

    analysis = analyze_sources_only(sources, format=fmt, options=_options(alpha, correction, ci_method, ci_level, ci_case_rule, no_diagnostics),
                                    treatments=_treatments(claims, compare_method, ratio_ci))
    if csv_path:
        from benchsage.report.csvout import write_analysis_csv

        write_analysis_csv(analysis, csv_path)
    print_analysis(analysis, as_json, everything=everything)
    exit_for(analysis, fail_on_effect, ignore_failures)


@cli.command()
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--format", "fmt", type=_FORMATS, default="auto", show_default=True, help="Input format of the sources.")
@_analysis_options
@_treatment_options
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=str),
              help="The HTML file to write (required but for a bisect directory: DIR/bisect.html).")
def report(sources: Sequence[str], fmt: str, alpha: float | None, correction: str | None, ci_method: str, ci_level: float,
           ci_case_rule: str, no_diagnostics: bool, claims: Sequence[tuple[str, str, str | None]], compare_method: str, ratio_ci: str,
           out: str | None) -> None:
    """Write a self-contained HTML report (verdict, tables, plots, diagnostics, provenance)."""
    from benchsage.execute.bisect.search import is_bisect, read_bisect

    if len(sources) == 1 and os.path.isdir(sources[0]) and is_bisect(sources[0]):
        from benchsage.analyze.bisect import summarize
        from benchsage.report.bisect import write_bisect_html

        click.echo(f"wrote {write_bisect_html(summarize(read_bisect(sources[0])), sources[0], out)}", err=True)
        return
    if out is None:
        raise UsageError("report: give -o FILE, the HTML file to write")
    analysis, table = _analyze(sources, fmt, _options(alpha, correction, ci_method, ci_level, ci_case_rule, no_diagnostics),
                               _treatments(claims, compare_method, ratio_ci))
    from benchsage.report.html import write_report

    write_report(analysis, table, out)
    click.echo(f"wrote {out}", err=True)


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=str))
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet", "jsonl"]), default="csv", show_default=True)
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=str), help="The file to write ('-' for stdout with csv/jsonl).")
def export(directory: str, fmt: str, out: str) -> None:
    """Write the tidy trial table of an experiment (one row per trial and metric)."""
    from benchsage.store.exporters import EXPORTERS
    from benchsage.store.exporters.tidy import tidy_table

    table = tidy_table(directory)
    if out == "-":
        if fmt == "parquet":
            raise UsageError("parquet cannot be written to stdout; give -o FILE")
        out = "/dev/stdout"
    EXPORTERS[fmt](table, out)
    if out != "/dev/stdout":
        click.echo(f"wrote {table.num_rows} rows to {out}", err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the readings as JSON.")
def env(as_json: bool) -> None:
    """Report this machine's sources of noise (governor, turbo, SMT, ASLR, load ...) with advice,
    and how trials are measured on it (cgroups, leftovers, energy, CPUs to pin to)."""
    from benchsage.agent.noise import collect_noise
    from benchsage.execute.measuring import describe_measurement, local_measurement
    from benchsage.report.environment import env_json, render_env

    readings = collect_noise()
    measurement = describe_measurement(*local_measurement())
    if as_json:
        click.echo(json.dumps(env_json(readings, measurement), indent=2))
        return
    from benchsage.report.terminal import make_console

    render_env(readings, make_console(), measurement)


cli.add_command(time_command)


def main(argv: Sequence[str] | None = None) -> None:
    PROGRAM.running = argv is None
    try:
        status = cli.main(args=list(argv) if argv is not None else None, prog_name="benchsage", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        _fail("aborted", 130)
    except click.ClickException as exc:
        _fail(exc.format_message().replace("\n", " "), exc.exit_code)
    except BenchsageError as exc:
        _fail(str(exc), exc.exit_status)
    except MemoryError:
        # What was being read needs more memory than this machine has (the analyses grow with
        # rows, so this is a file of many millions of rows): bad input for this machine.
        _fail("out of memory: the data is too large to read or analyse on this machine (its rows take more memory than there "
              "is); analyse a part of it, or on a machine with more memory", EXIT_BAD_INPUT)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(EXIT_OK)
    sys.exit(status if isinstance(status, int) else EXIT_OK)
