"""The analysis of a large tidy file in batches of tests, with the same result as analyze_loaded.

Every statistic of the order analysis and of the diagnostics belongs to one (test, metric):
only the family-wise corrections, the position bins, the run start times, the interleaving and
the pooled "(all tests)" position comparisons look across tests. So the compact rows of a file
(store/importers/tidy_stream.py) are analysed a few hundred thousand rows at a time, each batch
a range of tests given to the same functions the in-memory analysis uses, while what looks
across tests is computed once: the bins and run starts before the batches, the interleaving from
one row per run, the corrections and the pooled comparisons after them. Peak memory is then the
compact rows plus the work of two batches (one diagnosed in a second thread while the next is
analysed), instead of several copies of every row.

Rows of one test keep their file order within the batch, so sums come out bit for bit the same;
the pooled comparisons sum half-integer ranks (exact in any order) and take order statistics;
the carry-over balance counts cells of one test each, so its tally adds up over the batches.
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from benchsage.analyze.diagnostics import BalanceTally, Parts
from benchsage.analyze.diagnostics.carryover import carryover_part, carryover_rows
from benchsage.analyze.diagnostics.interleaving import interleaving_of_runs
from benchsage.analyze.diagnostics.notes import NotInterleaved
from benchsage.analyze.diagnostics.one_vs_rest import concat_parts
from benchsage.analyze.diagnostics.position import bins_for, pooled_part, position_parts, position_rows
from benchsage.analyze.diagnostics.trends import trend_part, trend_rows
from benchsage.analyze.effects import SIZE_FIELDS, EffectOptions, family_sizes, rows_within_budget
from benchsage.analyze.notes import distinct
from benchsage.analyze.options import Options
from benchsage.analyze.order import analyze_table
from benchsage.analyze.sorted_values import ValueOrder, comparison_codes, sort_values
from benchsage.analyze.verdict import Analysis, Combined, Diagnostics, TestVerdict, WorkerVerdicts
from benchsage.store.importers.tidy_stream import CompactTrials
from benchsage.store.table import NO_PREDECESSOR_INFO, RANDOM_CODE, UNKNOWN, TrialTable, is_constant
from benchsage.vocabulary import VERSION

BATCH_ROWS = 100_000  # rows analysed at a time: the work of two batches (one diagnosed, one analysed) fits in what reading the file freed
SCAN_ROWS = 2_400_000  # rows of the batches that one scan of the file's rows finds (10 MiB of row numbers)
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


def compact_of(table: TrialTable) -> CompactTrials | None:
    """The rows of a table read_tidy made from one file as CompactTrials (views of its columns,
    per-run facts computed), for the batched analysis of a table already in memory; None where
    stream_tidy would not read the file so (treatments, a position or a run in some rows only, a
    run of two arms or on two workers), as then only analyze_loaded is known to give the result."""
    if table.provenance.get("format") != "tidy" or len(table.sources) != 1 or table.dims or len(table) == 0:
        return None
    metrics = len(table.metric_names)
    if not (is_constant(table.primary) and bool(table.primary[0])) or int(table.metric.max()) >= metrics:
        return None
    run = _all_or_none(table.run)
    position = _all_or_none(table.position)
    if run is False or position is False:
        return None
    random = table.arm == RANDOM_CODE
    per_run = dict(run_start=np.zeros(0), run_arm=np.zeros(0, dtype=np.int8), run_worker=np.zeros(0, dtype=np.int32))
    if run is not None:
        found = _per_run(table)
        if found is None:
            return None
        per_run = found
    comparison, combos = comparison_codes(table.test.astype(np.int64) * metrics + table.metric, len(table.test_names) * metrics)
    owner = np.full(len(combos), -1, dtype=np.int64)
    owner[comparison] = table.worker
    return CompactTrials(
        path=Path(table.sources[0]),
        test_names=table.test_names,
        metric_names=table.metric_names,
        worker_names=table.worker_names,
        test=table.test,
        metric=None if metrics == 1 else table.metric,
        value=table.value,
        run=run,
        position=position,
        predecessor=table.predecessor if run is not None and position is not None else None,
        **per_run,
        run_analysed=per_run["run_arm"] >= 0,
        rows_per_test=np.bincount(table.test, minlength=len(table.test_names)),
        random_per_comparison=np.bincount(comparison[random], minlength=len(owner)),
        positions=int(table.position[random].max()) + 1 if position is not None and random.any() else 0,
        comparisons_on_one_worker=bool(np.array_equal(owner[comparison], table.worker)),
        has_time=not is_constant(table.time),
        excluded=table.excluded,
        warnings=table.warnings,
        row_arm=table.arm if run is None else None,
        row_worker=table.worker if run is None and len(table.worker_names) > 1 else None,
        row_time=None if run is not None or is_constant(table.time) else table.time,
    )


def _all_or_none(column: np.ndarray) -> np.ndarray | bool | None:
    """The column when every row knows it, None when none does, False when some do."""
    if is_constant(column) and column[0] < 0:
        return None
    known = column >= 0
    return column if known.all() else (None if not known.any() else False)


def _per_run(table: TrialTable) -> dict[str, np.ndarray] | None:
    """Each run's start (its rows' earliest finite time), arm and worker, as stream_tidy gives
    them; None when a run has rows of two arms or two workers."""
    size = int(table.run.max()) + 1
    first = np.full(size, len(table), dtype=np.int64)
    np.minimum.at(first, table.run, np.arange(len(table)))
    has = first < len(table)
    run_arm = np.full(size, -1, dtype=np.int8)
    run_arm[has] = table.arm[first[has]]
    run_worker = np.zeros(size, dtype=np.int32)
    run_worker[has] = table.worker[first[has]]
    if not (np.array_equal(run_arm[table.run], table.arm) and np.array_equal(run_worker[table.run], table.worker)):
        return None
    run_start = np.full(size, np.inf)
    timed = np.isfinite(table.time)
    np.minimum.at(run_start, table.run[timed], table.time[timed])
    return dict(run_start=np.where(np.isinf(run_start), np.nan, run_start), run_arm=run_arm, run_worker=run_worker)


def analyze_compact(trials: CompactTrials, options: Options = Options(), *, batch_rows: int = BATCH_ROWS) -> Analysis:
    """The analysis of compact rows (can_batch must hold), as analyze_loaded(read_tidy(file))."""
    alpha = options.alpha if options.alpha is not None else 0.05
    correction = options.correction or "bonferroni"
    present = _present(trials)
    n_workers = len(present)
    fleet = n_workers > 1
    # As diagnostics.Parts.anything: a table that knows no runs, positions or times has nothing to diagnose.
    diagnose = options.diagnostics and _anything(trials)

    bins = _bins(trials) if diagnose else None
    verdicts: list[TestVerdict] = []
    notes: list[Any] = []
    owner_parts: list[np.ndarray] = []
    found = _Found(trials, bins, alpha, correction)
    # Each batch's diagnostics run in a second thread (numpy releases the GIL) while this one
    # selects, sorts and analyses the next batch; the diagnostics still take the batches in order.
    # A batch's trends are computed by whichever thread has been less busy so far.
    with ThreadPoolExecutor(1, thread_name_prefix="benchsage-diagnostics") as second:
        diagnosing: Future[None] | None = None
        start = time.perf_counter()
        for index, table in enumerate(_batches(trials, batch_rows)):
            sv = sort_values(table)
            batch, owners = _order_analysis(table, sv, options, alpha, correction, fleet)
            verdicts.extend(batch.tests)
            notes.extend(batch.warnings)
            if owners is not None:
                owner_parts.append(owners)
            trends_here = diagnose and found.busy[0] < found.busy[1]
            if trends_here:
                found.add_trends(index, table, sv)
            found.busy[0] += time.perf_counter() - start
            if diagnosing is not None:
                diagnosing.result()
            start = time.perf_counter()
            if diagnose:
                diagnosing = second.submit(found.add, index, table, sv, not trends_here)
            del table, sv, batch
        if diagnosing is not None:
            diagnosing.result()

    from benchsage.analyze.fleet import recorrect

    tests, alpha_corrected, order_matters = recorrect(verdicts, correction, alpha)
    tests = _with_sizes(trials, tests, options, alpha, correction, batch_rows)
    diagnostics = None
    if diagnose:
        diagnostics = found.diagnostics()
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
        warnings.append(NotInterleaved(diagnostics.interleaving.detail))
    return Analysis(
        tool_version=VERSION,
        alpha=float(alpha),
        correction=correction,
        alpha_corrected=alpha_corrected,
        ci_method=options.ci_method,
        ci_level=float(options.ci_level),
        ci_case_rule=options.ci_case_rule,
        order_matters=order_matters,
        tests=tests,
        warnings=tuple(distinct(warnings)),
        diagnostics=diagnostics,
        sources=(str(trials.path),),
        excluded=int(trials.excluded),
        provenance={"format": "tidy"},
        combined=combined,
        workers=workers,
        values=int(trials.rows_per_test.sum()),
        runs=int(np.count_nonzero(trials.run_analysed)),
    )


def _order_analysis(table: TrialTable, sv: ValueOrder, options: Options, alpha: float, correction: str,
                    fleet: bool) -> tuple[Analysis, np.ndarray | None]:
    """One batch's order analysis, and in a fleet the worker of each of its comparisons. The
    rows' shifts and detectable shifts wait for _with_sizes: their level is the whole family's."""
    batch = analyze_table(table, alpha=alpha, correction=correction, ci_method=options.ci_method, ci_level=options.ci_level,
                          ci_case_rule=options.ci_case_rule, sorted_values=sv, effects=EffectOptions(shift=False, simulate=False))
    return batch, _owners(table, sv) if fleet else None


def _with_sizes(trials: CompactTrials, tests: tuple[TestVerdict, ...], options: Options, alpha: float, correction: str,
                batch_rows: int) -> tuple[TestVerdict, ...]:
    """The rows with their shifts and detectable shifts, as analyze_table gives them to the whole
    table at once: computed at the whole analysis's family sizes, in a second pass over the
    batches, when the whole analysis is within effects.within_budget (a file large enough to be
    analysed in batches seldom is: then these fields stay None, as they would in memory)."""
    shift, simulate = rows_within_budget(tests)
    if not (shift or simulate):
        return tests
    settings = EffectOptions(family_sizes=family_sizes(tests), shift=shift, simulate=simulate)
    sized: list[TestVerdict] = []
    for table in _batches(trials, batch_rows):
        sized.extend(analyze_table(table, alpha=alpha, correction=correction, ci_method=options.ci_method, ci_level=options.ci_level,
                                   ci_case_rule=options.ci_case_rule, effects=settings).tests)
    return tuple(dataclasses.replace(v, **{name: getattr(s, name) for name in SIZE_FIELDS}) for v, s in zip(tests, sized, strict=True))


def _present(trials: CompactTrials) -> list[int]:
    """The workers with analysed rows."""
    if trials.run is not None:
        worker = trials.run_worker[trials.run_analysed]
    elif trials.row_worker is not None:
        worker = trials.row_worker
    else:
        return [0]
    return np.flatnonzero(np.bincount(worker, minlength=len(trials.worker_names))).tolist()


def _anything(trials: CompactTrials) -> bool:
    """Whether the analysed rows know a run, a position or a start time (diagnostics.Parts.anything)."""
    if len(trials) == 0:
        return False
    if trials.run is not None or trials.position is not None:
        return True
    return trials.row_time is not None and bool(np.isfinite(trials.row_time).any())


def _strata_method() -> str:
    from benchsage.analyze.strata import METHOD

    return METHOD


def _bins(trials: CompactTrials) -> Any:
    """The position bins of the whole file's random-arm rows (diagnostics.position.position_bins)."""
    if trials.positions == 0:  # no random-arm rows, or no positions (a row has a position if any has: tidy_stream)
        return None
    return bins_for(trials.positions, trials.random_per_comparison, 5)


