"""The analysis of a large tidy file in batches of tests, with the same result as analyze_loaded.

Every statistic of the order analysis and of the diagnostics belongs to one (test, metric):
only the family-wise corrections, the position bins, the run start times, the interleaving and
the pooled "(all tests)" position comparisons look across tests. So the compact rows of a file
(store/importers/tidy_stream.py) are analysed a few hundred thousand rows at a time, each batch
a range of tests given to the same functions the in-memory analysis uses, while what looks
across tests is computed once: the bins and run starts before the batches, the interleaving from
one row per run, the corrections and the pooled comparisons after them. Peak memory is then the
compact rows plus one batch's work, instead of several copies of every row.

Rows of one test keep their file order within the batch, so sums come out bit for bit the same;
the pooled comparisons sum half-integer ranks (exact in any order) and take order statistics;
the carry-over balance counts cells of one test each, so its tally adds up over the batches.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from benchsage import __version__
from benchsage.analyze import diagnostics as diag
from benchsage.analyze.options import Options
from benchsage.analyze.order import analyze_table, sort_values
from benchsage.analyze.verdict import Analysis, Combined, Diagnostics, TestVerdict, WorkerVerdicts
from benchsage.store.importers.tidy_stream import CompactTrials
from benchsage.store.table import TrialTable

BATCH_ROWS = 600_000  # rows analysed at a time: the work of one batch stays near 100 MiB
# The Diagnostics fields this module fills; a field added to Diagnostics later must be added
# here too, or analyses that need it are done in memory (can_batch).
FILLED = frozenset({"interleaving", "position_effects", "carryover", "trends", "workers", "fleet", "identity", "carryover_balance"})


def can_batch(trials: CompactTrials) -> bool:
    """Whether the batched analysis gives analyze_loaded's result for these rows: every
    (test, metric) measured on one worker (a fleet whose workers ran their own tests, or one
    worker), and no diagnostic this module does not compute."""
    if {f.name for f in dataclasses.fields(Diagnostics)} - FILLED:
        return False
    return len(trials.worker_names) <= 1 or trials.comparisons_on_one_worker


def analyze_compact(trials: CompactTrials, options: Options = Options(), *, batch_rows: int = BATCH_ROWS) -> Analysis:
    """The analysis of compact rows (can_batch must hold), as analyze_loaded(read_tidy(file))."""
    alpha = options.alpha if options.alpha is not None else 0.05
    correction = options.correction or "bonferroni"
    present = np.flatnonzero(np.bincount(trials.run_worker[trials.run_analysed], minlength=len(trials.worker_names))).tolist()
    n_workers = len(present)
    fleet = n_workers > 1

    bins = _bins(trials) if options.diagnostics else None
    starts = trials.run_start
    verdicts: list[TestVerdict] = []
    notes: list[str] = []
    owner_parts: list[np.ndarray] = []
    position_parts: list[Any] = []
    carry_parts: list[Any] = []
    trend_parts: list[tuple[np.ndarray, ...]] = []
    pooled: list[tuple[np.ndarray, ...]] = []
    balance = diag.BalanceTally(len(trials.test_names), len(trials.worker_names))
    for table in _batches(trials, batch_rows):
        sv = sort_values(table)
        batch = analyze_table(table, alpha=alpha, correction=correction, ci_method=options.ci_method, ci_level=options.ci_level,
                              ci_case_rule=options.ci_case_rule, sorted_values=sv)
        verdicts.extend(batch.tests)
        notes.extend(batch.warnings)
        if fleet:
            owner_parts.append(_owners(table, sv))
        if options.diagnostics:
            from benchsage.analyze.pipeline import _diagnosed

            examined, examined_order = _diagnosed(table, sv)
            parts = diag.Parts(examined, alpha=alpha, correction=correction, sorted_values=examined_order)
            t, comp, comp_test, comp_metric = parts.examined, parts.comp, parts.comp_test, parts.comp_metric
            ranked = diag._RankCache(t.value, comp, len(comp_test), parts.by_value)
            found = diag._position_parts(t, comp, comp_test, comp_metric, parts.min_values, ranked, bins=bins, pooled=pooled)
            if found is not None:
                position_parts.extend(found[0])
            carry = diag._carryover_part(t, comp, comp_test, comp_metric, parts.min_values, ranked)
            if carry is not None:
                carry_parts.append(carry)
            trend = diag._trend_part(t, starts, comp, comp_test, comp_metric, alpha, correction, parts.min_values, parts.by_value)
            if trend is not None:
                trend_parts.append(trend)
            balance.add(t, comp, comp_test)
        del table, sv, batch

    from benchsage.analyze.fleet import recorrect

    tests, alpha_corrected, order_matters = recorrect(verdicts, correction, alpha)
    diagnostics = None
    if options.diagnostics:
        diagnostics = _diagnostics(trials, bins, position_parts, carry_parts, trend_parts, pooled, alpha, correction)
        # A tidy file records no plan, so no random_orders (as read_tidy's provenance).
        diagnostics = dataclasses.replace(diagnostics, carryover_balance=balance.result())
    warnings = list(trials.warnings) + notes
    combined = None
    workers: tuple[WorkerVerdicts, ...] = ()
    if fleet:
        from benchsage.analyze.identity import compare_workers, identity_warnings

        combined = Combined(workers=n_workers, method=_strata_method())
        owner = np.concatenate(owner_parts) if owner_parts else np.zeros(0, dtype=np.int64)
        workers = _worker_verdicts(tests, owner, present, trials.worker_names, alpha, correction)
        identity = compare_workers({}, {}, [trials.worker_names[w] for w in present])
        warnings.extend(identity_warnings(identity))
        if options.diagnostics:
            base = diagnostics if diagnostics is not None else Diagnostics(interleaving=None)
            diagnostics = dataclasses.replace(base, fleet=(), identity=identity)
    if diagnostics is not None and diagnostics.interleaving is not None and diagnostics.interleaving.interleaved is False:
        warnings.append(f"the arms were not interleaved in time ({diagnostics.interleaving.detail}): drift over time can look like an order effect")
    return Analysis(
        tool_version=__version__,
        alpha=float(alpha),
        correction=correction,
        alpha_corrected=alpha_corrected,
        ci_method=options.ci_method,
        ci_level=float(options.ci_level),
        ci_case_rule=options.ci_case_rule,
        order_matters=order_matters,
        tests=tests,
        warnings=tuple(dict.fromkeys(warnings)),
        diagnostics=diagnostics,
        sources=(str(trials.path),),
        excluded=int(trials.excluded),
        provenance={"format": "tidy"},
        combined=combined,
        workers=workers,
    )


def _strata_method() -> str:
    from benchsage.analyze.strata import METHOD

    return METHOD


def _bins(trials: CompactTrials) -> Any:
    """The position bins of the whole file's random-arm rows (diagnostics.position_bins)."""
    if trials.positions == 0:  # no random-arm rows (every row has a position: tidy_stream reads no other files)
        return None
    return diag.bins_for(trials.positions, trials.random_per_comparison, 5)


