"""Read a large tidy CSV block by block into compact columns (CompactTrials), for the batched
analysis (analyze/batched.py), so that ten times the paper's dataset fits in well under 1 GiB.

What read_tidy keeps per file row and then per analysed row (about 80 bytes at the peak) is
reduced here to what the analysis reads, per analysed row: the value (float64), test and
predecessor as int16, the run as int32 and the position as int8 (each widened when a value
needs it): 17-19 bytes. The arm and the worker are the run's, start times one start per run.
A file without runs (a minimal `test,order,value` file, say) keeps the arm per row instead
(int8), and the worker (int16) and start time (float64) per row when it has them: 11 bytes a
row for the minimal file. Two threads parse the next pieces of the file with pyarrow while
this one works on the last. Only files of the usual shape are read this way: a position in
every row or in none, a run in every row or in none, each run's rows together and in position
order, each run of one arm on one worker, no line break in a label, no treatment columns
(has_treatments). For any other file stream_tidy returns None and the caller reads the file
with read_tidy, which gives the same analysis. A cell read_tidy would refuse (text in a number
column, say) is worded as read_tidy words it, naming the line (_csv.check_cells), without
reading the file into memory.
"""

from __future__ import annotations

import mmap
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from benchsage.errors import DataError
from benchsage.store.importers import _csv
from benchsage.store.importers.base import exclusion_summary
from benchsage.store.importers.tidy_columns import REQUEST, is_ok
from benchsage.store.table import ARMS, FIRST, NO_PREDECESSOR_INFO, RANDOM_CODE, UNKNOWN, TrialTable, constant
from benchsage.threads import result_heard
from benchsage.vocabulary import SWEEP_PREFIX

BLOCK_BYTES = 4 << 20  # per piece of the file; the tests pass small pieces to cross many piece borders


