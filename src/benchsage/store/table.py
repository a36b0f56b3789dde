"""The tidy trial table: one row per analysed value (trial x metric), held as numpy columns.

Every source (a benchsage journal, a tidy CSV, OrderSage files) becomes a TrialTable, and the
analysis only ever reads TrialTables. Columns are numpy arrays so that a table of millions of
rows stays small and the statistics can be vectorised over all tests at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from benchsage.store.outcomes import TestOutcomes, merged
from benchsage.vocabulary import ARMS, FIXED, HARNESS_METRIC_UNITS, RANDOM

# An arm's code in the arm column is its index in ARMS.
FIXED_CODE = ARMS.index(FIXED)
RANDOM_CODE = ARMS.index(RANDOM)

# Sentinels of the position / predecessor / run columns.
UNKNOWN = -1  # run, position: not known for this row
FIRST = -1  # predecessor: the trial ran first in its run (nothing before it)
NO_PREDECESSOR_INFO = -2  # predecessor: not known


@dataclass(frozen=True)
class MetricInfo:
    """What a metric measures: its unit and which direction is better."""

    name: str
    unit: str = ""
    better: str = "lower"  # "lower", "higher", or "" when unknown


HARNESS_METRIC_INFO: dict[str, MetricInfo] = {name: MetricInfo(name, unit, better) for name, (unit, better) in HARNESS_METRIC_UNITS.items()}


def constant(n: int, value: Any, dtype: Any) -> np.ndarray:
    """n copies of one value in the memory of one: a read-only view, for the column of a source
    that does not have it (a tidy file without runs: every run UNKNOWN). Indexing it gives an
    ordinary array; writing to it is an error."""
    return np.broadcast_to(np.array(value, dtype=dtype), (n,))


def is_constant(column: np.ndarray) -> bool:
    """Whether a column is constant()'s view."""
    return column.ndim == 1 and len(column) > 1 and column.strides == (0,)


def _ints(values: Any, dtype: Any = np.int64) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=dtype))