def _batches(trials: CompactTrials, batch_rows: int) -> Any:
    """TrialTables of consecutive ranges of test codes, about batch_rows rows each."""
    n_tests = len(trials.test_names)
    bounds = [0]
    total = 0
    for t, k in enumerate(trials.rows_per_test.tolist()):
        if total and total + k > batch_rows:
            bounds.append(t)
            total = 0
        total += k
    bounds.append(n_tests)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        rows = np.flatnonzero((trials.test >= lo) & (trials.test < hi))
        if len(rows) == 0:
            continue
        yield _table(trials, rows)


def _table(trials: CompactTrials, rows: np.ndarray) -> TrialTable:
    n = len(rows)
    run = trials.run[rows].astype(np.int64)
    # A row's arm and worker are its run's.
    return TrialTable(
        test_names=trials.test_names,
        metric_names=trials.metric_names,
        worker_names=trials.worker_names,
        test=trials.test[rows].astype(np.int32),
        metric=trials.metric[rows].astype(np.int32) if trials.metric is not None else np.zeros(n, dtype=np.int32),
        arm=trials.run_arm[run],
        value=trials.value[rows],
        run=run,
        position=trials.position[rows].astype(np.int32),
        predecessor=trials.predecessor[rows].astype(np.int32),
        worker=trials.run_worker[run],
        # The analysis reads start times per run (trials.run_start); every row has a run.
        time=trials.run_start[run],
        primary=np.ones(n, dtype=bool),
        sources=(str(trials.path),),
        provenance={"format": "tidy"},
    )


