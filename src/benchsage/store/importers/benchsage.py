"""Read a benchsage experiment directory (its journal) into a TrialTable.

Only trials of completed run attempts are analysed; trials of an attempt that was interrupted
stay in the journal but are left out, so a half-done run never mixes with its redo.
"""

from __future__ import annotations

import os
import sqlite3
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from benchsage.store.journal import Journal
from benchsage.store.table import FIRST, HARNESS_METRICS, MetricInfo, TrialTable, encode_treatments
from benchsage.vocabulary import CONTEXT_DIMENSIONS, FINISHED, cell_columns


def read_experiment(path: str | os.PathLike[str]) -> TrialTable:
    directory = os.fspath(path)
    journal = Journal.open(directory, read_only=True)
    try:
        return _read(journal, directory)
    finally:
        journal.close()


def _read(journal: Journal, directory: str) -> TrialTable:
    meta = journal.meta()
    tests = journal.tests()
    test_names = tuple(t["name"] for t in tests)
    metric_names: list[str] = []
    infos: dict[str, MetricInfo] = {}
    primary_pairs: set[tuple[int, str]] = set()
    for t in tests:
        for m in t["metrics"]:
            if m["name"] not in infos:
                infos[m["name"]] = MetricInfo(m["name"], m.get("unit", ""), m.get("better", "lower"))
                metric_names.append(m["name"])
            if m.get("primary"):
                primary_pairs.add((t["id"], m["name"]))
    metric_index = {name: i for i, name in enumerate(metric_names)}

    rows = journal.trial_rows(analysed_only=True).fetchall()
    n_trials = len(rows)
    worker_names: dict[str, int] = {}
    ok = np.zeros(n_trials, dtype=bool)
    run = np.empty(n_trials, dtype=np.int64)
    arm = np.empty(n_trials, dtype=np.int8)
    worker = np.empty(n_trials, dtype=np.int32)
    test = np.empty(n_trials, dtype=np.int32)
    position = np.empty(n_trials, dtype=np.int32)
    predecessor = np.empty(n_trials, dtype=np.int32)
    started = np.empty(n_trials, dtype=np.float64)
    hvals = np.empty((n_trials, 4), dtype=np.float64)
    trial_ids = np.empty(n_trials, dtype=np.int64)
    excluded: Counter[tuple[str, str]] = Counter()
    for i, r in enumerate(rows):
        (tid, run_id, arm_name, worker_name, test_id, pos, pred, t_start, _t_end, _dur, _exit, status, _reason,
         wall, user, sys_, rss, _attempt_no, _attempt_status) = r
        trial_ids[i] = tid
        run[i] = run_id
        arm[i] = 0 if arm_name == "fixed" else 1
        worker[i] = worker_names.setdefault(worker_name, len(worker_names))
        test[i] = test_id
        position[i] = pos
        predecessor[i] = FIRST if pred is None else pred
        started[i] = t_start
        hvals[i] = (wall, user, sys_, rss)
        ok[i] = status == "ok"
        if status != "ok":
            excluded[(test_names[test_id], status)] += 1

    # Declared metric values of ok trials.
    declared: dict[int, list[tuple[int, float]]] = {}
    for trial_id, metric, value in journal.trial_values(analysed_only=True):
        declared.setdefault(trial_id, []).append((metric_index[metric], value))
    row_of = {int(t): i for i, t in enumerate(trial_ids)}

    idx_ok = np.flatnonzero(ok)
    # Harness metrics: 4 rows per ok trial.
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("src", "metric", "value")}
    for j, name in enumerate(HARNESS_METRICS):
        cols["src"].append(idx_ok)
        cols["metric"].append(np.full(len(idx_ok), metric_index[name], dtype=np.int32))
        cols["value"].append(hvals[idx_ok, j])
    if declared:
        src, met, val = [], [], []
        for trial_id, items in declared.items():
            i = row_of[trial_id]
            for m, v in items:
                src.append(i)
                met.append(m)
                val.append(v)
        cols["src"].append(np.asarray(src, dtype=np.int64))
        cols["metric"].append(np.asarray(met, dtype=np.int32))
        cols["value"].append(np.asarray(val, dtype=np.float64))
    src = np.concatenate(cols["src"]) if cols["src"] else np.zeros(0, dtype=np.int64)
    metric = np.concatenate(cols["metric"]) if cols["metric"] else np.zeros(0, dtype=np.int32)
    value = np.concatenate(cols["value"]) if cols["value"] else np.zeros(0)
    order = np.lexsort((metric, src))
    src, metric, value = src[order], metric[order], value[order]
    is_primary = np.zeros((max(len(test_names), 1), max(len(metric_names), 1)), dtype=bool)
    for test_id, name in primary_pairs:
        is_primary[test_id, metric_index[name]] = True
    primary = is_primary[test[src], metric] if len(src) else np.zeros(0, dtype=bool)

    warnings = []
    if excluded:
        detail = ", ".join(f"{name}: {count} {status}" for (name, status), count in sorted(excluded.items()))
        warnings.append(f"{directory}: {sum(excluded.values())} trials excluded because they did not succeed ({detail})")
    attempts = journal.attempts()
    redone = [a for a in attempts if a["status"] == "interrupted"]
    if redone:
        warnings.append(
            f"{directory}: {len(redone)} interrupted run attempt(s) were redone from their reset; their trials are kept in the journal but not analysed"
        )
    runs = journal.runs()
    unfinished = [r for r in runs if r["status"] not in FINISHED]  # runs a sequential stop made unnecessary are not missing
    if unfinished:
        warnings.append(
            f"{directory}: the experiment is unfinished ({len(runs) - len(unfinished)} of {len(runs)} runs done); "
            f"finish it with `benchsage resume {directory}`"
        )
    warnings.extend(meta.get("spec_warnings") or ())  # an A/A test, said by the spec
    warnings.extend(leftover_warnings(journal.conn, test_names))
    done_attempts = {a["run_id"]: a for a in attempts if a["status"] == "done"}
    # A fleet's reports say how many boots each worker's runs saw (reboot resets at work).
    boot_ids = _run_boot_ids(journal) if len(worker_names) > 1 else {}
    provenance: dict[str, Any] = {
        "kind": "benchsage",
        "directory": directory,
        "name": meta.get("name"),
        "spec": meta.get("spec_text"),
        "spec_path": meta.get("spec_path"),
        "seed": meta.get("seed"),
        "runs_per_arm": meta.get("runs_per_arm"),
        "random_orders": meta.get("random_orders", "shuffle"),  # journals before Williams orders shuffled
        "tool_version": meta.get("tool_version"),
        "created": meta.get("created"),
        "reset": meta.get("reset"),
        "plan": [{"run": r["id"], "arm": r["arm"], "order": [test_names[i] for i in r["order"]], "status": r["status"]} for r in runs],
        "run_starts": {r: a["started"] for r, a in done_attempts.items()},
        "snapshots": {r: a["snapshot"] for r, a in done_attempts.items() if a["snapshot"]},
        "run_workers": {r: a["worker"] for r, a in done_attempts.items()},
        "alpha": meta.get("alpha"),
        "correction": meta.get("correction"),
    }
    if meta.get("sequential"):  # the looks of a sequential experiment, for the analysis's "sequential"
        provenance["sequential"] = {"plan": meta["sequential"], "looks": [look["record"] for look in journal.looks()]}
    provenance.update(analysis_meta(meta))
    described = meta.get("treatments") or []
    dims: tuple[str, ...] = ()
    dim_levels: tuple[tuple[str, ...], ...] = ()
    treatment = None
    if described:
        dims, dim_levels, treatment = _treatment_columns(described, runs, run[src])
        provenance["treatments"] = described
        provenance["run_contexts"] = {r["id"]: described[r["treatment"]]["context"] for r in runs
                                      if r["treatment"] is not None and "context" in described[r["treatment"]]}
        skipped = [r for r in runs if r["status"] == "skipped"]
        if skipped:
            contexts = sorted({str(described[r["treatment"]].get("context")) for r in skipped if r["treatment"] is not None},
                              key=lambda c: (len(c), c))
            warnings.append(f"{directory}: the link-order build failed for context(s) {', '.join(contexts)}: their {len(skipped)} "
                            "runs were skipped and are not in the analysis")
    run_boot_ids = {r: boot_ids[r] for r in done_attempts if boot_ids.get(r) is not None}
    if run_boot_ids:
        provenance["run_boot_ids"] = run_boot_ids
    return TrialTable(
        test_names=test_names,
        metric_names=tuple(metric_names),
        worker_names=tuple(worker_names) or ("local",),
        test=test[src],
        metric=metric.astype(np.int32),
        arm=arm[src],
        value=value,
        run=run[src],
        position=position[src],
        predecessor=predecessor[src],
        worker=worker[src] if len(worker_names) else np.zeros(len(src), dtype=np.int32),
        time=started[src],
        primary=primary,
        metrics_info=infos,
        excluded=int(sum(excluded.values())),
        sources=(directory,),
        warnings=tuple(warnings),
        provenance=provenance,
        dims=dims,
        dim_levels=dim_levels,
        treatment=treatment,
    )


