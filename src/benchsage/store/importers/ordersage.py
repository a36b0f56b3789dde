"""Read the trial files OrderSage writes (`*_exp_results.csv`, `*_test_results.csv`).

A test is named by its command, the arm is `order_type`, a run is `run_uuid` on its `hostname`,
the position is `order_number`. A `result` of several comma-separated numbers is several metrics
(`result[0]`, `result[1]`, ...). Run start times and the environment are taken from the
`*_run_results.csv` and `*_env_out.csv` files OrderSage writes next to the trials, when present.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from benchsage.errors import DataError
from benchsage.store.importers import _csv
from benchsage.store.importers.base import Importer, check_arms, exclusion_summary
from benchsage.store.table import UNKNOWN, TrialTable, derive_predecessors

COMMAND = ("exp_command", "test_command")
REQUIRED: tuple[str | tuple[str, ...], ...] = ("run_uuid", COMMAND, "order_number", "order_type", "completion_status", "result")
_TEXT_COLUMNS = ("run_uuid", "hostname", "exp_command", "test_command", "order_type", "completion_status")
_SUCCESS = "Success"
# experiment_results.csv (OrderSage's single-node controller), all_exp_results.csv, hp133_test_results.csv ...
_TRIAL_FILE = re.compile(r"^(?P<prefix>.*?)(exp|test|experiment)_results\.csv$")


def sniff(columns: Sequence[str]) -> bool:
    return any(c in columns for c in COMMAND) and "order_type" in columns


def read_ordersage(path: str | Path, *, require_both_arms: bool = True) -> TrialTable:
    """One OrderSage trial file as a TrialTable, with run starts and environment in provenance.

    provenance["run_starts"] maps run id -> the run's start time (OrderSage's controller clock),
    provenance["environment"] is the list of rows of the environment file.
    """
    path = Path(path)
    cols, chosen = _csv.read_columns(
        path,
        required=REQUIRED,
        categorical=_TEXT_COLUMNS,
        numeric=("time_start",),
        integer=("order_number",),
        lists=("result",),
        status="completion_status",
        is_ok=lambda s: s.strip() == _SUCCESS,
        strict=("time_start", "order_number"),
    )
    n, ok = cols.n, cols.ok
    test_names, test = cols.labels[chosen["exp_command"]], cols.codes[chosen["exp_command"]]
    arm = _csv.arms(path, cols.labels["order_type"], cols.codes["order_type"], "order_type")
    status_names, status = cols.labels["completion_status"], cols.codes["completion_status"]
    worker_names, worker = cols.labels.get("hostname", ("local",)), cols.codes.get("hostname", np.zeros(n, dtype=np.int32))
    uuid_names, uuid = cols.labels["run_uuid"], cols.codes["run_uuid"]
    run = _csv.combined_ids(worker, uuid)
    pos = cols.numbers["order_number"]
    position = np.where(np.isnan(pos), UNKNOWN, pos).astype(np.int32)
    time = cols.numbers.get("time_start", np.full(n, np.nan))
    # Failed trials keep their place in the run: their successor still ran after them.
    predecessor = derive_predecessors(run, position, test)
    excluded, warnings = exclusion_summary(path, ok, status, status_names, run, position, test, ok_label=_SUCCESS)
    row, metric, value, metric_names = _metrics(cols.lists["result"])

    provenance: dict[str, Any] = {"format": "ordersage"}
    notes = list(warnings)
    starts, note = _run_starts(path, run, worker, worker_names, uuid, uuid_names)
    if starts is not None:
        provenance["run_starts"] = starts
    if note:
        notes.append(note)
    environment = _environment(path)
    if environment is not None:
        provenance["environment"] = environment

    table = TrialTable(
        test_names=test_names,
        metric_names=metric_names,
        worker_names=worker_names,
        test=test[row],
        metric=metric,
        arm=arm[row],
        value=value,
        run=run[row],
        position=position[row],
        predecessor=predecessor[row],
        worker=worker[row],
        time=time[row],
        primary=np.ones(len(row), dtype=bool),
        excluded=excluded,
        sources=(str(path),),
        warnings=tuple(notes),
        provenance=provenance,
    )
    if require_both_arms:
        check_arms(table, str(path))
    return table


def _metrics(result: _csv.Values) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """Source row, metric code and value of each number; a lone number is the metric "result"."""
    single = result.count == 1
    width = int(result.count.max()) if len(result.count) else 1
    names = (("result",) if single.any() or not len(single) else ()) + (
        tuple(f"result[{i}]" for i in range(width)) if (~single).any() else ()
    )
    offset = 1 if names[0] == "result" else 0
    metric = np.where(single, 0, offset + result.index).astype(np.int32)
    return result.row, metric, result.value, names


def _siblings(path: Path, kind: str) -> list[Path]:
    """Where OrderSage puts the run or environment file that belongs to a trial file."""
    found = _TRIAL_FILE.match(path.name)
    names = []
    if found:
        names.append(f"{found.group('prefix')}{kind}.csv")
    names.append(f"all_{kind}.csv")
    return [path.with_name(name) for name in dict.fromkeys(names) if path.with_name(name).is_file()]


def _run_starts(
    path: Path,
    run: np.ndarray,
    worker: np.ndarray,
    worker_names: tuple[str, ...],
    uuid: np.ndarray,
    uuid_names: tuple[str, ...],
) -> tuple[dict[int, float] | None, str | None]:
    """Run id -> the run's start time, from the run file; a broken run file only earns a warning."""
    for candidate in _siblings(path, "run_results"):
        try:
            runs, _ = _csv.read_columns(
                candidate, required=("run_uuid", "time_start"), categorical=("run_uuid", "hostname"), numeric=("time_start",)
            )
        except DataError as err:
            return None, f"run start times not used: {err}"
        # Each run id's (hostname, uuid), from its first row in the trial file.
        ids, first = np.unique(run, return_index=True)
        by_uuid: dict[str, list[tuple[str, int]]] = {}
        for rid, i in zip(ids.tolist(), first.tolist()):
            by_uuid.setdefault(uuid_names[uuid[i]], []).append((worker_names[worker[i]], rid))
        run_uuids = [runs.labels["run_uuid"][c] for c in runs.codes["run_uuid"].tolist()]
        if "hostname" in runs.codes:
            hosts: list[str | None] = [runs.labels["hostname"][c] for c in runs.codes["hostname"].tolist()]
        else:
            hosts = [None] * runs.n
        out: dict[int, float] = {}
        for u, host, start in zip(run_uuids, hosts, runs.numbers["time_start"].tolist()):
            matches = by_uuid.get(u, [])
            if len(matches) > 1 and host is not None:
                matches = [m for m in matches if m[0] == host]
            if len(matches) == 1 and np.isfinite(start):
                out[matches[0][1]] = float(start)
        if not out:
            return None, f"run start times not used: {candidate} names none of the runs in {path}"
        return out, None
    return None, None


def _environment(path: Path) -> list[dict[str, str]] | None:
    for candidate in _siblings(path, "env_out"):
        try:
            with candidate.open(newline="", encoding="utf-8") as fh:
                return [dict(row) for row in csv.DictReader(fh)]
        except (OSError, UnicodeDecodeError, csv.Error):
            return None
    return None


IMPORTER = Importer(
    name="ordersage",
    description="OrderSage's *_exp_results.csv / *_test_results.csv",
    columns=("exp_command|test_command", "order_type"),
    required=REQUIRED,
    sniff=sniff,
    read=read_ordersage,
)
