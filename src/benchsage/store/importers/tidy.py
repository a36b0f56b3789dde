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

    test_names, test = cols.labels["test"], cols.codes["test"]
    arm = _csv.arms(path, cols.labels["order"], cols.codes["order"], "order")
    status_names, status = cols.labels.get("status", ("ok",)), cols.codes.get("status", np.zeros(n, dtype=np.int32))
    value = cols.numbers["value"]
    metric_names, metric = cols.labels.get("metric", ("value",)), cols.codes.get("metric", np.zeros(n, dtype=np.int32))
    worker_names, worker = cols.labels.get("worker", ("local",)), cols.codes.get("worker", np.zeros(n, dtype=np.int32))

    if "run" in has:
        run_codes, blank = cols.codes["run"], cols.blank["run"]
        # Run ids are per worker: two workers' "run 0" are two runs.
        run = _csv.combined_ids(worker, run_codes)
        if len(blank):
            run[np.isin(run_codes, blank)] = UNKNOWN
    else:
        run = np.full(n, UNKNOWN, dtype=np.int64)
    pos = cols.numbers.get("position")
    position = np.full(n, UNKNOWN, dtype=np.int32) if pos is None else np.where(np.isnan(pos), UNKNOWN, pos).astype(np.int32)
    time = cols.numbers.get("time", np.full(n, np.nan))

    # A failed trial still ran and still warmed (or polluted) the machine for its successor.
    if "run" in has and "position" in has:
        predecessor = derive_predecessors(run, position, test)
    else:
        predecessor = np.full(n, NO_PREDECESSOR_INFO, dtype=np.int32)

    excluded, warnings = exclusion_summary(path, ok, status, status_names, run, position, test)
    table = TrialTable(
        test_names=test_names,
        metric_names=metric_names,
        worker_names=worker_names,
        test=test[ok],
        metric=metric[ok],
        arm=arm[ok],
        value=value[ok],
        run=run[ok],
        position=position[ok],
        predecessor=predecessor[ok],
        worker=worker[ok],
        time=time[ok],
        primary=np.ones(int(ok.sum()), dtype=bool),
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