def _treatment_columns(described: list[dict[str, Any]], runs: list[dict[str, Any]], row_runs: np.ndarray) -> tuple[Any, Any, np.ndarray]:
    """The table's treatment dimensions, from the treatment each row's run carried."""
    cell_labels, dims = cell_columns(described)
    cell_of_run = {r["id"]: r["treatment"] for r in runs}
    run_ids = np.unique(row_runs)
    cells = np.array([cell_of_run.get(int(r)) if cell_of_run.get(int(r)) is not None else -1 for r in run_ids], dtype=np.int64)
    per_row_cell = cells[np.searchsorted(run_ids, row_runs)] if len(row_runs) else np.zeros(0, dtype=np.int64)
    dims_t, levels, cell_codes = encode_treatments({d: [labels.get(d) for labels in cell_labels] for d in dims}, len(cell_labels))
    # Rows get their cell's codes; a row whose run carries no cell gets -1 everywhere.
    padded = np.vstack([cell_codes, np.full((1, len(dims_t)), -1, dtype=np.int32)])
    return dims_t, levels, np.ascontiguousarray(padded[per_row_cell])


_ANALYSIS_KEYS = ("compare", "observer_baseline", "observer_levels", "factors", "context_dimensions")


def analysis_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """What the analyses of treatments read of the spec, as the journal recorded it when the
    experiment was created (execute/create.py): the declared comparisons, the observer's
    lightest level and its levels in declared order, the factors' levels in declared order,
    the context's dimensions; only those the spec declares. A journal written before these
    were recorded holds them in its copy of the spec's text, whose tables are read as data
    (nothing of the spec runs and no file of the spec's folder is read)."""
    recorded = {key: meta[key] for key in _ANALYSIS_KEYS if key in meta} if "compare" in meta else _from_spec_text(meta)
    return {key: value for key, value in recorded.items() if value}


