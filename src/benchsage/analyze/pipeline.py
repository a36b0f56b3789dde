"""From sources to an Analysis: load the trial table, test fixed vs random, explain, warn.

This is the one place that combines the order analysis, the diagnostics and the checks of
the environment snapshots; the CLI, the HTML report and the Python API all call it.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from benchsage.analyze.diagnostics import diagnose
from benchsage.analyze.options import Options
from benchsage.analyze.order import analyze_table, sort_values
from benchsage.analyze.verdict import Analysis
from benchsage.store.importers.detect import load_sources
from benchsage.store.table import TrialTable


def analyze_sources(sources: Sequence[str], *, format: str = "auto", options: Options = Options()) -> tuple[Analysis, TrialTable]:
    table = load_sources(list(sources), format=format)
    return analyze_loaded(table, options), table


def analyze_loaded(table: TrialTable, options: Options = Options()) -> Analysis:
    """Analyse a table; an experiment's own alpha and correction apply unless overridden."""
    prov = table.provenance
    alpha = options.alpha if options.alpha is not None else float(prov.get("alpha") or 0.05)
    correction = options.correction or str(prov.get("correction") or "bonferroni")
    # The order analysis and the diagnostics share one sort of the values. (Running the two in
    # threads gained nothing end to end on two cores: their temporaries then coexist, and the
    # page faults of the extra 250 MiB cost what the overlap saved.)
    sorted_values = sort_values(table) if np.isfinite(table.value).all() else None
    analysis = analyze_table(
        table,
        alpha=alpha,
        correction=correction,
        ci_method=options.ci_method,
        ci_level=options.ci_level,
        ci_case_rule=options.ci_case_rule,
        sorted_values=sorted_values,
    )
    diagnostics = diagnose(table, alpha=alpha, correction=correction, sorted_values=sorted_values) if options.diagnostics else None
    warnings = list(analysis.warnings)
    warnings.extend(_snapshot_warnings(table))
    if diagnostics is not None and diagnostics.interleaving is not None and diagnostics.interleaving.interleaved is False:
        warnings.append(f"the arms were not interleaved in time ({diagnostics.interleaving.detail}): drift over time can look like an order effect")
    return dataclasses.replace(analysis, diagnostics=diagnostics, warnings=tuple(dict.fromkeys(warnings)))


def _snapshot_warnings(table: TrialTable) -> list[str]:
    snapshots = table.provenance.get("snapshots")
    if not snapshots:
        return []
    from benchsage.report.environment import compare_snapshots

    workers = table.provenance.get("run_workers") or {}
    labelled = {f"{workers.get(run, 'local')}:run {int(run) + 1}": snap for run, snap in snapshots.items()}
    return list(compare_snapshots(labelled))