def _batches(trials: CompactTrials, batch_rows: int) -> Iterator[TrialTable]:
    """TrialTables of consecutive ranges of test codes, about batch_rows rows each, rows in file
    order. One scan of the file's rows finds those of several batches, about SCAN_ROWS rows (a
    scan costs as much as the analysis of a small batch), sorted by batch in 32-bit row numbers."""
    bounds = _bounds(trials.rows_per_test, batch_rows)
    # The batch of each test code, in 16 bits while it fits (numpy's stable sort is then a radix sort).
    of_test = np.repeat(np.arange(len(bounds) - 1, dtype=np.int16 if len(bounds) < 1 << 15 else np.int64), np.diff(bounds))
    rows_per_batch = np.add.reduceat(trials.rows_per_test, bounds[:-1])
    scans = _bounds(rows_per_batch, SCAN_ROWS)
    for first, last in zip(scans[:-1].tolist(), scans[1:].tolist()):
        rows = np.flatnonzero((trials.test >= bounds[first]) & (trials.test < bounds[last])).astype(np.int32)
        rows = rows[np.argsort(of_test[trials.test[rows]], kind="stable")]  # by batch, each in file order
        ends = np.cumsum(rows_per_batch[first:last])
        for start, end in zip((ends - rows_per_batch[first:last]).tolist(), ends.tolist()):
            if end > start:
                yield _table(trials, rows[start:end])
        del rows