def _from_spec_text(meta: dict[str, Any]) -> dict[str, Any]:
    try:
        doc = tomllib.loads(meta.get("spec_text") or "")
    except tomllib.TOMLDecodeError:
        return {}
    out: dict[str, Any] = {}
    out["compare"] = [{"a": c.get("a"), "b": c.get("b"), "metric": c.get("metric")}
                      for c in doc.get("compare") or () if isinstance(c, dict)]
    levels = (doc.get("observer") or {}).get("levels") if isinstance(doc.get("observer"), dict) else None
    if isinstance(levels, dict) and levels:
        out["observer_levels"] = list(levels)
        out["observer_baseline"] = next((name for name, wrapper in levels.items() if not str(wrapper).strip()), next(iter(levels)))
    out["factors"] = [{"name": f.get("name"), "levels": [str(v) for v in f.get("levels") or ()]}
                      for f in doc.get("factor") or () if isinstance(f, dict)]
    context = doc.get("context")
    out["context_dimensions"] = [d for d in CONTEXT_DIMENSIONS if d in context] if isinstance(context, dict) else []
    return out


def trial_boot_ids(conn: sqlite3.Connection) -> dict[int, str | None]:
    """Each trial's boot id (the host's boot identity while it ran); {} for a journal written
    before trials recorded one (no boot_id column)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(trials)")}
    if "boot_id" not in columns:
        return {}
    return {int(i): b for i, b in conn.execute("SELECT id, boot_id FROM trials")}


def leftover_warnings(conn: sqlite3.Connection, test_names: tuple[str, ...]) -> list[str]:
    """One warning per test whose analysed trials left processes running when they ended (the
    harness killed them before the next trial); [] for a journal written before trials
    recorded leftovers (no leftovers column: a read-only journal of an older benchsage)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(trials)")}
    if "leftovers" not in columns:
        return []
    rows = conn.execute(
        """SELECT t.test_id, COUNT(*), SUM(t.leftovers > 0), SUM(t.leftovers) FROM trials t
           JOIN attempts a ON t.attempt_id = a.id WHERE a.status = 'done' GROUP BY t.test_id ORDER BY t.test_id"""
    ).fetchall()
    out = []
    for test_id, trials, leaving, processes in rows:
        if leaving:
            out.append(
                f"{test_names[test_id]}: {leaving} of {trials} trials left processes running ({processes} in all), killed before "
                "the next trial: a leftover would perturb whatever runs next (an order effect made by the test); "
                "stop them in the test itself (a [reset] runs between runs, not between trials)"
            )
    return out


def _run_boot_ids(journal: Journal) -> dict[int, str | None]:
    """The boot id each analysed run's trials ran under (its first trial's), by run id; {} for a
    journal written before trials recorded one."""
    by_trial = trial_boot_ids(journal.conn)
    if not by_trial:
        return {}
    rows = journal.conn.execute(
        "SELECT t.run_id, MIN(t.id) FROM trials t JOIN attempts a ON t.attempt_id = a.id WHERE a.status = 'done' GROUP BY t.run_id"
    ).fetchall()
    return {int(run): by_trial.get(int(first)) for run, first in rows}


def is_experiment_dir(path: str | os.PathLike[str]) -> bool:
    return Path(path).is_dir() and Journal.exists(path)