@dataclass(frozen=True, eq=False)
class TrialTable:
    """Columns of equal length; categorical columns are codes into the name tuples.

    test, metric, worker: int32 codes into test_names, metric_names, worker_names.
    arm: int8, FIXED_CODE (0) or RANDOM_CODE (1).
    value: float64, the measured value (only trials whose status is ok are rows here).
    run: int64 run id, unique within the table; UNKNOWN (-1) when the source has no runs.
    position: int32 0-based place of the trial in its run; UNKNOWN (-1) when not known.
    predecessor: int32 code of the test that ran just before in the same run (whatever its
        status), FIRST (-1) for the first trial of a run, NO_PREDECESSOR_INFO (-2) if unknown.
    time: float64 trial start, seconds (epoch or a monotonic clock); NaN when not known.
    primary: bool, whether the row's (test, metric) belongs to the primary correction family.
    treatment: int32 (rows x len(dims)) codes into dim_levels: the row's level of each treatment
        dimension ("context", "observer", "factor:NAME", and the context's own values as
        "context:env_bytes", ...); (rows x 0) when the source has no treatments. A code of -1:
        not known for this row.
    """

    test_names: tuple[str, ...]
    metric_names: tuple[str, ...]
    worker_names: tuple[str, ...]
    test: np.ndarray
    metric: np.ndarray
    arm: np.ndarray
    value: np.ndarray
    run: np.ndarray
    position: np.ndarray
    predecessor: np.ndarray
    worker: np.ndarray
    time: np.ndarray
    primary: np.ndarray
    metrics_info: Mapping[str, MetricInfo] = field(default_factory=dict)
    excluded: int = 0  # trials (or rows) left out because their status was not ok
    sources: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # things the importer noticed (excluded rows, ...)
    provenance: Mapping[str, Any] = field(default_factory=dict)  # spec, plan, seed, snapshots
    dims: tuple[str, ...] = ()  # treatment dimensions, in the order of the treatment column's columns
    dim_levels: tuple[tuple[str, ...], ...] = ()  # each dimension's level names
    treatment: np.ndarray | None = None  # int32 (rows x dims) codes; None: no treatments
    # How each test's trials ended (store/outcomes.py), in test order; () when the source does not say.
    outcomes: tuple[TestOutcomes, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.value)
        if self.treatment is None:
            object.__setattr__(self, "treatment", np.zeros((n, len(self.dims)), dtype=np.int32))
        if self.treatment.shape != (n, len(self.dims)) or len(self.dim_levels) != len(self.dims):
            raise ValueError(f"treatment has shape {self.treatment.shape}, expected ({n}, {len(self.dims)}) for dims {self.dims}")
        for name in ("test", "metric", "arm", "run", "position", "predecessor", "worker", "time", "primary"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"column {name} has {len(getattr(self, name))} rows, value has {n}")

    def __len__(self) -> int:
        return len(self.value)

    @property
    def has_runs(self) -> bool:
        return bool(len(self.run)) and bool(np.all(self.run >= 0))

    @property
    def has_positions(self) -> bool:
        return bool(len(self.position)) and bool(np.all(self.position >= 0))

    @property
    def has_times(self) -> bool:
        return bool(len(self.time)) and not bool(np.any(np.isnan(self.time)))

    def levels(self, dim: str) -> tuple[tuple[str, ...], np.ndarray] | None:
        """A treatment dimension's level names and each row's code (-1: not known), or None."""
        if dim not in self.dims:
            return None
        k = self.dims.index(dim)
        return self.dim_levels[k], self.treatment[:, k]

    def metric_info(self, metric: str) -> MetricInfo:
        return self.metrics_info.get(metric) or HARNESS_METRIC_INFO.get(metric) or MetricInfo(metric, "", "")

    @classmethod
    def from_columns(
        cls,
        *,
        test: Sequence[str] | np.ndarray,
        arm: Sequence[str] | np.ndarray,
        value: Sequence[float] | np.ndarray,
        metric: Sequence[str] | np.ndarray | None = None,
        run: Sequence[int] | np.ndarray | None = None,
        position: Sequence[int] | np.ndarray | None = None,
        predecessor: Sequence[str | None] | None = None,
        worker: Sequence[str] | np.ndarray | None = None,
        time: Sequence[float] | np.ndarray | None = None,
        primary: Sequence[bool] | np.ndarray | None = None,
        treatments: Mapping[str, Sequence[str | None]] | None = None,
        **meta: Any,
    ) -> "TrialTable":
        """Build a table from plain per-row sequences (strings for categorical columns).

        Convenient for tests and small importers; arm values are "fixed"/"random". When run
        and position are given and predecessor is not, predecessors are derived from them.
        `treatments`: a level per row for each treatment dimension (None: not known).
        """
        n = len(value)
        if treatments:
            meta["dims"], meta["dim_levels"], meta["treatment"] = encode_treatments(treatments, n)
        test_names, test_codes = _encode(test)
        metric_names, metric_codes = _encode(metric if metric is not None else ["value"] * n)
        worker_names, worker_codes = _encode(worker if worker is not None else ["local"] * n)
        arm_arr = np.asarray(arm)
        if arm_arr.dtype.kind in "US O":
            bad = ~np.isin(arm_arr, ARMS)
            if bad.any():
                raise ValueError(f"arm must be 'fixed' or 'random', got {arm_arr[bad][0]!r}")
            arm_codes = (arm_arr == "random").astype(np.int8)
        else:
            arm_codes = arm_arr.astype(np.int8)
        run_arr = _ints(run if run is not None else np.full(n, UNKNOWN))
        pos_arr = _ints(position if position is not None else np.full(n, UNKNOWN), np.int32)
        if predecessor is not None:
            index = {name: i for i, name in enumerate(test_names)}
            extra = sorted({p for p in predecessor if p is not None and p not in index})
            test_names = test_names + tuple(extra)
            index.update({name: len(index) + i for i, name in enumerate(extra)})
            pred_arr = np.array([FIRST if p is None else index[p] for p in predecessor], dtype=np.int32)
        elif run is not None and position is not None:
            pred_arr = derive_predecessors(run_arr, pos_arr, test_codes)
        else:
            pred_arr = np.full(n, NO_PREDECESSOR_INFO, dtype=np.int32)
        return cls(
            test_names=test_names,
            metric_names=metric_names,
            worker_names=worker_names,
            test=test_codes,
            metric=metric_codes,
            arm=arm_codes,
            value=np.asarray(value, dtype=np.float64),
            run=run_arr,
            position=pos_arr,
            predecessor=pred_arr,
            worker=worker_codes,
            time=np.asarray(time if time is not None else np.full(n, np.nan), dtype=np.float64),
            primary=np.asarray(primary if primary is not None else np.ones(n, dtype=bool), dtype=bool),
            **meta,
        )

    def select(self, mask: np.ndarray) -> "TrialTable":
        """The rows where mask is true (categories are kept as they are)."""
        cols = {name: getattr(self, name)[mask] for name in _ROW_COLUMNS}
        return _replace(self, treatment=self.treatment[mask], **cols)

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame with readable columns (test, arm, metric, ...)."""
        import pandas as pd

        names = np.array(self.test_names + ("",), dtype=object)
        pred = np.where(self.predecessor >= 0, self.predecessor, len(self.test_names))
        frame = pd.DataFrame(
            {
                "test": pd.Categorical.from_codes(self.test, categories=list(self.test_names)),
                "arm": pd.Categorical.from_codes(self.arm.astype(np.int8), categories=list(ARMS)),
                "metric": pd.Categorical.from_codes(self.metric, categories=list(self.metric_names)),
                "value": self.value,
                "run": self.run,
                "position": self.position,
                "predecessor": names[pred],
                "worker": pd.Categorical.from_codes(self.worker, categories=list(self.worker_names)),
                "time": self.time,
                "primary": self.primary,
            }
        )
        frame.loc[self.predecessor == NO_PREDECESSOR_INFO, "predecessor"] = None
        for k, dim in enumerate(self.dims):
            codes = self.treatment[:, k]
            frame[dim] = pd.Categorical.from_codes(codes, categories=list(self.dim_levels[k]))
        return frame


def encode_treatments(columns: Mapping[str, Sequence[str | None]], n: int) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...], np.ndarray]:
    """dims, dim_levels and the (n x dims) code matrix of per-row treatment levels (None: -1).
    Levels are kept in order of first appearance, except that integers are sorted numerically
    (env_bytes 8 before 64) and contexts by number (c2 before c10)."""
    dims = tuple(columns)
    out = np.full((n, len(dims)), -1, dtype=np.int32)
    levels: list[tuple[str, ...]] = []
    for k, dim in enumerate(dims):
        values = columns[dim]
        if len(values) != n:
            raise ValueError(f"treatment column {dim} has {len(values)} rows, value has {n}")
        seen: dict[str, int] = {}
        for v in values:
            if v is not None and v != "" and str(v) not in seen:
                seen[str(v)] = len(seen)
        names = list(seen)
        if names and all(re.fullmatch(r"-?\d+", name) for name in names):
            names.sort(key=int)
        elif names and all(re.fullmatch(r"c\d+", name) for name in names):  # contexts c1, c2, ..., c12
            names.sort(key=lambda name: int(name[1:]))
        index = {name: i for i, name in enumerate(names)}
        out[:, k] = [index[str(v)] if v is not None and v != "" else -1 for v in values]
        levels.append(tuple(names))
    return dims, tuple(levels), out


_ROW_COLUMNS = ("test", "metric", "arm", "value", "run", "position", "predecessor", "worker", "time", "primary")


def _replace(table: TrialTable, **changes: Any) -> TrialTable:
    import dataclasses

    return dataclasses.replace(table, **changes)


def _encode(values: Sequence[str] | np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """Categories in order of first appearance, and int32 codes."""
    arr = np.asarray(values, dtype=object)
    if len(arr) == 0:
        return (), np.zeros(0, dtype=np.int32)
    uniq, first, codes = np.unique(arr.astype(str), return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    remap = np.empty(len(order), dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    return tuple(str(u) for u in uniq[order]), remap[codes].astype(np.int32)


def derive_predecessors(run: np.ndarray, position: np.ndarray, test: np.ndarray) -> np.ndarray:
    """The test code that ran just before each row in its run; FIRST at position 0.

    Rows of one trial that carry several metrics share (run, position); any row of the
    previous position gives its test. A gap in positions (a trial missing from the data)
    yields NO_PREDECESSOR_INFO rather than a wrong neighbour.
    """
    n = len(run)
    out = np.full(n, NO_PREDECESSOR_INFO, dtype=np.int32)
    if n == 0:
        return out
    known = (run >= 0) & (position >= 0)
    out[known & (position == 0)] = FIRST
    idx = np.flatnonzero(known)
    if len(idx) == 0:
        return out
    if len(idx) == n:
        linear = _predecessors_in_file_order(run, position, test, out)
        if linear is not None:
            return linear
    key_pos, key_test = position[idx].astype(np.int64), test[idx]
    key = run[idx].astype(np.int64) * (int(key_pos.max()) + 2) + key_pos  # (run, position) as one int
    # numpy's stable sort of int64 is a timsort, which finds the stretches that are already in
    # order: linear for files written in execution order (even with a few interleaved parts),
    # n log n for a shuffled file. Stable: among rows of one trial, the first in file order.
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    new_key = np.empty(len(key), dtype=bool)
    new_key[0] = True
    np.not_equal(sorted_key[1:], sorted_key[:-1], out=new_key[1:])
    first = np.flatnonzero(new_key)  # the first sorted row of each (run, position)
    u = np.cumsum(new_key) - 1  # each sorted row's (run, position), numbered
    # The trial before a row's is the previous (run, position), if that is (same run, position - 1).
    has_prev = (u > 0) & (key_pos[order] >= 1)
    before = first[np.maximum(u - 1, 0)]
    found = has_prev & (sorted_key[before] == sorted_key - 1)
    res = out[idx]
    res[order[found]] = key_test[order[before[found]]]
    out[idx] = res
    return out


def _predecessors_in_file_order(run: np.ndarray, position: np.ndarray, test: np.ndarray, out: np.ndarray) -> np.ndarray | None:
    """derive_predecessors without a sort, for the usual file: every row's run and position
    known, each run's rows together and in position order (as a harness writes them, whatever
    the order of the runs). None when the file is not like that.

    Then the stable sort by (run, position) would only move whole runs, so each trial's first
    row and the trial before it are found by looking back along the file: the same answer.
    """
    n = len(run)
    run_changes = np.flatnonzero(run[1:] != run[:-1]) + 1
    # Each run in one stretch: as many stretches as distinct runs.
    if len(run_changes) + 1 != np.count_nonzero(np.bincount(run)):
        return None
    same_run = np.ones(n - 1, dtype=bool)
    same_run[run_changes - 1] = False
    step = position[1:].astype(np.int64) - position[:-1]
    if (step[same_run] < 0).any():  # positions fall within a run
        return None
    # Rows that begin a trial (a new run or a new position), and each row's trial's first row.
    starts = np.flatnonzero(np.concatenate(([True], ~same_run | (step != 0))))
    # The trial before trial j is trial j - 1 when it is the same run's previous position.
    prev_ok = np.zeros(len(starts), dtype=bool)
    s, p = starts[1:], starts[:-1]
    prev_ok[1:] = (run[s] == run[p]) & (position[s].astype(np.int64) == position[p].astype(np.int64) + 1)
    per_trial = np.where(prev_ok, np.concatenate(([0], test[p])).astype(np.int32), out[starts])
    lengths = np.diff(np.append(starts, n))
    return np.repeat(per_trial, lengths)


def concat(tables: Iterable[TrialTable]) -> TrialTable:
    """Combine tables (e.g. one file per worker): categories merged, run ids kept distinct."""
    tables = list(tables)
    if not tables:
        raise ValueError("no tables to combine")
    if len(tables) == 1:
        return tables[0]
    test_names: dict[str, int] = {}
    metric_names: dict[str, int] = {}
    worker_names: dict[str, int] = {}

    def remap(names: tuple[str, ...], into: dict[str, int]) -> np.ndarray:
        for name in names:
            into.setdefault(name, len(into))
        return np.array([into[name] for name in names] + [0], dtype=np.int32)

    parts: dict[str, list[np.ndarray]] = {name: [] for name in _ROW_COLUMNS}
    run_offset = 0
    infos: dict[str, MetricInfo] = {}
    for t in tables:
        tmap, mmap, wmap = remap(t.test_names, test_names), remap(t.metric_names, metric_names), remap(t.worker_names, worker_names)
        parts["test"].append(tmap[t.test])
        parts["metric"].append(mmap[t.metric])
        parts["worker"].append(wmap[t.worker])
        pred = t.predecessor.copy()
        has = pred >= 0
        pred[has] = tmap[pred[has]]
        parts["predecessor"].append(pred)
        run = t.run.copy()
        known = run >= 0
        if known.any():
            run[known] += run_offset
            run_offset = int(run[known].max()) + 1
        parts["run"].append(run)
        for name in ("arm", "value", "position", "time", "primary"):
            parts[name].append(getattr(t, name))
        for name, info in t.metrics_info.items():
            infos.setdefault(name, info)
    dims, dim_levels, treatment = _concat_treatments(tables)
    return TrialTable(
        test_names=tuple(test_names),
        metric_names=tuple(metric_names),
        worker_names=tuple(worker_names),
        **{name: np.concatenate(cols) for name, cols in parts.items()},
        dims=dims,
        dim_levels=dim_levels,
        treatment=treatment,
        metrics_info=infos,
        excluded=sum(t.excluded for t in tables),
        sources=tuple(s for t in tables for s in t.sources),
        warnings=tuple(w for t in tables for w in t.warnings),
        provenance={"parts": [dict(t.provenance) for t in tables]},
        outcomes=merged(o for t in tables for o in t.outcomes),
    )


def _concat_treatments(tables: list[TrialTable]) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...], np.ndarray]:
    """The union of the tables' treatment dimensions, levels merged by name; -1 where a table
    lacks a dimension."""
    dims: list[str] = []
    for t in tables:
        dims.extend(d for d in t.dims if d not in dims)
    levels: dict[str, dict[str, int]] = {d: {} for d in dims}
    blocks = []
    for t in tables:
        block = np.full((len(t), len(dims)), -1, dtype=np.int32)
        for k, dim in enumerate(t.dims):
            into = levels[dim]
            remap = np.array([into.setdefault(name, len(into)) for name in t.dim_levels[k]] + [-1], dtype=np.int32)
            block[:, dims.index(dim)] = remap[t.treatment[:, k]]
        blocks.append(block)
    return tuple(dims), tuple(tuple(levels[d]) for d in dims), np.concatenate(blocks) if blocks else np.zeros((0, len(dims)), np.int32)