def _bounds(rows_per_test: np.ndarray, batch_rows: int) -> np.ndarray:
    """The first test code of each batch, and the number of tests: batches of consecutive test
    codes of about batch_rows rows each (a test with more rows is a batch of its own). The same
    cut of batches (rows per batch) into the batches of each scan."""
    bounds = [0]
    total = 0
    for t, k in enumerate(rows_per_test.tolist()):
        if total and total + k > batch_rows:
            bounds.append(t)
            total = 0
        total += k
    bounds.append(len(rows_per_test))
    return np.array(bounds, dtype=np.int64)


def _table(trials: CompactTrials, rows: np.ndarray) -> TrialTable:
    n = len(rows)
    # A row's arm, worker and start are its run's (without runs, its own).
    return TrialTable(
        test_names=trials.test_names,
        metric_names=trials.metric_names,
        worker_names=trials.worker_names,
        test=trials.test[rows].astype(np.int32),
        metric=trials.metric[rows].astype(np.int32) if trials.metric is not None else np.zeros(n, dtype=np.int32),
        arm=trials.arm(rows),
        value=trials.value[rows],
        run=np.full(n, UNKNOWN, dtype=np.int64) if trials.run is None else trials.run[rows].astype(np.int64),
        position=np.full(n, UNKNOWN, dtype=np.int32) if trials.position is None else trials.position[rows].astype(np.int32),
        predecessor=(np.full(n, NO_PREDECESSOR_INFO, dtype=np.int32) if trials.predecessor is None
                     else trials.predecessor[rows].astype(np.int32)),
        worker=trials.worker(rows),
        # The analysis reads start times per run (trials.run_start) where rows have runs.
        time=trials.time(rows),
        primary=np.ones(n, dtype=bool),
        sources=(str(trials.path),),
        provenance={"format": "tidy"},
    )


