"""The Python API for notebooks: load trials as a DataFrame, analyse, write the report.

    import benchsage
    trials = benchsage.load("results/quickstart-...")        # pandas DataFrame, one row per value
    result = benchsage.analyze("results/quickstart-...")     # Result
    result.tests                                              # DataFrame, one row per test and metric
    result.cells                                              # with factors or contexts: each cell's arms
    result.workers, result.diagnostics.fleet                  # a fleet: per-worker verdicts, workers compared
    result.diagnostics.identity                               # ... and whether they ran the same software
    result.comparisons, result.context_effects                # treatments: A vs B claims, measurement context,
    result.observer, result.factorial                         # instrumentation levels, 2^k factorial terms
    result.report("report.html")

Everything here calls the same pipeline as the command line; nothing is computed twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from benchsage.analyze.options import Options
from benchsage.errors import DataError
from benchsage.threads import result_heard

if TYPE_CHECKING:  # the analysis and its readers load where they are used: the command line imports this first
    from benchsage.analyze.treatments import TreatmentOptions
    from benchsage.analyze.verdict import Analysis, TestVerdict
    from benchsage.store.table import TrialTable

Source = str | os.PathLike[str]


def _paths(source: Source | list[Source] | tuple[Source, ...]) -> list[str]:
    if isinstance(source, (list, tuple)):
        return [os.fspath(s) for s in source]
    return [os.fspath(source)]


def analyze_sources(sources: Sequence[str], *, format: str = "auto", options: Options = Options(),
                    treatments: TreatmentOptions | None = None) -> tuple[Analysis, TrialTable]:
    """The trials of experiment directories or data files and their analysis."""
    from benchsage.store.importers.detect import load_sources

    table = load_sources(list(sources), format=format)
    if len(table) >= BATCH_TABLE_ROWS and not (treatments and treatments.compare):
        from benchsage.analyze.batched import analyze_compact, can_batch, compact_of

        trials = compact_of(table)
        if trials is not None and can_batch(trials):
            return analyze_compact(trials, options), table
    from benchsage.analyze.pipeline import analyze_loaded  # after the reading: see benchsage._runtime

    return analyze_loaded(table, options, treatments), table


# A table read from one tidy file with at least this many rows is analysed in batches of tests
# (analyze/batched.py), the same result as analyze_loaded's: the analysis's own temporaries
# (about 100 bytes a row at once) are then those of a batch, and the peak follows the table's
# columns (ten times the paper's dataset as test,order,value: 2.8 GiB in one piece, 1.0 in batches).
BATCH_TABLE_ROWS = 1_000_000


# A single tidy file at least this large is read block by block and analysed in batches of tests
# (analyze/batched.py): same result, a fraction of the memory, and from some tens of MiB on less
# time (a paper-scale file, 147 MiB: peak 0.35 GiB instead of 0.8); smaller files gain nothing.
STREAM_BYTES = 64 << 20


def analyze_sources_only(sources: Sequence[str], *, format: str = "auto", options: Options = Options(),
                         treatments: TreatmentOptions | None = None) -> Analysis:
    """analyze_sources' Analysis, for a caller that does not need the trial table: a large tidy
    file (STREAM_BYTES) is then analysed without holding its rows in memory as a table (unless
    comparisons are asked for: they need the table)."""
    if len(sources) == 1 and not (treatments and treatments.compare) and _large_tidy(sources[0], format):
        analysis = analyze_tidy_file(sources[0], options)
        if analysis is not None:
            return analysis
    return analyze_sources(sources, format=format, options=options, treatments=treatments)[0]


def analyze_tidy_file(path: str, options: Options = Options(), *, block_bytes: int | None = None, batch_rows: int | None = None) -> Analysis | None:
    """A tidy file read block by block and analysed in batches (analyze/batched.py), or None
    when the file is one to read in memory (tidy_stream.stream_tidy, batched.can_batch); the
    Analysis is analyze_loaded's.

    The batched analysis's modules are imported in a second thread while this one reads the
    file: pyarrow parses with the GIL released, so on the paper-scale file those 0.2 s of
    imports no longer come before the reading. This thread imports nothing until that thread
    is done (two threads importing modules that import each other could deadlock).
    """
    from benchsage._runtime import import_in_background
    from benchsage.store.importers.tidy_stream import BLOCK_BYTES, stream_tidy

    importing = import_in_background("benchsage.analyze.batched")
    try:
        trials = stream_tidy(path, block_bytes=block_bytes or BLOCK_BYTES)
    finally:
        result_heard(importing)
    from benchsage.analyze.batched import BATCH_ROWS, analyze_compact, can_batch

    if trials is None or not can_batch(trials):
        return None
    return analyze_compact(trials, options, batch_rows=batch_rows or BATCH_ROWS)


def _large_tidy(source: str, format: str) -> bool:
    from benchsage.store.importers.detect import detect_format

    path = Path(source)
    if format not in ("auto", "tidy") or not path.is_file() or path.stat().st_size < STREAM_BYTES:
        return False
    try:
        return format == "tidy" or detect_format(path).name == "tidy"
    except DataError:  # the in-memory reader words it
        return False


def load(source: Source | list[Source], *, format: str = "auto") -> Any:
    """The trials of an experiment directory or data file(s) as a pandas DataFrame (tidy: one
    row per analysed trial and metric; columns test, arm, metric, value, run, position,
    predecessor, worker, time, primary)."""
    from benchsage.store.importers.detect import load_sources

    return load_sources(_paths(source), format=format).to_pandas()


def analyze(
    source: Source | list[Source],
    *,
    format: str = "auto",
    alpha: float | None = None,
    correction: str | None = None,
    ci_method: str = "exact-binomial",
    ci_level: float = 0.95,
    ci_case_rule: str = "paper",
    diagnostics: bool = True,
    compare: list[tuple[str, ...]] | tuple[tuple[str, ...], ...] = (),
    compare_method: str = "mann-whitney",
    ratio_ci: str = "bonett-price",
) -> "Result":
    """Analyse an experiment directory or data file(s), as `benchsage analyze` does.

    compare: claims (a, b) or (a, b, metric) to check besides the spec's [[compare]], as
    `--compare A,B[,METRIC]`; compare_method and ratio_ci as --compare-method and --ratio-ci.
    """
    from benchsage.analyze.pipeline import analyze_loaded
    from benchsage.analyze.treatments import CompareRequest, TreatmentOptions
    from benchsage.store.importers.detect import load_sources

    table = load_sources(_paths(source), format=format)
    options = Options(alpha=alpha, correction=correction, ci_method=ci_method, ci_level=ci_level, ci_case_rule=ci_case_rule, diagnostics=diagnostics)
    claims = tuple(CompareRequest(*claim, where="compare=") for claim in compare)
    return Result(analyze_loaded(table, options, TreatmentOptions(claims, compare_method, ratio_ci)), table)


def plan(spec_path: Source, *, runs: int | None = None, seed: int | None = None, pilot: Source | None = None,
         effect: float | None = None) -> dict[str, Any]:
    """What `benchsage plan` prints (its --json): the plan of the experiment in `spec_path`,
    its expected duration (from an earlier experiment of the same spec under results/, if
    any), and with `pilot`, the runs per arm each test needs to detect an order effect of
    `effect` percent (default: the spec's min_effect) with 80% power."""
    from benchsage.spec import load_spec

    spec = load_spec(os.fspath(spec_path))  # a bad spec is said before the planning machinery (scipy) is loaded
    from benchsage.design.estimate import describe_plan
    from benchsage.execute.deploy import read_source
    from benchsage.store.durations import earlier_run_seconds

    source = read_source(spec, planning=True)
    advice = _advise(spec, os.fspath(pilot), effect) if pilot is not None else None
    doc = describe_plan(spec, runs=runs, seed=seed, measured=earlier_run_seconds(spec.digest, len(spec.tests)),
                        deploy=source.describe() if source is not None else None)
    if source is not None and source.refusal:
        doc["run_checks"].append(f"{source.refusal}: `run` refuses to start until then")
    if advice is not None:
        doc["advice"] = advice.to_json()
        doc["advice_summary"] = advice.summary_json()
    return doc


def carry_out(spec_path: Source, directory: Source, *, runs: int | None = None, seed: int | None = None, quiet: bool = False,
              ignore_failures: bool = False, text: str | None = None) -> None:
    """Plan the experiment in `spec_path` (`runs` per arm and `seed`, else the spec's) and carry it
    out into the new experiment directory `directory`, as `benchsage run` does before it
    analyses; progress on stderr unless `quiet`. A test that fails in each of its first trials
    stops it (errors.TestsFailed, exit status 4) unless `ignore_failures`. `text`: the spec's
    TOML when there is no such file (`benchsage time`: the spec of its command line, placed at
    `spec_path`, whose folder the tests run in)."""
    from benchsage.spec import load_spec

    spec = load_spec(os.fspath(spec_path), text=text)  # a bad spec is said before the planning machinery (scipy) is loaded
    from benchsage.design.experiment import plan_experiment
    from benchsage.execute.session import run_experiment

    run_experiment(spec, lambda s: plan_experiment(s, runs=runs, seed=seed), os.fspath(directory), quiet=quiet,
                   stop_on_failure=not ignore_failures)


def release(directory: Source, *, yes: bool = False) -> list[str]:
    """`benchsage release DIR`: free the hosts the experiment in `directory` still holds (after
    a crash of the controller), as its journal records them; one line per allocation freed.
    A recorded release command that the spec at the recorded path does not confirm is refused
    (UsageError, exit 2, nothing run) unless `yes` (execute/release.py)."""
    from benchsage.execute.release import release_directory

    return release_directory(os.fspath(directory), yes=yes)


def _advise(spec: Any, pilot: str, effect: float | None) -> Any:
    from benchsage.design.advice import PilotTimes, advise
    from benchsage.store.durations import run_times

    if not os.path.exists(pilot):
        raise DataError(f"--pilot {pilot}: no such experiment directory or data file")
    from benchsage.store.importers.detect import load_sources

    table = load_sources([pilot])
    times = run_times(pilot)
    return advise(spec, table, None if times is None else PilotTimes(times.run_seconds, times.reset_seconds, times.trial_seconds),
                  pilot, effect=effect)


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


@dataclass(frozen=True)
class Diagnostics:
    """Where an order effect comes from, as DataFrames."""

    analysis: Analysis

    def _rows(self, name: str) -> Any:
        d = self.analysis.diagnostics
        items = getattr(d, name) if d is not None else ()
        from benchsage.analyze import verdict

        kind = {"position_effects": verdict.PositionEffect, "carryover": verdict.Carryover, "trends": verdict.Trend}[name]
        return _frame([dict(vars(x)) for x in items], list(kind.__dataclass_fields__))

    @property
    def position_effects(self) -> Any:
        return self._rows("position_effects")

    @property
    def carryover(self) -> Any:
        return self._rows("carryover")

    @property
    def trends(self) -> Any:
        return self._rows("trends")

    @property
    def interleaving(self) -> dict[str, Any] | None:
        """Whether the arms were interleaved in time: the JSON's diagnostics.interleaving."""
        from benchsage.report.json import said_record

        d = self.analysis.diagnostics
        return said_record(d.interleaving) if d is not None and d.interleaving is not None else None

    @property
    def carryover_balance(self) -> dict[str, Any] | None:
        """Whether the random arm's carry-over is balanced: the JSON's diagnostics.carryover_balance."""
        from benchsage.report.json import said_record

        d = self.analysis.diagnostics
        return said_record(d.carryover_balance) if d is not None and d.carryover_balance is not None else None

    @property
    def fleet(self) -> Any:
        """A fleet's workers compared, one row per test and metric (medians and n: dicts by worker)."""
        from benchsage.analyze.verdict import FleetRow

        d = self.analysis.diagnostics
        rows = [dict(vars(r)) for r in (d.fleet or ())] if d is not None else []
        for row in rows:
            row["medians"], row["n"], row["outliers"] = dict(row["medians"]), dict(row["n"]), list(row["outliers"])
        return _frame(rows, list(FleetRow.__dataclass_fields__))

    @property
    def identity(self) -> dict[str, Any] | None:
        """Whether a fleet's workers ran the same software: the JSON's diagnostics.identity."""
        from benchsage.report.json import identity_json

        d = self.analysis.diagnostics
        return identity_json(d.identity) if d is not None and d.identity is not None else None


@dataclass(frozen=True)
class Result:
    """An analysis and the trials it came from."""

    analysis: Analysis
    table: TrialTable

    @property
    def order_matters(self) -> bool:
        return self.analysis.order_matters

    @property
    def verdict(self) -> str:
        from benchsage.report.words import verdict_sentence

        return verdict_sentence(self.analysis)

    @property
    def answer(self) -> str:
        """The verdict in one word: "order-matters", "no-effect", "undetectable" or "tests-failed"
        (the JSON's "verdict")."""
        return self.analysis.verdict

    @property
    def failed_tests(self) -> Any:
        """One row per test with trials that did not succeed: test, failed, trials, statuses
        (a dict by status), reason and output_tail (the JSON's "failed_tests")."""
        from benchsage.report.json import failed_json

        columns = ["test", "failed", "trials", "statuses", "reason", "output_tail"]
        return _frame([failed_json(f) for f in self.analysis.failed_tests], columns)

    @property
    def verdicts(self) -> tuple[TestVerdict, ...]:
        return self.analysis.tests

    @property
    def tests(self) -> Any:
        """One row per test and metric: the columns of the analysis JSON's "tests"."""
        return _tests_frame(self.analysis.tests)

    @property
    def combined(self) -> dict[str, Any] | None:
        """For a fleet or treatment cells: how the rows of `tests` combine them (the numbers of
        workers and cells, the method); None when the rows pool every value."""
        c = self.analysis.combined
        return {"workers": c.workers, "cells": c.cells, "method": c.method} if c is not None else None

    @property
    def workers(self) -> Any:
        """For a fleet, each worker's own verdict: one row per worker, test and metric (the
        columns of `tests` after `worker` and `worker_order_matters`); empty for one worker."""
        frames = []
        for w in self.analysis.workers:
            frame = _tests_frame(w.tests)
            frame.insert(0, "worker_order_matters", w.order_matters)
            frame.insert(0, "worker", w.worker)
            frames.append(frame)
        if not frames:
            empty = _tests_frame(())
            empty.insert(0, "worker_order_matters", [])
            empty.insert(0, "worker", [])
            return empty
        import pandas as pd

        return pd.concat(frames, ignore_index=True)

    @property
    def cells(self) -> Any:
        """With factors or contexts, each test's arms in each treatment cell: one row per test,
        metric and cell (a column per dimension: a factor by its name, "context"), the JSON's
        tests[].cells with the intervals as ci_fixed_low, ...; empty without cells."""
        rows, dims = [], {}
        for v in self.analysis.tests:
            for c in v.cells or ():
                dims.update(dict.fromkeys(d for d, _ in c.cell))
                rows.append({"test": v.test, "metric": v.metric, **dict(c.cell), "n_fixed": c.n_fixed, "n_random": c.n_random,
                             "median_fixed": c.median_fixed, "ci_fixed_low": (c.ci_fixed or (None, None))[0],
                             "ci_fixed_high": (c.ci_fixed or (None, None))[1], "median_random": c.median_random,
                             "ci_random_low": (c.ci_random or (None, None))[0], "ci_random_high": (c.ci_random or (None, None))[1]})
        return _frame(rows, ["test", "metric", *dims, "n_fixed", "n_random", "median_fixed", "ci_fixed_low", "ci_fixed_high",
                             "median_random", "ci_random_low", "ci_random_high"])

    @property
    def sequential(self) -> dict[str, Any] | None:
        """A sequential experiment's looks, the JSON's "sequential" object, with each test's
        decision under "decisions" (rows of test, metric, decided, decided_at_runs); None for
        an experiment of a fixed number of runs."""
        s = self.analysis.sequential
        if s is None:
            return None
        decisions = [{"test": v.test, "metric": v.metric, **s.row(v.test, v.metric)} for v in self.analysis.tests if v.primary]
        return {**s.summary, "decisions": decisions}

    @property
    def diagnostics(self) -> Diagnostics:
        return Diagnostics(self.analysis)

    @property
    def comparisons(self) -> Any:
        """The A vs B claims, one row per claim: the JSON's "comparisons" with the interval as
        ci_low/ci_high, holds_in as holds_fixed/holds_random, contexts as contexts_n, ... and
        on a fleet workers as workers_n, workers_a_better, ..."""
        return _treatment_frame(self.analysis.comparisons, "comparisons", ["arms", "per_context", "per_worker", "per_factor_cell"])

    @property
    def context_effects(self) -> Any:
        """One row per test and primary metric: the JSON's "context_effects", a by_NAME column
        per context dimension."""
        return _treatment_frame(self.analysis.context_effects, "context_effects", ["by_detail", "medians", "n"])

    @property
    def observer(self) -> Any:
        """One row per test, metric and instrumentation level: the JSON's "observer"."""
        return _treatment_frame(self.analysis.observer, "observer", [])

    @property
    def factorial(self) -> Any:
        """One row per test, metric and term (the error last): effect, ci_low, ci_high, variation_pct."""
        from benchsage.report.treatments_json import factorial_json

        rows = []
        for f in self.analysis.factorial or ():
            for term in factorial_json(f)["terms"]:
                low, high = term.get("ci") or (None, None)
                rows.append({"test": f.test, "metric": f.metric, "term": term["term"], "effect": term.get("effect"),
                             "ci_low": low, "ci_high": high, "variation_pct": term["variation_pct"]})
        return _frame(rows, ["test", "metric", "term", "effect", "ci_low", "ci_high", "variation_pct"])

    @property
    def warnings(self) -> tuple[str, ...]:
        """The warnings of the analysis in words, each once: the JSON's warnings."""
        from benchsage.report.words import said

        return tuple(said(self.analysis.warnings, once=True))

    @property
    def trials(self) -> Any:
        return self.table.to_pandas()

    def to_json(self) -> dict[str, Any]:
        from benchsage.report.json import analysis_json

        return analysis_json(self.analysis)

    def report(self, path: Source) -> str:
        """Write the self-contained HTML report; returns its path."""
        from benchsage.report.html import write_report

        write_report(self.analysis, self.table, path)
        return os.fspath(path)

    def __repr__(self) -> str:
        return f"<benchsage.Result: {self.verdict}>"

    def _repr_html_(self) -> str:
        import html

        return f"<p>{html.escape(self.verdict)}</p>" + self.tests.to_html(index=False)


def _treatment_frame(rows: Any, kind: str, drop: list[str]) -> Any:
    """Treatment rows of a `kind` ("comparisons", ...) as a DataFrame of their JSON: intervals
    split into ci_low and ci_high, small dicts flattened into prefixed columns (holds_in ->
    holds_fixed, by -> by_env_bytes), the nested detail in `drop` left to the JSON."""
    from benchsage.report.treatments_json import TREATMENT_JSON

    records = []
    for row in rows or ():
        record: dict[str, Any] = {}
        for key, value in TREATMENT_JSON[kind](row).items():
            if key in drop:
                continue
            if key == "ci":
                record["ci_low"], record["ci_high"] = value or (None, None)
            elif isinstance(value, dict):
                prefix = {"holds_in": "holds"}.get(key, key)
                record.update({f"{prefix}_{k}": v for k, v in value.items()})
            else:
                record[key] = value
        records.append(record)
    import pandas as pd

    return pd.DataFrame(records)


def _tests_frame(verdicts: Any) -> Any:
    """Rows of TestVerdicts as a DataFrame, CIs split into low and high columns."""
    from benchsage.analyze.verdict import TestVerdict
    from benchsage.report.words import said

    rows = []
    for v in verdicts:
        row = dict(vars(v))
        row["ci_fixed_low"], row["ci_fixed_high"] = v.ci_fixed or (None, None)
        row["ci_random_low"], row["ci_random_high"] = v.ci_random or (None, None)
        del row["ci_fixed"], row["ci_random"]
        row["notes"] = "; ".join(said(v.notes))
        rows.append(row)
    # A row's cells are rows of their own (Result.cells).
    columns = [c for c in TestVerdict.__dataclass_fields__ if c not in ("ci_fixed", "ci_random", "cells")]
    columns[columns.index("median_fixed") + 1 : columns.index("median_fixed") + 1] = ["ci_fixed_low", "ci_fixed_high"]
    columns[columns.index("median_random") + 1 : columns.index("median_random") + 1] = ["ci_random_low", "ci_random_high"]
    return _frame(rows, columns)
