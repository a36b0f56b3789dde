"""Read the tidy CSV format (one row per trial and metric) into a TrialTable.

Required columns: test, order (fixed|random), value. Optional: metric, run, position, worker,
time, status. Only rows whose status is "ok" are analysed; the others are counted as excluded,
but they still occupy their place in the run, so predecessors are derived from every row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from benchsage.store.importers import _csv
from benchsage.store.importers.base import Importer, check_arms, exclusion_summary
from benchsage.store.table import NO_PREDECESSOR_INFO, UNKNOWN, TrialTable, derive_predecessors

REQUIRED = ("test", "order", "value")
OPTIONAL = ("metric", "run", "position", "worker", "time", "status")
_TEXT_COLUMNS = ("test", "order", "metric", "run", "worker", "status")


def sniff(columns: Sequence[str]) -> bool:
    return all(c in columns for c in REQUIRED)


def read_tidy(path: str | Path, *, require_both_arms: bool = True) -> TrialTable:
    """One tidy CSV file as a TrialTable; every metric is primary (imported data has no declarations).

    require_both_arms=False lets load_sources combine, say, one file per arm and check the
    arms of the combined table instead.
    """
    path = Path(path)
    cols, _ = _csv.read_columns(
        path,
        required=REQUIRED,
        categorical=_TEXT_COLUMNS,
        numeric=("value", "time"),
        integer=("position",),
        status="status",
        is_ok=lambda s: s.strip().lower() == "ok",
        needed=("value",),
        strict=("time", "position"),
        codes_only=("run",),
    )
    n, has, ok = cols.n, set(cols.names), cols.ok
    # Columns leave `cols` as they are used, so that a paper-scale file's arrays are not all
    # held twice (file rows, then analysable rows) at the same time.
    codes, numbers = cols.codes, cols.numbers
    zeros = np.zeros(n, dtype=np.int32)

    test_names, test = cols.labels["test"], codes.pop("test")
    arm = _csv.arms(path, cols.labels["order"], codes.pop("order"), "order")
    status_names, status = cols.labels.get("status", ("ok",)), codes.pop("status", zeros)
    metric_names, metric = cols.labels.get("metric", ("value",)), codes.pop("metric", zeros)
    worker_names, worker = cols.labels.get("worker", ("local",)), codes.pop("worker", zeros)

    if "run" in has:
        run_codes, blank = codes.pop("run"), cols.blank["run"]
        # Run ids are per worker: two workers' "run 0" are two runs.
        run = _csv.combined_ids(worker, run_codes)
        if len(blank):
            run[np.isin(run_codes, blank)] = UNKNOWN
        del run_codes
    else:
        run = np.full(n, UNKNOWN, dtype=np.int64)
    pos = numbers.pop("position", None)
    position = np.full(n, UNKNOWN, dtype=np.int32) if pos is None else np.where(np.isnan(pos), UNKNOWN, pos).astype(np.int32)
    del pos

    # A failed trial still ran and still warmed (or polluted) the machine for its successor.
    if "run" in has and "position" in has:
        predecessor = derive_predecessors(run, position, test)
    else:
        predecessor = np.full(n, NO_PREDECESSOR_INFO, dtype=np.int32)

    excluded, warnings = exclusion_summary(path, ok, status, status_names, run, position, test)
    del status
    every = bool(ok.all())

    def analysable(column: np.ndarray) -> np.ndarray:
        return column if every else column[ok]

    # One column at a time: each file-row column is dropped as soon as its copy exists.
    value = analysable(numbers.pop("value"))
    time = analysable(numbers.pop("time")) if "time" in numbers else np.full(len(value), np.nan)
    test, metric, arm, worker = analysable(test), analysable(metric), analysable(arm), analysable(worker)
    run, position, predecessor = analysable(run), analysable(position), analysable(predecessor)
    table = TrialTable(
        test_names=test_names,
        metric_names=metric_names,
        worker_names=worker_names,
        test=test,
        metric=metric,
        arm=arm,
        value=value,
        run=run,
        position=position,
        predecessor=predecessor,
        worker=worker,
        time=time,
        primary=np.ones(len(value), dtype=bool),
        excluded=excluded,
        sources=(str(path),),
        warnings=warnings,
        provenance={"format": "tidy"},
    )
    if require_both_arms:
        check_arms(table, str(path))
    return table


IMPORTER = Importer(
    name="tidy",
    description="tidy CSV: test, order, value [, metric, run, position, worker, time, status]",
    columns=REQUIRED,
    required=REQUIRED,
    sniff=sniff,
    read=read_tidy,
)
