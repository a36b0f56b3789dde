"""From a trial table to an Analysis: test fixed vs random, explain, warn.

This is the one place that combines the order analysis, the diagnostics and the checks of
the environment snapshots; the CLI, the HTML report and the Python API all call it (through
benchsage.api, which loads the sources).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import numpy as np

from benchsage.analyze.options import Options
from benchsage.threads import in_thread, result_heard

if TYPE_CHECKING:
    from benchsage.analyze.sorted_values import ValueOrder
    from benchsage.analyze.treatments import TreatmentOptions
    from benchsage.analyze.verdict import Analysis, Diagnostics
    from benchsage.store.table import TrialTable

# The analysis's own modules (scipy among them, about 0.2 s of imports) are imported where they
# are used: the command line first starts reading a large file (api.analyze_sources_only), and
# they load in a second thread while pyarrow parses it.

_A = TypeVar("_A")
_B = TypeVar("_B")


def analyze_loaded(table: TrialTable, options: Options = Options(), treatments: TreatmentOptions | None = None) -> Analysis:
    """Analyse a table; an experiment's own alpha and correction apply unless overridden.
    With treatments, their analyses are added, and the order analysis examines the rows
    treatments.order_rows keeps (the lightest observer level)."""
    from benchsage.analyze.diagnostics import Parts
    from benchsage.analyze.measurement import rss_floor_notes
    from benchsage.analyze.notes import distinct
    from benchsage.analyze.order import analyze_table, count_runs
    from benchsage.analyze.rates import rate_shortfalls
    from benchsage.analyze.sorted_values import sort_values
    from benchsage.analyze.treatments import TreatmentOptions, analyze_treatments

    treatments = treatments if treatments is not None else TreatmentOptions()
    counts = {"values": len(table), "runs": count_runs(table.run)}
    prov = table.provenance
    alpha = options.alpha if options.alpha is not None else float(prov.get("alpha") or 0.05)
    correction = options.correction or str(prov.get("correction") or "bonferroni")
    treated = analyze_treatments(table, alpha=alpha, correction=correction, options=treatments)
    shortfalls = rate_shortfalls(table)  # every trial, whatever treatment it had
    table = treated.order_table
    # The order analysis and the diagnostics share one sort of the values. On a large table the
    # diagnostics' effects run in a thread while this one does the order analysis and the
    # design checks: numpy releases the GIL in its sorts, gathers and arithmetic (on two vCPUs
    # the paper-scale analysis after the sort took 0.33 s instead of 0.61 s).
    sorted_values = sort_values(table) if np.isfinite(table.value).all() else None

    def order_analysis() -> Analysis:
        return analyze_table(
            table,
            alpha=alpha,
            correction=correction,
            ci_method=options.ci_method,
            ci_level=options.ci_level,
            ci_case_rule=options.ci_case_rule,
            sorted_values=sorted_values,
        )

    diagnostics: Diagnostics | None = None
    parts = None
    if options.diagnostics:
        examined, examined_order = _diagnosed(table, sorted_values)
        parts = Parts(examined, alpha=alpha, correction=correction, sorted_values=examined_order)
    if parts is None or not parts.anything:
        analysis = order_analysis()
    elif len(table) >= PARALLEL_ROWS:
        (analysis, design), effects = _side_by_side(lambda: (order_analysis(), parts.design()), parts.effects)
        diagnostics = parts.combine(effects, design)
    else:
        analysis = order_analysis()
        diagnostics = parts.combine(parts.effects(), parts.design())
    tests, floor_warnings = rss_floor_notes(table, analysis.tests)
    analysis = dataclasses.replace(analysis, tests=tests)
    warnings = list(analysis.warnings) + floor_warnings + shortfalls
    if not analysis.fleet:
        warnings.extend(_snapshot_warnings(table))
    else:
        analysis, diagnostics, more = _fleet(table, analysis, diagnostics, options, alpha=alpha, correction=correction, sorted_values=sorted_values)
        warnings.extend(more)
    if diagnostics is not None and diagnostics.interleaving is not None and diagnostics.interleaving.interleaved is False:
        from benchsage.analyze.diagnostics.notes import NotInterleaved

        warnings.append(NotInterleaved(diagnostics.interleaving.detail))
    warnings.extend(treated.warnings)
    context_effects = treated.context_effects
    if context_effects:
        from benchsage.analyze.context_medians import with_context_medians

        context_effects = with_context_medians(context_effects, treated.order_table, options.ci_level, options.ci_method)
    from benchsage.analyze.failures import failed_tests, with_failed_rows

    return dataclasses.replace(
        analysis, tests=with_failed_rows(analysis.tests, table), failed_tests=failed_tests(table.outcomes),
        diagnostics=diagnostics, warnings=tuple(distinct(warnings)), comparisons=treated.comparisons,
        context_effects=context_effects, observer=treated.observer, factorial=treated.factorial,
        sequential=_sequential(prov), curves=_curves(treated.order_table, options, treatments, alpha, correction), **counts,
    )


def _curves(table: TrialTable, options: Options, treatments: TreatmentOptions, alpha: float, correction: str) -> Any:
    """The response curves of swept tests (analyze/curves.py), from the rows the order analysis
    examines; None without sweeps."""
    from benchsage.analyze.curves import curve_analysis

    return curve_analysis(table, alpha=alpha, correction=correction, ci_level=options.ci_level, ci_method=options.ci_method,
                          compare_method=treatments.compare_method, ratio_ci=treatments.ratio_ci)


def _sequential(provenance: Any) -> Any:
    """The looks of a sequential experiment; imported only then (scipy.optimize costs 0.1 s)."""
    if not provenance.get("sequential"):
        return None
    from benchsage.analyze.sequential import sequential_verdict

    return sequential_verdict(provenance)


def _fleet(
    table: TrialTable,
    analysis: Analysis,
    diagnostics: Diagnostics | None,
    options: Options,
    *,
    alpha: float,
    correction: str,
    sorted_values: ValueOrder | None,
) -> tuple[Analysis, Diagnostics | None, list[Any]]:
    """A fleet's additions: each worker's verdict, the identity and fleet diagnostics, and their
    warnings (differences between workers come from the identity diagnostic; the snapshot
    comparison keeps the changes between runs of one worker)."""
    from benchsage.analyze import fleet
    from benchsage.analyze.identity import identity_warnings
    from benchsage.analyze.strata import comparison_workers
    from benchsage.analyze.verdict import Diagnostics

    # Each worker ran its own tests (no comparison spans two workers): the per-worker rows are
    # the combined ones, corrected per worker, and there is nothing to compare across workers.
    owner = comparison_workers(table.worker, sorted_values) if sorted_values is not None else None
    workers = fleet.worker_verdicts(
        table, analysis, alpha=alpha, correction=correction, ci_method=options.ci_method, ci_level=options.ci_level,
        ci_case_rule=options.ci_case_rule, owner=owner,
    )
    workers = fleet.runs_and_boots(workers, table.provenance)
    identity = fleet.identity(table, [w.worker for w in workers])
    warnings = _snapshot_warnings(table, between_workers=False) + identity_warnings(identity)
    if options.diagnostics:
        rows = () if owner is not None else fleet.fleet_rows(table, alpha=alpha, correction=correction)
        warnings.extend(fleet.fleet_warnings(rows))
        base = diagnostics if diagnostics is not None else Diagnostics(interleaving=None)
        diagnostics = dataclasses.replace(base, fleet=rows, identity=identity)
    return dataclasses.replace(analysis, workers=workers), diagnostics, warnings


PARALLEL_ROWS = 200_000  # below this, a thread costs more than it saves


def _diagnosed(table: TrialTable, sorted_values: ValueOrder | None) -> tuple[TrialTable, ValueOrder | None]:
    """The table the diagnostics examine, and its shared sort.

    In a fleet whose workers ran the same tests, or with treatment cells (factor levels,
    contexts) that each test ran in, position effects, carry-over and trends compare values of
    different machines or cells: they examine the values with each block's level removed
    (analyze/strata.py), as the combined rows do, so that a slower machine or cell is not read
    as a slower position, predecessor or time.
    """
    from benchsage.analyze import strata
    from benchsage.analyze.cells import cell_dimensions, treatment_cells
    from benchsage.analyze.sorted_values import sort_values

    if strata.workers_present(table) <= 1 and not cell_dimensions(table):
        return table, sorted_values
    finite = np.isfinite(table.value)
    examined = table if finite.all() else table.select(finite)
    cells = treatment_cells(examined)
    blocks = strata.blocks(examined, cells)
    if not blocks.stratified:
        return table, sorted_values
    order = sorted_values if sorted_values is not None and sorted_values.fits(examined) else sort_values(examined)
    found = strata.stratify(examined, order, blocks)
    if found.single:
        return table, sorted_values
    return dataclasses.replace(examined, value=found.level_free), None


def _side_by_side(first: Callable[[], _A], second: Callable[[], _B]) -> tuple[_A, _B]:
    """first() here and second() in a thread at the same time; an exception of either is raised.
    Ctrl-C is heard while the second is waited for."""
    later = in_thread(second, name="benchsage-diagnostics")
    a = first()  # when it raises, the second is not waited for (the thread, a daemon, ends by itself)
    return a, result_heard(later)


def _snapshot_warnings(table: TrialTable, *, between_workers: bool = True) -> list[Any]:
    """The changes between the runs' environment snapshots (analyze/snapshots.py), and with
    between_workers the differences between workers too."""
    snapshots = table.provenance.get("snapshots")
    if not snapshots:
        return []
    from benchsage.analyze.snapshots import compare_snapshots

    workers = table.provenance.get("run_workers") or {}
    labelled = {f"{workers.get(run, 'local')}:run {int(run) + 1}": snap for run, snap in snapshots.items()}
    groups = None
    if "link_order" in (table.provenance.get("context_dimensions") or ()):
        # Each context rebuilds the programs in its link order: compare them within a context.
        contexts = table.provenance.get("run_contexts") or {}
        groups = {f"{workers.get(run, 'local')}:run {int(run) + 1}": f"context {contexts[run]}" for run in snapshots if run in contexts}
    return list(compare_snapshots(labelled, between_workers=between_workers, file_groups=groups))
