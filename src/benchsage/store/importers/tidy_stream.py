"""Read a large tidy CSV block by block into compact columns (CompactTrials), for the batched
analysis (analyze/batched.py), so that ten times the paper's dataset fits in well under 1 GiB.

What read_tidy keeps per file row and then per analysed row (about 80 bytes at the peak) is
reduced here to what the analysis reads, per analysed row: the value (float64), test,
predecessor and worker as int16, arm as int8, the run as int32 and the position as int16 or
int32 (20-22 bytes); start times become one start per run. Only files of the usual shape are
read this way: every row with a run and a position, each run's rows together and in position
order, each run label used by one worker, no treatment columns (has_treatments). For any
other file, and for any problem in the file (whose one-line error the in-memory reader
words), stream_tidy returns None and the caller reads the file with read_tidy, which gives the
same analysis.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from benchsage.errors import DataError
from benchsage.store.importers import _csv
from benchsage.store.importers.base import exclusion_summary
from benchsage.store.importers.tidy import REQUEST, is_ok
from benchsage.store.table import ARMS, FIRST, NO_PREDECESSOR_INFO

BLOCK_BYTES = 8 << 20  # per block of the file; the tests pass small blocks to cross many block borders
_I16 = np.iinfo(np.int16).max


@dataclass(frozen=True, eq=False)
class CompactTrials:
    """The analysed rows (status ok) of a tidy file in file order, as compact columns.

    Codes are those of read_tidy: names in order of first appearance over all rows of the
    file, run ids numbered as tidy.read_tidy numbers them. run_start, run_arm, run_worker: per
    run id, the earliest finite start time of its analysed rows (NaN if none), and the arm and
    worker of its first analysed row; run_analysed says which run ids have analysed rows.
    """

    path: Path
    test_names: tuple[str, ...]
    metric_names: tuple[str, ...]
    worker_names: tuple[str, ...]
    test: np.ndarray
    metric: np.ndarray | None  # None: one metric
    arm: np.ndarray
    value: np.ndarray
    worker: np.ndarray
    run: np.ndarray
    position: np.ndarray
    predecessor: np.ndarray
    run_start: np.ndarray
    run_arm: np.ndarray
    run_worker: np.ndarray
    run_analysed: np.ndarray
    has_time: bool
    excluded: int
    warnings: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.value)


class _Decline(Exception):
    """The file is not of the shape the compact reader handles; read it in memory instead."""


class _Growing:
    """A column appended to block by block, in a buffer sized from the first block's rows per
    byte (pages never written are never resident) and grown when that estimate falls short;
    integer columns widen from int16 to int32 when a value needs it."""

    def __init__(self, dtype: Any, capacity: int) -> None:
        self.data = np.empty(capacity, dtype=dtype)
        self.n = 0

    def append(self, values: np.ndarray) -> None:
        k = len(values)
        if k == 0:
            return
        if self.data.dtype == np.int16 and (int(values.max()) > _I16 or int(values.min()) < -_I16):
            self.data = self.data.astype(np.int32)
        if self.n + k > len(self.data):
            bigger = np.empty(max(self.n + k, len(self.data) * 3 // 2), dtype=self.data.dtype)
            bigger[: self.n] = self.data[: self.n]
            self.data = bigger
        self.data[self.n : self.n + k] = values
        self.n += k

    def done(self) -> np.ndarray:
        out = self.data[: self.n]
        del self.data
        return out


class _PerRun:
    """Arrays indexed by run (a stretch of rows with one run label) that grow by doubling."""

    def __init__(self) -> None:
        self.n = 0
        self.owner = np.full(0, -1, dtype=np.int64)  # worker of the run's rows
        self.start = np.full(0, np.inf)  # earliest finite start time of its analysed rows
        self.first_arm = np.full(0, -1, dtype=np.int8)  # arm of its first analysed row

    def grow(self, n: int) -> None:
        if n > len(self.owner):
            size = max(n, 2 * len(self.owner), 1024)
            for name, fill in (("owner", -1), ("start", np.inf), ("first_arm", -1)):
                array = getattr(self, name)
                bigger = np.full(size, fill, dtype=array.dtype)
                bigger[: self.n] = array[: self.n]
                setattr(self, name, bigger)
        self.n = n

    def done(self) -> None:
        for name in ("owner", "start", "first_arm"):
            setattr(self, name, getattr(self, name)[: self.n])


def stream_tidy(path: str | Path, *, block_bytes: int = BLOCK_BYTES) -> CompactTrials | None:
    """The analysed rows of a tidy CSV file as CompactTrials, or None when the file should be
    read with read_tidy (a shape this reader does not handle, or a problem to report)."""
    path = Path(path)
    try:
        found, want, _ = _csv.plan(path, **REQUEST)
        if "run" not in found or "position" not in found or has_treatments(found):
            return None
        return _stream(path, found, block_bytes=block_bytes)
    except (_Decline, DataError, pa.ArrowException, OSError):
        return None


def has_treatments(columns: Sequence[str]) -> bool:
    """Whether a header names treatment columns (context, observer, context:NAME, factor:NAME):
    the in-memory reader gives every row its treatment, which compact rows do not carry."""
    return any(c in ("context", "observer") or c.startswith(("context:", "factor:")) for c in columns)


def _pieces(path: Path, block_bytes: int) -> Iterator[bytes]:
    """The file after its header in pieces of about block_bytes that end at the end of a line.
    A piece with an odd number of quote characters would have cut a quoted field (one holding
    a line break): such files are left to read_tidy."""
    with path.open("rb") as fh:
        head = fh.readline()
        if head.count(b'"') % 2:
            raise _Decline
        rest = b""
        while True:
            data = fh.read(block_bytes)
            if not data:
                break
            data = rest + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            piece, rest = data[:cut], data[cut:]
            del data
            if piece.count(b'"') % 2:
                raise _Decline
            yield piece
        if rest.strip():
            if rest.count(b'"') % 2:
                raise _Decline
            yield rest


_CATEGORICAL = ("test", "order", "metric", "worker", "status")


def _stream(path: Path, found: list[str], *, block_bytes: int) -> CompactTrials:
    has_metric, has_worker = "metric" in found, "worker" in found
    has_time = "time" in found
    cat = [c for c in _CATEGORICAL if c in found]
    num = [c for c in ("value", "time", "position") if c in found]
    types: dict[str, Any] = {c: _csv._DICT for c in (*cat, "run")}
    types.update({c: pa.float64() for c in num})
    read_options = pacsv.ReadOptions(column_names=found, block_size=4 << 20, use_threads=True)
    convert_options = pacsv.ConvertOptions(column_types=types, include_columns=[*cat, "run", *num])
    labels = {c: _csv._Labels() for c in cat}
    runs = _PerRun()
    run_hashes: list[np.ndarray] = []  # a hash of each run's label, to check that no label has two runs
    last_label: str | None = None
    cols: dict[str, _Growing] = {}
    bad_parts: list[tuple[np.ndarray, ...]] = []
    # The trial the previous piece ended in: its run, position, first row's test, predecessor.
    carry: tuple[int, int, int, int] = (-2, -2, 0, NO_PREDECESSOR_INFO)
    arm_lookup = np.zeros(0, dtype=np.int8)
    good = np.zeros(0, dtype=bool)
    total = 0
    for piece in _pieces(path, block_bytes):
        size = len(piece)
        table = pacsv.read_csv(pa.py_buffer(piece), read_options=read_options, convert_options=convert_options,
                               memory_pool=pa.system_memory_pool())
        del piece
        n = table.num_rows
        if n == 0:
            continue
        if not cols:  # size the columns from the first piece's rows per byte
            capacity = int(path.stat().st_size * n / size * 1.25) + 1024
            for name, dtype in (("test", np.int16), ("arm", np.int8), ("value", np.float64), ("worker", np.int16),
                                ("run", np.int32), ("position", np.int16), ("predecessor", np.int16)):
                cols[name] = _Growing(dtype, capacity)
            if has_metric:
                cols["metric"] = _Growing(np.int16, capacity)
        codes = {}
        for c in cat:
            column = table.column(c)
            if column.null_count:
                raise _Decline  # read_tidy turns such cells into ""
            codes[c] = labels[c].codes(column)
        order_names = labels["order"].names
        if len(arm_lookup) != len(order_names):
            arm_lookup = np.array([ARMS.index(o) if o in ARMS else -1 for o in order_names], dtype=np.int8)
        arm = arm_lookup[codes["order"]]
        if (arm < 0).any():
            raise _Decline  # read_tidy names the line
        if "status" in cat:
            names = labels["status"].names
            if len(good) != len(names):
                good = np.array([is_ok(s) for s in names], dtype=bool)
            ok = good[codes["status"]]
        else:
            ok = np.ones(n, dtype=bool)
        numbers = {c: _csv._numpy(table.column(c).combine_chunks()).astype(np.float64, copy=False) for c in num}
        worker = codes["worker"].astype(np.int64) if has_worker else np.zeros(n, dtype=np.int64)
        test = codes["test"].astype(np.int64)
        position = numbers["position"]
        if np.isnan(position).any() or ((position != np.floor(position)) | (position < 0)).any():
            raise _Decline
        position = position.astype(np.int64)
        if not np.isfinite(numbers["value"][ok]).all():
            raise _Decline
        run, last_label = _runs(table.column("run").combine_chunks(), last_label, runs, run_hashes)
        del table
        # Each run on one worker (the run ids of read_tidy are then the runs, numbered by worker).
        fresh = runs.owner[run] < 0
        runs.owner[run[fresh]] = worker[fresh]
        if not np.array_equal(runs.owner[run], worker):
            raise _Decline
        predecessor, carry = _predecessors(run, position, test, carry)

        every = bool(ok.all())

        def analysed(column: np.ndarray) -> np.ndarray:
            return column if every else column[ok]

        if not every:
            bad = ~ok
            bad_parts.append((run[bad], position[bad], test[bad], codes["status"][bad]))
        run_ok, arm_ok = analysed(run), analysed(arm)
        if has_time:
            time = analysed(numbers["time"])
            timed = np.isfinite(time)
            np.minimum.at(runs.start, run_ok[timed], time[timed])
        # The arm of each run's first analysed row.
        new = runs.first_arm[run_ok] < 0
        if new.any():
            ids, first = np.unique(run_ok[new], return_index=True)
            runs.first_arm[ids] = arm_ok[new][first]
        cols["test"].append(analysed(test))
        cols["arm"].append(arm_ok)
        cols["value"].append(analysed(numbers["value"]))
        cols["worker"].append(analysed(worker))
        cols["run"].append(run_ok)
        cols["position"].append(analysed(position))
        cols["predecessor"].append(analysed(predecessor))
        if has_metric:
            cols["metric"].append(analysed(codes["metric"]))
        total += n
    if total == 0:
        raise _Decline  # read_tidy says the file has no rows
    hashes = np.concatenate(run_hashes)
    if len(np.unique(hashes)) != len(hashes):
        raise _Decline  # a run label with two stretches of rows (or two labels with one hash)
    del hashes, run_hashes

    runs.done()
    out = {name: col.done() for name, col in cols.items()}
    del cols
    worker_names = tuple(labels["worker"].names) if has_worker else ("local",)
    # Run ids as _csv.combined_ids(worker, run label) numbers them: by worker, then label.
    used = np.flatnonzero(runs.owner >= 0)
    by_worker = used[np.argsort(runs.owner[used], kind="stable")]
    rank = np.full(len(runs.owner), -1, dtype=np.int64)
    rank[by_worker] = np.arange(len(by_worker))
    run = out["run"]
    rank32 = rank.astype(np.int32)
    for at in range(0, len(run), 1 << 20):  # in place, a slice at a time: no second run column
        run[at : at + (1 << 20)] = rank32[run[at : at + (1 << 20)]]
    size = len(by_worker)
    run_start = np.full(size, np.nan)
    run_start[rank[used]] = np.where(np.isinf(runs.start[used]), np.nan, runs.start[used])
    run_arm = np.full(size, -1, dtype=np.int8)
    run_arm[rank[used]] = runs.first_arm[used]
    run_worker = np.zeros(size, dtype=np.int64)
    run_worker[rank[used]] = runs.owner[used]

    if bad_parts:
        r, p, t, st = (np.concatenate([part[i] for part in bad_parts]) for i in range(4))
        status_names = tuple(labels["status"].names)
        excluded, warnings = exclusion_summary(path, np.zeros(len(r), dtype=bool), st, status_names, rank[r], p, t)
    else:
        excluded, warnings = 0, ()
    arm = out["arm"]
    if len(arm) == 0 or not (arm == 0).any() or not (arm == 1).any():
        raise _Decline  # read_tidy and load_sources word the error
    metric = out.get("metric")
    return CompactTrials(
        path=path,
        test_names=tuple(labels["test"].names),
        metric_names=tuple(labels["metric"].names) if has_metric else ("value",),
        worker_names=worker_names,
        test=out["test"],
        metric=metric,
        arm=arm,
        value=out["value"],
        worker=out["worker"],
        run=run,
        position=out["position"],
        predecessor=out["predecessor"],
        run_start=run_start,
        run_arm=run_arm,
        run_worker=run_worker,
        run_analysed=run_arm >= 0,
        has_time=has_time,
        excluded=excluded,
        warnings=warnings,
    )


def _runs(column: pa.DictionaryArray, last_label: str | None, runs: _PerRun, hashes: list[np.ndarray]) -> tuple[np.ndarray, str | None]:
    """Each row's run, numbered in order of appearance: a run is a stretch of rows with one run
    label (the piece's first rows continue the previous piece's last run when their label is
    the same). Appends a hash of each new run's label to `hashes`; no run label may be blank."""
    if column.null_count:
        raise _Decline
    dictionary = column.dictionary
    if len(_csv._blank_codes(dictionary)):
        raise _Decline  # rows without a run
    index = _csv._numpy(column.indices).astype(np.int64)
    n = len(index)
    new = np.empty(n, dtype=bool)
    new[0] = last_label is None or dictionary[int(index[0])].as_py() != last_label
    np.not_equal(index[1:], index[:-1], out=new[1:])
    code = np.cumsum(new) - 1 + runs.n  # a continued run keeps the previous piece's last number
    label_hash = np.fromiter(map(hash, dictionary.to_pylist()), dtype=np.int64, count=len(dictionary))
    hashes.append(label_hash[index[new]])
    runs.grow(int(code[-1]) + 1)
    return code, dictionary[int(index[-1])].as_py()


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