@dataclass(frozen=True, eq=False)
class CompactTrials:
    """The analysed rows (status ok) of a tidy file in file order, as compact columns.

    Codes are those of read_tidy: names in order of first appearance over all rows of the
    file, run ids numbered as tidy.read_tidy numbers them. Per run id: run_start, the earliest
    finite start time of its analysed rows (NaN if none); run_arm and run_worker, the arm and
    worker of all its analysed rows (-1 for a run without any); run_analysed, whether it has
    analysed rows. Counted while reading: rows_per_test, the analysed rows of each test code;
    random_per_comparison, the random-arm rows of each comparison (in no set order, comparisons
    without random-arm rows possibly among them); positions, one more than the largest position
    of a random-arm row (0: none); comparisons_on_one_worker, whether each comparison's rows all
    come from one worker.
    """

    path: Path
    test_names: tuple[str, ...]
    metric_names: tuple[str, ...]
    worker_names: tuple[str, ...]
    test: np.ndarray
    metric: np.ndarray | None  # None: one metric
    value: np.ndarray
    run: np.ndarray | None  # None: the file has no runs (every row's run is unknown)
    position: np.ndarray | None  # None: the file has no positions
    predecessor: np.ndarray | None  # None: not known (no runs or no positions)
    run_start: np.ndarray
    run_arm: np.ndarray
    run_worker: np.ndarray
    run_analysed: np.ndarray
    rows_per_test: np.ndarray
    random_per_comparison: np.ndarray
    positions: int
    comparisons_on_one_worker: bool
    has_time: bool
    excluded: int
    warnings: tuple[str, ...]
    # Without runs, per row: the arm, the worker (None: one worker) and the start time (None: no time column).
    row_arm: np.ndarray | None = None
    row_worker: np.ndarray | None = None
    row_time: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.value)

    def arm(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """The arm of each row (of `rows`): its run's."""
        if self.run is None:
            return self.row_arm[rows]  # type: ignore[index]
        return self.run_arm[self.run[rows]]

    def worker(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """The worker of each row (of `rows`): its run's."""
        if self.run is None:
            return np.zeros(len(self.value[rows]), dtype=np.int32) if self.row_worker is None else self.row_worker[rows].astype(np.int32)
        return self.run_worker[self.run[rows]]

    def time(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """The start time the analysis reads for each row (of `rows`): its run's start, or
        without runs its own (NaN without a time column)."""
        if self.run is not None:
            return self.run_start[self.run[rows]]
        return np.full(len(self.value[rows]), np.nan) if self.row_time is None else self.row_time[rows]


class _Decline(Exception):
    """The file is not of the shape the compact reader handles; read it in memory instead."""


class _BadCell(Exception):
    """A cell read_tidy would refuse, or may: _csv.check_cells words it (or else the file is read in memory)."""


class _Growing:
    """A column appended to block by block, in a buffer sized from the first block's rows per
    byte and grown when that estimate falls short; integer columns widen (int8, int16, int32)
    when a value needs it. The buffer is memory of its own (an anonymous mapping), apart from
    malloc's heap: pages never written are never resident, and the blocks' temporaries, freed
    and reused around it, cannot leave the heap fragmented by the column's growth."""

    def __init__(self, dtype: Any, capacity: int) -> None:
        self.data = _mapped(np.dtype(dtype), capacity)
        self.n = 0

    def append(self, values: np.ndarray) -> None:
        k = len(values)
        if k == 0:
            return
        kind = self.data.dtype
        if kind.kind == "i" and kind.itemsize < 4:
            low, high = int(values.min()), int(values.max())
            while np.iinfo(kind).min > low or np.iinfo(kind).max < high:
                kind = np.dtype(f"int{kind.itemsize * 16}")
        size = len(self.data) if self.n + k <= len(self.data) else max(self.n + k, len(self.data) * 3 // 2)
        if kind != self.data.dtype or size != len(self.data):
            bigger = _mapped(kind, size)
            bigger[: self.n] = self.data[: self.n]
            self.data = bigger
        self.data[self.n : self.n + k] = values
        self.n += k

    def done(self) -> np.ndarray:
        out = self.data[: self.n]
        del self.data
        return out


def _mapped(dtype: np.dtype, n: int) -> np.ndarray:
    """An array of n values in an anonymous memory mapping of its own (unmapped with the array)."""
    return np.frombuffer(mmap.mmap(-1, max(n, 1) * dtype.itemsize), dtype=dtype, count=max(n, 1))


class _PerRun:
    """Arrays indexed by run (a stretch of rows with one run label) that grow by doubling."""

    FILL = {"owner": -1, "start": np.inf, "first_arm": -1}

    def __init__(self) -> None:
        self.n = 0
        self.owner = np.full(0, -1, dtype=np.int32)  # worker of the run's rows
        self.start = np.full(0, np.inf)  # earliest finite start time of its analysed rows
        self.first_arm = np.full(0, -1, dtype=np.int8)  # arm of its first analysed row

    def grow(self, n: int) -> None:
        if n > len(self.owner):
            size = max(n, 2 * len(self.owner), 1024)
            for name, fill in self.FILL.items():
                array = getattr(self, name)
                bigger = np.full(size, fill, dtype=array.dtype)
                bigger[: self.n] = array[: self.n]
                setattr(self, name, bigger)
        self.n = n

    def done(self) -> None:
        for name in self.FILL:
            setattr(self, name, getattr(self, name)[: self.n])


class _PerComparison:
    """Counts per test, and per (test, metric) comparison, that grow with the labels.

    The comparisons are counted in a grid of tests by metrics while it is small beside the rows
    read; a file whose labels would make it larger (thousands of tests, each with metrics of its
    own: the grid grows as the square of the rows) is counted at the end instead, over the
    comparisons that occur (dense False)."""

    def __init__(self) -> None:
        self.rows = np.zeros((0,), dtype=np.int64)  # analysed rows per test
        self.random = np.zeros((0, 0), dtype=np.int64)  # random-arm rows per (test, metric)
        self.owner = np.full((0, 0), -1, dtype=np.int32)  # the worker of each comparison's rows
        self.positions = 0  # one more than the largest random-arm position
        self.one_worker = True
        self.dense = True
        self.seen = 0  # analysed rows so far

    def add(self, test: np.ndarray, metric: np.ndarray, worker: np.ndarray, random: np.ndarray, position: np.ndarray | None,
            n_tests: int, n_metrics: int) -> None:
        self.seen += len(test)
        if n_tests > len(self.rows):
            rows = np.zeros(max(n_tests, 2 * len(self.rows)), dtype=np.int64)
            rows[: len(self.rows)] = self.rows
            self.rows = rows
        self.rows += np.bincount(test, minlength=len(self.rows))
        if random.any() and position is not None:
            self.positions = max(self.positions, int(position[random].max()) + 1)
        if self.dense and (n_tests > self.random.shape[0] or n_metrics > self.random.shape[1]):
            shape = (max(n_tests, 2 * self.random.shape[0]), max(n_metrics, self.random.shape[1]))
            if shape[0] * shape[1] > max(4 * self.seen, GRID_CELLS):
                self.dense = False  # counted by `sparse` at the end
                self.random, self.owner = np.zeros((0, 0), dtype=np.int64), np.full((0, 0), -1, dtype=np.int32)
                return
            random_rows, owner = np.zeros(shape, dtype=np.int64), np.full(shape, -1, dtype=np.int32)
            random_rows[: self.random.shape[0], : self.random.shape[1]] = self.random
            owner[: self.owner.shape[0], : self.owner.shape[1]] = self.owner
            self.random, self.owner = random_rows, owner
        if not self.dense:
            return
        width = self.random.shape[1]
        key = test.astype(np.int64) * width + metric
        self.random += np.bincount(key[random], minlength=self.random.size).reshape(self.random.shape)
        if self.one_worker:
            owner = self.owner.reshape(-1)  # a view: writes reach self.owner
            fresh = owner[key] < 0
            owner[key[fresh]] = worker[fresh]
            self.one_worker = bool(np.array_equal(owner[key], worker))

    def done(self, n_tests: int, n_metrics: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows per test, and random-arm rows per comparison (test * n_metrics + metric); for
        a count that is not dense, only the rows per test (sparse gives the rest)."""
        if not self.dense:
            return self.rows[:n_tests], np.zeros(0, dtype=np.int64)
        return self.rows[:n_tests], np.ascontiguousarray(self.random[:n_tests, :n_metrics]).reshape(-1)


GRID_CELLS = 1 << 22  # a grid of comparisons this large is counted densely whatever the rows (32 MiB)


def sparse_counts(test: np.ndarray, metric: np.ndarray | None, worker: np.ndarray, random: np.ndarray,
                  n_metrics: int) -> tuple[np.ndarray, bool]:
    """The random-arm rows of each comparison that occurs, and whether each comparison's rows
    all come from one worker: _PerComparison's counts, from the whole columns at once."""
    key = test.astype(np.int64) * max(n_metrics, 1) + (0 if metric is None else metric)
    _, first, comparison = np.unique(key, return_index=True, return_inverse=True)
    comparison = comparison.ravel()
    return np.bincount(comparison[random], minlength=len(first)), bool(np.array_equal(worker[first][comparison], worker))


def has_treatments(columns: Sequence[str]) -> bool:
    """Whether a header names treatment columns (context, observer, context:NAME, factor:NAME,
    sweep:NAME): the in-memory reader gives every row its treatment, which compact rows do not carry."""
    return any(c in ("context", "observer") or c.startswith(("context:", "factor:", SWEEP_PREFIX)) for c in columns)


def table_of(trials: CompactTrials) -> TrialTable:
    """read_tidy's table of a file without runs, from its CompactTrials (which hold every
    column of such a file per row): the columns widened to the table's types, those the file
    does not have one value each (table.constant)."""
    if trials.run is not None:
        raise ValueError("table_of needs a file without runs: the compact rows keep one start time per run")
    n = len(trials)

    def column(values: np.ndarray | None, dtype: Any, missing: Any) -> np.ndarray:
        return constant(n, missing, dtype) if values is None else values.astype(dtype, copy=False)

    return TrialTable(
        test_names=trials.test_names,
        metric_names=trials.metric_names,
        worker_names=trials.worker_names,
        test=trials.test.astype(np.int32),
        metric=column(trials.metric, np.int32, 0),
        arm=trials.row_arm,  # type: ignore[arg-type]
        value=trials.value,
        run=constant(n, UNKNOWN, np.int64),
        position=column(trials.position, np.int32, UNKNOWN),
        predecessor=constant(n, NO_PREDECESSOR_INFO, np.int32),
        worker=column(trials.row_worker, np.int32, 0),
        time=column(trials.row_time, np.float64, np.nan),
        primary=constant(n, True, bool),
        excluded=trials.excluded,
        sources=(str(trials.path),),
        warnings=trials.warnings,
        provenance={"format": "tidy"},
    )


def stream_tidy(path: str | Path, *, block_bytes: int = BLOCK_BYTES) -> CompactTrials | None:
    """The analysed rows of a tidy CSV file as CompactTrials, or None when the file should be
    read with read_tidy (a shape this reader does not handle, or a problem to report)."""
    path = Path(path)
    try:
        found, want, _ = _csv.plan(path, **REQUEST)
    except (DataError, pa.ArrowException, OSError):
        return None  # read_tidy words it
    if has_treatments(found):
        return None
    try:
        return _stream(path, found, block_bytes=block_bytes)
    except (_BadCell, pa.ArrowInvalid):
        # A cell read_tidy refuses, or a line it cannot parse: its error, naming the line, from a
        # pass over the file that keeps no rows; a file it would read after all is read in memory.
        _csv.check_cells(path, found, want)
        return None
    except (_Decline, DataError, pa.ArrowException, OSError):
        return None


_CATEGORICAL = ("test", "order", "metric", "worker", "status")
_PARSERS = 2  # pieces of the file parsed at the same time, each on a thread of its own


def _blocks(path: Path, found: list[str], types: dict[str, Any], block_bytes: int) -> Iterator[pa.RecordBatch]:
    """The rows after the header in file order, in blocks of about block_bytes of the file.

    The pieces are parsed by _PARSERS threads (pyarrow's parser releases the GIL) a few pieces
    ahead of the caller, which meanwhile works on the blocks before: on two cores, parsing and
    the caller's work overlap. A piece with an odd number of quote characters would have cut a
    quoted field (one holding a line break): such files are left to read_tidy.
    """
    read_options = pacsv.ReadOptions(column_names=found, use_threads=False, block_size=block_bytes + (1 << 16))
    convert_options = pacsv.ConvertOptions(column_types=types, include_columns=list(types))

    def parse(piece: memoryview) -> pa.Table:
        if np.count_nonzero(np.frombuffer(piece, dtype=np.uint8) == ord('"')) % 2:
            raise _Decline
        options = read_options if len(piece) < read_options.block_size else pacsv.ReadOptions(
            column_names=found, use_threads=False, block_size=len(piece) + 1)
        return pacsv.read_csv(pa.py_buffer(piece), read_options=options, convert_options=convert_options, memory_pool=pa.system_memory_pool())

    with ThreadPoolExecutor(_PARSERS, thread_name_prefix="benchsage-csv") as pool:
        pending: deque[Future[pa.Table]] = deque()
        try:
            for piece in _pieces(path, block_bytes):
                pending.append(pool.submit(parse, piece))
                if len(pending) > _PARSERS:
                    yield from result_heard(pending.popleft()).to_batches()
            while pending:
                yield from result_heard(pending.popleft()).to_batches()
        finally:
            for future in pending:
                future.cancel()


def _pieces(path: Path, block_bytes: int) -> Iterator[memoryview]:
    """The file after its header in pieces of about block_bytes that end at the end of a line,
    each in a buffer of its own (the parsers hold it)."""
    with path.open("rb") as fh:
        if fh.readline().count(b'"') % 2:
            raise _Decline  # a header with a quoted line break
        rest = b""
        while True:
            buf = bytearray(len(rest) + block_bytes)
            buf[: len(rest)] = rest
            got = fh.readinto(memoryview(buf)[len(rest) :])
            if not got:
                break
            end = len(rest) + got
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut == 0:  # a line longer than a piece
                rest = bytes(buf[:end])
                continue
            rest = bytes(buf[cut:end])
            yield memoryview(buf)[:cut]
        if rest.strip():
            yield memoryview(bytearray(rest))


class _Labels(_csv._Labels):
    """A categorical column's file-wide labels. A label holding a line break (a quoted field)
    declines the file: read_tidy, whose blocks pyarrow cuts elsewhere, reads it or words why not."""

    def __init__(self) -> None:
        super().__init__()
        self.checked = 0

    def codes(self, column: pa.Array) -> np.ndarray:
        if column.null_count:
            raise _Decline  # read_tidy turns such cells into ""
        codes = super().codes(column)
        if any("\n" in name or "\r" in name for name in self.names[self.checked :]):
            raise _Decline
        self.checked = len(self.names)
        return codes


def _positions(column: pa.Array) -> np.ndarray:
    """A block's positions; a row without one declines the file (read_tidy keeps it, unknown)."""
    if column.null_count:
        raise _Decline
    position = _csv._numpy(column)
    if len(position) and int(position.min()) < 0:
        raise _BadCell
    return position


def _stream(path: Path, found: list[str], *, block_bytes: int) -> CompactTrials:
    stream = _Stream(path, found, block_bytes)
    for batch in _blocks(path, found, stream.types, block_bytes):
        if batch.num_rows:
            stream.add(batch)
    return stream.finish()


class _Stream:
    """The compact columns of a file read so far, and what is counted while reading them."""

    def __init__(self, path: Path, found: list[str], block_bytes: int) -> None:
        self.path, self.block_bytes = path, block_bytes
        self.has_metric, self.has_worker, self.has_time = "metric" in found, "worker" in found, "time" in found
        self.has_run, self.has_position = "run" in found, "position" in found
        self.cat = [c for c in _CATEGORICAL if c in found]
        self.types: dict[str, Any] = {c: _csv._DICT for c in (*self.cat, *(["run"] if self.has_run else []))}
        self.types.update({c: pa.float64() for c in (["value", "time"] if self.has_time else ["value"])})
        if self.has_position:
            self.types["position"] = pa.int32()  # "1.5" or "x" stop the reader: check_cells words the error
        self.labels = {c: _Labels() for c in self.cat}
        self.runs = _PerRun()
        self.counts = _PerComparison()
        self.run_hashes: list[np.ndarray] = []  # a hash of each run's label, to check that no label has two runs
        self.last_label: str | None = None
        self.cols: dict[str, _Growing] = {}
        self.bad_parts: list[tuple[np.ndarray, ...]] = []
        # The trial the previous block ended in: its run, position, first row's test, predecessor.
        self.carry: tuple[int, int, int, int] = (-2, -2, 0, NO_PREDECESSOR_INFO)
        self.arm_lookup = np.zeros(0, dtype=np.int8)
        self.good = np.zeros(0, dtype=bool)
        self.arms_seen = np.zeros(2, dtype=bool)  # of analysed rows, for a file without runs
        self.total = 0

    def _columns(self, n: int) -> None:
        """Sized from the first block's rows per byte."""
        size = self.path.stat().st_size
        capacity = int(size * n / max(min(self.block_bytes, size), 1) * 1.25) + 1024
        wanted: list[tuple[str, Any]] = [("test", np.int16), ("value", np.float64)]
        if self.has_metric:
            wanted.append(("metric", np.int16))
        if self.has_run:
            wanted.append(("run", np.int32))
        else:  # per row what is otherwise per run
            wanted += [("arm", np.int8)] + [("worker", np.int16)] * self.has_worker + [("time", np.float64)] * self.has_time
        if self.has_position:
            wanted.append(("position", np.int8))
        if self.has_run and self.has_position:
            wanted.append(("predecessor", np.int16))
        for name, dtype in wanted:
            self.cols[name] = _Growing(dtype, capacity)

    def add(self, batch: Any) -> None:
        n = batch.num_rows
        if not self.cols:
            self._columns(n)
        codes = {c: self.labels[c].codes(batch.column(c)) for c in self.cat}
        arm = self._arms(codes["order"])
        ok = self._analysed(codes.get("status"))  # None: every row is analysed
        position = _positions(batch.column("position")) if self.has_position else None
        value = _csv._numpy(batch.column("value"))
        time = _csv._numpy(batch.column("time")) if self.has_time else None
        run = None
        if self.has_run:
            run, self.last_label = _runs(batch.column("run"), self.last_label, self.runs, self.run_hashes)
        del batch
        test = codes["test"]
        worker = codes["worker"] if self.has_worker else np.zeros(n, dtype=np.int32)
        predecessor = None
        if run is not None:
            # Each run on one worker (the run ids of read_tidy are then the runs, numbered by worker).
            fresh = self.runs.owner[run] < 0
            self.runs.owner[run[fresh]] = worker[fresh]
            if not np.array_equal(self.runs.owner[run], worker):
                raise _Decline
            if position is not None:
                predecessor, self.carry = _predecessors(run, position, test, self.carry)

        def analysed(column: np.ndarray) -> np.ndarray:
            return column if ok is None else column[ok]

        if ok is not None:
            bad = ~ok
            unknown = np.full(int(bad.sum()), -1, dtype=np.int32)
            self.bad_parts.append((unknown if run is None else run[bad], unknown if position is None else position[bad], test[bad],
                                   codes["status"][bad]))
        value = analysed(value)
        if not np.isfinite(value).all():
            raise _BadCell  # check_cells names the line, as read_tidy does
        arm_ok = analysed(arm)
        test_ok = analysed(test)
        position_ok = None if position is None else analysed(position)
        metric_ok = analysed(codes["metric"]) if self.has_metric else np.zeros(len(test_ok), dtype=np.int32)
        self.counts.add(test_ok, metric_ok, analysed(worker), arm_ok == RANDOM_CODE, position_ok, len(self.labels["test"].names),
                        len(self.labels["metric"].names) if self.has_metric else 1)
        columns = {"test": test_ok, "value": value, "metric": metric_ok, "position": position_ok}
        if run is not None:
            run_ok = analysed(run)
            if len(run_ok):
                _run_facts(self.runs, run_ok, arm_ok, None if time is None else analysed(time))
            columns.update(run=run_ok, predecessor=None if predecessor is None else analysed(predecessor))
        else:
            self.arms_seen[np.unique(arm_ok)] = True
            columns.update(arm=arm_ok, worker=analysed(worker), time=None if time is None else analysed(time))
        for name, col in self.cols.items():
            col.append(columns[name])  # type: ignore[arg-type]
        self.total += n

    def _arms(self, order: np.ndarray) -> np.ndarray:
        names = self.labels["order"].names
        if len(self.arm_lookup) != len(names):
            self.arm_lookup = np.array([ARMS.index(o) if o in ARMS else -1 for o in names], dtype=np.int8)
        arm = self.arm_lookup[order]
        if (arm < 0).any():
            raise _Decline  # read_tidy names the line
        return arm

    def _analysed(self, status: np.ndarray | None) -> np.ndarray | None:
        """Which rows have an ok status; None when all have (or there is no status column)."""
        if status is None:
            return None
        names = self.labels["status"].names
        if len(self.good) != len(names):
            self.good = np.array([is_ok(s) for s in names], dtype=bool)
        ok = self.good[status]
        return None if ok.all() else ok

    def finish(self) -> CompactTrials:
        if self.total == 0:
            raise _Decline  # read_tidy says the file has no rows
        out = {name: col.done() for name, col in self.cols.items()}
        self.cols = {}
        if self.has_run:
            per_run, rank = self._runs(out["run"])
            arms_seen = per_run["run_arm"] >= 0
            arms_seen = np.bincount(per_run["run_arm"][arms_seen], minlength=2) > 0
        else:
            per_run = dict(run_start=np.zeros(0), run_arm=np.zeros(0, dtype=np.int8), run_worker=np.zeros(0, dtype=np.int32))
            rank, arms_seen = None, self.arms_seen
        excluded, warnings = self._excluded(rank)
        if len(out["value"]) == 0 or not arms_seen.all():
            raise _Decline  # read_tidy and load_sources word the error
        labels = self.labels
        test_names = tuple(labels["test"].names)
        metric_names = tuple(labels["metric"].names) if self.has_metric else ("value",)
        rows_per_test, random_per_comparison = self.counts.done(len(test_names), len(metric_names))
        one_worker = self.counts.one_worker
        if not self.counts.dense:
            random_per_comparison, one_worker = self._sparse(out, per_run, len(metric_names))
        return CompactTrials(
            path=self.path,
            test_names=test_names,
            metric_names=metric_names,
            worker_names=tuple(labels["worker"].names) if self.has_worker else ("local",),
            test=out["test"],
            metric=out.get("metric"),
            value=out["value"],
            run=out.get("run"),
            position=out.get("position"),
            predecessor=out.get("predecessor"),
            **per_run,
            run_analysed=per_run["run_arm"] >= 0,
            rows_per_test=rows_per_test,
            random_per_comparison=random_per_comparison,
            positions=self.counts.positions,
            comparisons_on_one_worker=one_worker,
            has_time=self.has_time,
            excluded=excluded,
            warnings=warnings,
            row_arm=out.get("arm"),
            row_worker=out.get("worker"),
            row_time=out.get("time"),
        )

    def _sparse(self, out: dict[str, np.ndarray], per_run: dict[str, np.ndarray], n_metrics: int) -> tuple[np.ndarray, bool]:
        """sparse_counts of the rows read, each row's arm and worker its run's (without runs its own)."""
        if "run" in out:
            arm, worker = per_run["run_arm"][out["run"]], per_run["run_worker"][out["run"]]
        else:
            arm = out["arm"]
            worker = out["worker"] if "worker" in out else np.zeros(len(arm), dtype=np.int32)
        return sparse_counts(out["test"], out.get("metric"), worker, arm == RANDOM_CODE, n_metrics)

    def _runs(self, run: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Numbers the runs of `run` (in place) as read_tidy does, and gives each run's start, arm
        and worker, and the new number of each run as read (its rank)."""
        hashes = np.sort(np.concatenate(self.run_hashes))
        self.run_hashes = []
        if (hashes[1:] == hashes[:-1]).any():
            raise _Decline  # a run label with two stretches of rows (or two labels with one hash)
        del hashes
        runs = self.runs
        runs.done()
        # Run ids as _csv.combined_ids(worker, run label) numbers them: by worker, then label.
        used = np.flatnonzero(runs.owner >= 0)
        by_worker = used[np.argsort(runs.owner[used], kind="stable")]
        rank = np.full(len(runs.owner), -1, dtype=np.int32)
        rank[by_worker] = np.arange(len(by_worker))
        for at in range(0, len(run), 1 << 20):  # in place, a slice at a time: no second run column
            run[at : at + (1 << 20)] = rank[run[at : at + (1 << 20)]]
        size = len(by_worker)
        run_start = np.full(size, np.nan)
        run_start[rank[used]] = np.where(np.isinf(runs.start[used]), np.nan, runs.start[used])
        run_arm = np.full(size, -1, dtype=np.int8)
        run_arm[rank[used]] = runs.first_arm[used]
        run_worker = np.zeros(size, dtype=np.int32)
        run_worker[rank[used]] = runs.owner[used]
        return dict(run_start=run_start, run_arm=run_arm, run_worker=run_worker), rank

    def _excluded(self, rank: np.ndarray | None) -> tuple[int, Any]:
        if not self.bad_parts:
            return 0, ()
        r, p, t, st = (np.concatenate([part[i] for part in self.bad_parts]) for i in range(4))
        status_names = tuple(self.labels["status"].names)
        run = r.astype(np.int64) if rank is None else rank[r].astype(np.int64)
        return exclusion_summary(self.path, np.zeros(len(r), dtype=bool), st, status_names, run, p, t)


def _run_facts(runs: _PerRun, run: np.ndarray, arm: np.ndarray, time: np.ndarray | None) -> None:
    """Each run's arm (declining a run of two arms) and earliest start, from a block's analysed
    rows; a run is a stretch of rows (run ids never fall), so both are reductions per stretch."""
    starts = np.flatnonzero(np.concatenate(([True], run[1:] != run[:-1])))
    ids = run[starts]
    new = runs.first_arm[ids] < 0
    runs.first_arm[ids[new]] = arm[starts[new]]
    if not np.array_equal(np.repeat(runs.first_arm[ids], np.diff(np.append(starts, len(run)))), arm):
        raise _Decline  # a run with rows of both arms
    if time is not None:
        runs.start[ids] = np.fmin(runs.start[ids], np.fmin.reduceat(time, starts))


def _runs(column: pa.DictionaryArray, last_label: str | None, runs: _PerRun, hashes: list[np.ndarray]) -> tuple[np.ndarray, str | None]:
    """Each row's run (int32), numbered in order of appearance: a run is a stretch of rows with
    one run label (the block's first rows continue the previous block's last run when their
    label is the same). Appends a hash of each new run's label to `hashes`; no run label may be
    blank."""
    if column.null_count:
        raise _Decline
    if len(_csv._blank_codes(column.dictionary)):
        raise _Decline  # rows without a run
    names = column.dictionary.to_pylist()
    index = _csv._numpy(column.indices)
    n = len(index)
    new = np.empty(n, dtype=bool)
    new[0] = last_label is None or names[int(index[0])] != last_label
    np.not_equal(index[1:], index[:-1], out=new[1:])
    code = np.cumsum(new, dtype=np.int32)
    code += runs.n - 1  # a continued run keeps the previous block's last number
    label_hash = np.fromiter(map(hash, names), dtype=np.int64, count=len(names))
    hashes.append(label_hash[index[new]])
    runs.grow(int(code[-1]) + 1)
    return code, names[int(index[-1])]


def _predecessors(
    run: np.ndarray, position: np.ndarray, test: np.ndarray, carry: tuple[int, int, int, int]
) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """table.derive_predecessors for one block of a file written run by run, continuing the
    trial the previous piece ended in (`carry`); raises _Decline where that function would sort
    (positions falling within a run; stream_tidy checks that each run label has one stretch)."""
    n = len(run)
    last_run, last_pos, last_test, last_pred = carry
    ext_run = np.concatenate(([last_run], run))
    ext_pos = np.concatenate(([last_pos], position))
    ext_test = np.concatenate(([last_test], test))
    same_run = ext_run[1:] == ext_run[:-1]
    step = ext_pos[1:] - ext_pos[:-1]
    if (step[same_run] < 0).any():
        raise _Decline
    new_trial = np.concatenate(([True], ~same_run | (step != 0)))
    starts = np.flatnonzero(new_trial)  # starts[0] = 0, the carried trial
    s, p = starts[1:], starts[:-1]
    prev_ok = (ext_run[s] == ext_run[p]) & (ext_pos[s] == ext_pos[p] + 1)
    base = np.where(ext_pos[s] == 0, FIRST, NO_PREDECESSOR_INFO)
    per_trial = np.concatenate(([last_pred], np.where(prev_ok, ext_test[p], base)))
    lengths = np.diff(np.append(starts, n + 1))
    predecessor = np.repeat(per_trial, lengths)[1:]
    j = starts[-1]
    return predecessor, (int(ext_run[j]), int(ext_pos[j]), int(ext_test[j]), int(per_trial[-1]))
