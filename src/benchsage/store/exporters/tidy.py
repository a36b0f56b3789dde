"""Build the tidy trial table of an experiment directory as an Arrow table."""

from __future__ import annotations

import os

import pyarrow as pa

from benchsage.store.importers.benchsage import trial_boot_ids
from benchsage.store.journal import Journal
from benchsage.store.sweeps import sweep_levels
from benchsage.vocabulary import OPTIONAL_HARNESS_METRICS, cell_columns

COLUMNS = ("test", "order", "metric", "value", "unit", "run", "position", "predecessor", "worker", "boot_id", "time", "status", "reason")


def tidy_table(directory: str | os.PathLike[str]) -> pa.Table:
    """Every trial of the completed run attempts, one row per metric, in time order; with
    treatments, a column per treatment dimension (context, context:env_bytes, ..., observer,
    factor:NAME), and with sweeps a column sweep:NAME (the level of the row's test), as the
    tidy importer reads them back."""
    journal = Journal.open(directory, read_only=True)
    try:
        journal.check()  # every table it reads, some through journal.conn
        described = journal.meta().get("treatments") or []
        cell_labels, dims = cell_columns(described)
        cell_of_run = {r["id"]: r["treatment"] for r in journal.runs()}
        extra: dict[str, list] = {d: [] for d in dims}
        tests = journal.tests()
        names = [t["name"] for t in tests]
        swept = sweep_levels(journal.meta(), names)
        extra.update({d: [] for d in swept})
        metrics = [[(m["name"], m.get("unit", "")) for m in t["metrics"]] for t in tests]
        with journal.reading():
            boot_ids = trial_boot_ids(journal.conn)
        values: dict[int, dict[str, float]] = {}
        for trial_id, metric, value in journal.trial_values():
            values.setdefault(trial_id, {})[metric] = value
        cols: dict[str, list] = {c: [] for c in COLUMNS}
        for row in journal.trial_rows():
            (tid, run_id, arm, worker, test_id, pos, pred, started, _e, _d, _x, status, reason, wall, user, sys_, rss, _n, _s) = row
            own = values.get(tid, {})
            harness = {"wall_time": wall, "user_time": user, "sys_time": sys_, "max_rss": rss}
            for metric, unit in metrics[test_id]:
                if metric in OPTIONAL_HARNESS_METRICS and metric not in own:
                    continue  # not measured on that host
                cols["test"].append(names[test_id])
                cols["order"].append(arm)
                cols["metric"].append(metric)
                cols["value"].append((own.get(metric, harness.get(metric))) if status == "ok" else None)
                cols["unit"].append(unit)
                cols["run"].append(run_id)
                cols["position"].append(pos)
                cols["predecessor"].append(names[pred] if pred is not None else None)
                cols["worker"].append(worker)
                cols["boot_id"].append(boot_ids.get(tid))
                cols["time"].append(started)
                cols["status"].append(status)
                cols["reason"].append(reason)
                cell = cell_of_run.get(run_id)
                for d in dims:
                    extra[d].append(cell_labels[cell].get(d) if cell is not None else None)
                for d, levels in swept.items():
                    extra[d].append(levels[test_id])
    finally:
        journal.close()
    schema = pa.schema(
        [
            ("test", pa.string()), ("order", pa.string()), ("metric", pa.string()), ("value", pa.float64()),
            ("unit", pa.string()), ("run", pa.int64()), ("position", pa.int64()), ("predecessor", pa.string()),
            ("worker", pa.string()), ("boot_id", pa.string()), ("time", pa.float64()), ("status", pa.string()), ("reason", pa.string()),
        ] + [(d, pa.string()) for d in extra]
    )
    return pa.table({**cols, **extra}, schema=schema)