def _owners(table: TrialTable, sv: ValueOrder) -> np.ndarray:
    """The worker of each comparison (numbered as sv.group): that of its first row, as every
    row of a comparison has the same worker (can_batch)."""
    counts = np.bincount(sv.group, minlength=len(sv.combos))
    owner = np.zeros(len(counts), dtype=np.int64)
    starts = np.cumsum(counts) - counts
    owner[counts > 0] = table.worker[sv.order[starts[counts > 0]]]
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


class _Found:
    """The diagnostics' comparisons of the batches so far, and the verdicts once all are in."""

    def __init__(self, trials: CompactTrials, bins: Any, alpha: float, correction: str) -> None:
        self.trials, self.bins, self.alpha, self.correction = trials, bins, alpha, correction
        self.positions: list[Any] = []
        self.carryover: list[Any] = []
        self.trends: dict[int, tuple[np.ndarray, ...]] = {}  # by batch: either thread may compute them
        self.pooled: list[tuple[np.ndarray, ...]] = []
        self.balance = BalanceTally(len(trials.test_names), len(trials.worker_names))
        self.busy = [0.0, 0.0]  # seconds of work so far: the analysing thread, the diagnosing one

    def add(self, index: int, table: TrialTable, sv: ValueOrder, trends: bool) -> None:
        """Batch `index`'s comparisons, uncorrected (its trends too if `trends`), in batch order.
        Its rows are all examined: every value is finite and primary, and with each comparison on
        one worker no worker's level is removed (pipeline._diagnosed gives back the table and its
        sort)."""
        start = time.perf_counter()
        parts = Parts(table, alpha=self.alpha, correction=self.correction, sorted_values=sv)
        t, comp, comp_test, comp_metric, least = parts.examined, parts.comp, parts.comp_test, parts.comp_metric, parts.min_values
        ranked = parts.ranked()
        found = position_parts(t, comp, comp_test, comp_metric, least, ranked, bins=self.bins, pooled=self.pooled)
        if found is not None:
            self.positions.extend(found[0])
        carry = carryover_part(t, comp, comp_test, comp_metric, least, ranked)
        if carry is not None:
            self.carryover.append(carry)
        if trends:
            self._trends(index, parts)
        self.balance.add(t, comp, comp_test)
        self.busy[1] += time.perf_counter() - start

    def add_trends(self, index: int, table: TrialTable, sv: ValueOrder) -> None:
        """Batch `index`'s trend comparisons, uncorrected."""
        self._trends(index, Parts(table, alpha=self.alpha, correction=self.correction, sorted_values=sv))

    def _trends(self, index: int, parts: Parts) -> None:
        trend = trend_part(parts.examined, self.trials.run_start, parts.comp, parts.comp_test, parts.comp_metric, parts.min_values, parts.by_value)
        if trend is not None:
            self.trends[index] = trend

    def diagnostics(self) -> Diagnostics:
        """The diagnostics of every batch, corrected as one family each; what looks across tests
        (the interleaving, the pooled position comparisons) from the whole file."""
        trials, bins, alpha, correction = self.trials, self.bins, self.alpha, self.correction
        test_names, metric_names = trials.test_names, trials.metric_names
        analysed = np.flatnonzero(trials.run_analysed)
        interleaving = None
        if len(analysed):
            interleaving = interleaving_of_runs(trials.run_arm[analysed].astype(np.int64), trials.run_worker[analysed],
                                                trials.run_start[analysed], trials.worker_names, alpha)
        positions: Sequence[Any] = ()
        if self.positions:
            parts = [concat_parts(self.positions)]
            if self.pooled:
                percentile, ratio, metric, b = (np.concatenate([p[i] for p in self.pooled]) for i in range(4))
                self.pooled.clear()
                parts.append(pooled_part(percentile, ratio, metric, b, max(len(metric_names), 1), len(bins.first), 5))
            positions = position_rows(parts, bins, test_names, metric_names, alpha, correction)
        carry: Sequence[Any] = ()
        if self.carryover:
            carry = carryover_rows(concat_parts(self.carryover), test_names, metric_names, alpha, correction)
        trends: Sequence[Any] = ()
        if self.trends:
            in_order = [self.trends[index] for index in sorted(self.trends)]
            joined = tuple(np.concatenate([t[i] for t in in_order]) for i in range(6))
            trends = trend_rows(joined, test_names, metric_names, alpha, correction)
        # A tidy file records no plan, so no random_orders (as read_tidy's provenance).
        return Diagnostics(interleaving=interleaving, position_effects=positions, carryover=carry, trends=trends,
                           carryover_balance=self.balance.result())
