"""Read the tidy CSV format (one row per trial and metric) into a TrialTable.

Required columns: test, order (fixed|random), value. Optional: metric, run, position, worker,
time, status, boot_id (the host's boot identity, as benchsage's own export writes it). Only rows whose status is "ok" are analysed; the others are counted as excluded,
but they still occupy their place in the run, so predecessors are derived from every row.
Treatment columns, as benchsage's export writes them, become the table's treatment dimensions:
context, context:NAME (the context's own settings), observer, factor:NAME, sweep:NAME (an
expanded test's level); an empty cell is a level not known.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchsage.store.importers import _csv
from benchsage.store.importers.base import Importer, check_arms, exclusion_summary
from benchsage.store.importers.tidy_columns import _TEXT_COLUMNS, OPTIONAL, REQUEST, REQUIRED, is_ok  # noqa: F401 (tidy.REQUEST, ...)
from benchsage.store.table import NO_PREDECESSOR_INFO, UNKNOWN, TrialTable, constant, derive_predecessors, encode_treatments, is_constant
from benchsage.vocabulary import SWEEP_PREFIX

# A file without runs at least this large is read block by block (tidy_stream.py), its table
# built from the compact rows: the same table, without the whole file parsed at once (which
# held about 80 bytes a row at its peak, for 13 bytes a row of a test,order,value table).
STREAM_READ_BYTES = 64 << 20


def treatment_columns(columns: Sequence[str]) -> tuple[str, ...]:
    """The treatment columns of a header, in file order."""
    return tuple(c for c in columns if c in ("context", "observer") or (c.startswith(("context:", "factor:", SWEEP_PREFIX)) and c.split(":", 1)[1]))


def sniff(columns: Sequence[str]) -> bool:
    return all(c in columns for c in REQUIRED)


def read_tidy(path: str | Path, *, require_both_arms: bool = True) -> TrialTable:
    """One tidy CSV file as a TrialTable; every metric is primary (imported data has no declarations).

    require_both_arms=False lets load_sources combine, say, one file per arm and check the
    arms of the combined table instead.
    """
    path = Path(path)
    columns = _csv.header(path)
    dims = treatment_columns(columns)
    if not dims and "run" not in columns and path.stat().st_size >= STREAM_READ_BYTES:
        from benchsage.store.importers.tidy_stream import stream_tidy, table_of

        trials = stream_tidy(path)  # a bad cell: read_tidy's own error, from the stream
        if trials is not None:
            table = table_of(trials)
            del trials
            if require_both_arms:
                check_arms(table, str(path))
            return table
    cols, _ = _csv.read_columns(path, **{**REQUEST, "categorical": _TEXT_COLUMNS + dims})
    n, has, ok = cols.n, set(cols.names), cols.ok
    # Columns leave `cols` as they are used, so that a paper-scale file's arrays are not all
    # held twice (file rows, then analysable rows) at the same time.
    codes, numbers = cols.codes, cols.numbers
    # A column the file does not have is one value in the memory of one (table.constant).
    zeros = constant(n, 0, np.int32)

    test_names, test = cols.labels["test"], codes.pop("test")
    arm = _csv.arms(path, cols.labels["order"], codes.pop("order"), "order")
    status_names, status = cols.labels.get("status", ("ok",)), codes.pop("status", zeros)
    metric_names, metric = cols.labels.get("metric", ("value",)), codes.pop("metric", zeros)
    worker_names, worker = cols.labels.get("worker", ("local",)), codes.pop("worker", zeros)
    boot_names, boot = cols.labels.get("boot_id", ()), codes.pop("boot_id", None)
    treatment = _treatments(dims, cols.labels, codes)

    if "run" in has:
        run_codes, blank = codes.pop("run"), cols.blank["run"]
        # Run ids are per worker: two workers' "run 0" are two runs.
        run = _csv.combined_ids(worker, run_codes)
        if len(blank):
            run[np.isin(run_codes, blank)] = UNKNOWN
        del run_codes
    else:
        run = constant(n, UNKNOWN, np.int64)
    pos = numbers.pop("position", None)
    position = constant(n, UNKNOWN, np.int32) if pos is None else np.where(np.isnan(pos), UNKNOWN, pos).astype(np.int32)
    del pos

    # A failed trial still ran and still warmed (or polluted) the machine for its successor.
    if "run" in has and "position" in has:
        predecessor = derive_predecessors(run, position, test)
    else:
        predecessor = constant(n, NO_PREDECESSOR_INFO, np.int32)

    excluded, warnings = exclusion_summary(path, ok, status, status_names, run, position, test)
    del status
    every = bool(ok.all())

    kept = n if every else int(np.count_nonzero(ok))

    def analysable(column: np.ndarray) -> np.ndarray:
        if every:
            return column
        return constant(kept, column[0], column.dtype) if is_constant(column) else column[ok]

    # One column at a time: each file-row column is dropped as soon as its copy exists.
    value = analysable(numbers.pop("value"))
    time = analysable(numbers.pop("time")) if "time" in numbers else constant(len(value), np.nan, np.float64)
    test, metric, arm, worker = analysable(test), analysable(metric), analysable(arm), analysable(worker)
    run, position, predecessor = analysable(run), analysable(position), analysable(predecessor)
    provenance: dict[str, Any] = {"format": "tidy"}
    if "run" in has and len(worker_names) > 1:
        provenance.update(_fleet_provenance(run, worker, worker_names, None if boot is None else analysable(boot), boot_names))
    del boot
    if treatment is not None:
        treatment = (treatment[0], treatment[1], analysable(treatment[2]))
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
        primary=constant(len(value), True, bool),
        excluded=excluded,
        sources=(str(path),),
        warnings=warnings,
        provenance=provenance,
        **({} if treatment is None else dict(zip(("dims", "dim_levels", "treatment"), treatment))),
    )
    if require_both_arms:
        check_arms(table, str(path))
    return table


def _treatments(dims: Sequence[str], labels: dict[str, tuple[str, ...]], codes: dict[str, np.ndarray]) -> tuple[Any, Any, np.ndarray] | None:
    """(dims, dim_levels, rows x dims codes) of the treatment columns, levels ordered as the
    journal importer orders them (numbers numerically, contexts by number); None without any."""
    if not dims:
        return None
    names, levels, columns = [], [], []
    for dim in dims:
        # Each distinct label is encoded once; the rows take their label's code.
        label = [name.strip() or None for name in labels[dim]]
        _, level, code = encode_treatments({dim: label}, len(label))
        names.append(dim)
        levels.append(level[0])
        columns.append(code[:, 0][codes.pop(dim)])
    return tuple(names), tuple(levels), np.ascontiguousarray(np.stack(columns, axis=1), dtype=np.int32)


def _fleet_provenance(run: np.ndarray, worker: np.ndarray, worker_names: Sequence[str], boot: np.ndarray | None,
                      boot_names: Sequence[str]) -> dict[str, Any]:
    """What a fleet's reports say per run, as the journal importer provides it: the worker of
    each analysed run, and the boot id it ran under (its first row's), where the file has one."""
    known = np.flatnonzero(run != UNKNOWN)
    ids, first = np.unique(run[known], return_index=True)
    rows = known[first]
    out: dict[str, Any] = {"run_workers": {int(r): worker_names[worker[i]] for r, i in zip(ids.tolist(), rows.tolist())}}
    if boot is not None:
        boots = {int(r): boot_names[boot[i]] for r, i in zip(ids.tolist(), rows.tolist())}
        boots = {r: b for r, b in boots.items() if b.strip()}
        if boots:
            out["run_boot_ids"] = boots
    return out


IMPORTER = Importer(
    name="tidy",
    description="tidy CSV: test, order, value [, metric, run, position, worker, time, status, boot_id]",
    columns=REQUIRED,
    required=REQUIRED,
    sniff=sniff,
    read=read_tidy,
)