def _owners(table: TrialTable, sv: Any) -> np.ndarray:
    from benchsage.analyze.strata import comparison_workers

    owner = comparison_workers(table.worker, sv)
    if owner is None:  # can_batch rules this out
        raise ValueError("a comparison has values from more than one worker: analyse the table in memory")
    return owner


def _worker_verdicts(tests: Sequence[TestVerdict], owner: np.ndarray, present: list[int], worker_names: Sequence[str], alpha: float,
                     correction: str) -> tuple[WorkerVerdicts, ...]:
    """fleet.worker_verdicts for a fleet whose workers ran their own tests."""
    from benchsage.analyze.fleet import recorrect

    by_worker: dict[int, list[TestVerdict]] = {}
    for v, w in zip(tests, owner.tolist()):
        by_worker.setdefault(w, []).append(v)
    out = []
    for w in present:
        rows, alpha_corrected, matters = recorrect(by_worker.get(w, []), correction, alpha)
        out.append(WorkerVerdicts(worker_names[w], matters, alpha_corrected, rows))
    return tuple(out)


def _diagnostics(trials: CompactTrials, bins: Any, position_parts: list[Any], carry_parts: list[Any], trend_parts: list[tuple[np.ndarray, ...]],
                 pooled: list[tuple[np.ndarray, ...]], alpha: float, correction: str) -> Diagnostics:
    test_names, metric_names = trials.test_names, trials.metric_names
    analysed = np.flatnonzero(trials.run_analysed)
    interleaving = None
    if len(analysed):
        interleaving = diag.interleaving_of_runs(trials.run_arm[analysed].astype(np.int64), trials.run_worker[analysed], trials.run_start[analysed],
                                                 trials.worker_names, alpha)
    positions: Sequence[Any] = ()
    if position_parts:
        parts = [diag.concat_parts(position_parts)]
        if pooled:
            percentile, ratio, metric, b = (np.concatenate([p[i] for p in pooled]) for i in range(4))
            pooled.clear()
            parts.append(diag.pooled_part(percentile, ratio, metric, b, max(len(metric_names), 1), len(bins.first), 5))
        positions = diag._position_rows(parts, bins, test_names, metric_names, alpha, correction)
    carry: Sequence[Any] = ()
    if carry_parts:
        carry = diag._carryover_rows(diag.concat_parts(carry_parts), test_names, metric_names, alpha, correction)
    trends: Sequence[Any] = ()
    if trend_parts:
        joined = tuple(np.concatenate([t[i] for t in trend_parts]) for i in range(6))
        trends = diag._trend_rows(joined, test_names, metric_names, alpha, correction)
    return Diagnostics(interleaving=interleaving, position_effects=positions, carryover=carry, trends=trends)


def analyze_tidy_file(path: str, options: Options = Options(), *, block_bytes: int | None = None, batch_rows: int = BATCH_ROWS) -> Analysis | None:
    """A tidy file read block by block and analysed in batches, or None when the file is one
    to read in memory (tidy_stream.stream_tidy, can_batch); the Analysis is analyze_loaded's."""
    from benchsage.store.importers.tidy_stream import BLOCK_BYTES, stream_tidy

    trials = stream_tidy(path, block_bytes=block_bytes or BLOCK_BYTES)
    if trials is None or not can_batch(trials):
        return None
    return analyze_compact(trials, options, batch_rows=batch_rows)
