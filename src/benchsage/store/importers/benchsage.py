"""Read a benchsage experiment directory (its journal) into a TrialTable.

Only trials of completed run attempts are analysed; trials of an attempt that was interrupted
stay in the journal but are left out, so a half-done run never mixes with its redo.
"""

from __future__ import annotations

import os
import sqlite3
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchsage.errors import DataError
from benchsage.store.journal import Journal
from benchsage.store.outcomes import TestOutcomes, by_count, output_tail
from benchsage.store.sweeps import sweep_levels
from benchsage.store.table import FIRST, FIXED_CODE, RANDOM_CODE, MetricInfo, TrialTable, encode_treatments
from benchsage.vocabulary import CONTEXT_DIMENSIONS, FINISHED, FIXED, HARNESS_METRICS, OK, SHUFFLE, cell_columns


def read_experiment(path: str | os.PathLike[str]) -> TrialTable:
    directory = os.fspath(path)
    journal = Journal.open(directory, read_only=True)
    try:
        with journal.reading():
            journal.check()  # every table it reads, some through journal.conn
            return _read(journal, directory)
    finally:
        journal.close()


@dataclass
class _Trials:
    """The journal's analysed trials, one entry per trial in time order."""

    trial_ids: np.ndarray
    ok: np.ndarray
    run: np.ndarray
    arm: np.ndarray
    worker: np.ndarray
    worker_names: dict[str, int]
    test: np.ndarray
    position: np.ndarray
    predecessor: np.ndarray
    started: np.ndarray
    harness: np.ndarray  # (trials, 4): wall, user and system time, max RSS
    excluded: Counter[tuple[str, str]]  # (test, status) of the trials that did not succeed
    first_failure: dict[int, tuple[int, str | None]]  # test id -> (trial id, reason) of its first trial that did not succeed
    statuses: Counter[tuple[int, str]]  # (test id, status) of every analysed trial


def _read(journal: Journal, directory: str) -> TrialTable:
    meta = journal.meta()
    tests = journal.tests()
    test_names = tuple(t["name"] for t in tests)
    metric_names, infos, primary_pairs = _metrics(tests)
    metric_index = {name: i for i, name in enumerate(metric_names)}
    trials = _trials(journal, test_names)
    src, metric, value = _values(journal, trials, metric_index)
    # The primary (test, metric) pairs as keys test * width + metric: as many as the tests declare.
    width = max(len(metric_names), 1)
    primary_keys = np.array(sorted(test_id * width + metric_index[name] for test_id, name in primary_pairs), dtype=np.int64)
    primary = np.isin(trials.test[src].astype(np.int64) * width + metric, primary_keys)

    runs = journal.runs()
    attempts = journal.attempts()
    warnings = _warnings(journal, directory, meta, runs, attempts, test_names)
    provenance = _provenance(journal, directory, meta, runs, attempts, test_names, len(trials.worker_names))
    described = meta.get("treatments") or []
    dims: tuple[str, ...] = ()
    dim_levels: tuple[tuple[str, ...], ...] = ()
    treatment = None
    if described:
        dims, dim_levels, treatment = _treatment_columns(described, runs, trials.run[src])
    swept = sweep_levels(meta, test_names)
    if swept:
        dims, dim_levels, treatment = _with_sweeps(swept, len(test_names), trials.test[src], (dims, dim_levels, treatment))
    return TrialTable(
        test_names=test_names,
        metric_names=tuple(metric_names),
        worker_names=tuple(trials.worker_names) or ("local",),
        test=trials.test[src],
        metric=metric.astype(np.int32),
        arm=trials.arm[src],
        value=value,
        run=trials.run[src],
        position=trials.position[src],
        predecessor=trials.predecessor[src],
        worker=trials.worker[src] if len(trials.worker_names) else np.zeros(len(src), dtype=np.int32),
        time=trials.started[src],
        primary=primary,
        metrics_info=infos,
        excluded=int(sum(trials.excluded.values())),
        sources=(directory,),
        warnings=tuple(warnings),
        provenance=provenance,
        dims=dims,
        dim_levels=dim_levels,
        treatment=treatment,
        outcomes=_outcomes(journal, tests, trials),
    )


def _metrics(tests: list[dict[str, Any]]) -> tuple[list[str], dict[str, MetricInfo], set[tuple[int, str]]]:
    """Every metric the tests record, in order of first appearance, what each measures, and the
    (test, metric) pairs of the primary family."""
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
    return metric_names, infos, primary_pairs


def _trials(journal: Journal, test_names: tuple[str, ...]) -> _Trials:
    rows = list(journal.trial_rows(analysed_only=True))
    n = len(rows)
    t = _Trials(
        trial_ids=np.empty(n, dtype=np.int64), ok=np.zeros(n, dtype=bool), run=np.empty(n, dtype=np.int64),
        arm=np.empty(n, dtype=np.int8), worker=np.empty(n, dtype=np.int32), worker_names={}, test=np.empty(n, dtype=np.int32),
        position=np.empty(n, dtype=np.int32), predecessor=np.empty(n, dtype=np.int32), started=np.empty(n, dtype=np.float64),
        harness=np.empty((n, 4), dtype=np.float64), excluded=Counter(), first_failure={}, statuses=Counter(),
    )
    for i, r in enumerate(rows):
        (tid, run_id, arm_name, worker_name, test_id, pos, pred, t_start, _t_end, _dur, _exit, status, reason,
         wall, user, sys_, rss, _attempt_no, _attempt_status) = r
        t.trial_ids[i] = tid
        t.run[i] = run_id
        t.arm[i] = FIXED_CODE if arm_name == FIXED else RANDOM_CODE
        t.worker[i] = t.worker_names.setdefault(worker_name, len(t.worker_names))
        t.test[i] = test_id
        t.position[i] = pos
        t.predecessor[i] = FIRST if pred is None else pred
        t.started[i] = t_start
        t.harness[i] = (wall, user, sys_, rss)
        t.ok[i] = status == OK
        t.statuses[(test_id, status)] += 1
        if status != OK:
            t.excluded[(test_names[test_id], status)] += 1
            t.first_failure.setdefault(test_id, (tid, reason))
    return t


def _outcomes(journal: Journal, tests: list[dict[str, Any]], trials: _Trials) -> tuple[TestOutcomes, ...]:
    """How each test's analysed trials ended; a failed test's first failure with its output."""
    out = []
    for t in tests:
        counts = {status: n for (test_id, status), n in trials.statuses.items() if test_id == t["id"]}
        reason = tail = None
        if t["id"] in trials.first_failure:
            trial_id, reason = trials.first_failure[t["id"]]
            tail = output_tail(*journal.trial_output(trial_id))
        primary = tuple(m["name"] for m in t["metrics"] if m.get("primary"))
        out.append(TestOutcomes(t["name"], by_count(counts), reason, tail, primary))
    return tuple(out)


def _values(journal: Journal, trials: _Trials, metric_index: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The table's rows: (the trial each comes from, metric, value), ordered by trial then
    metric; the harness's four metrics of every ok trial and its declared metrics' values."""
    declared: dict[int, list[tuple[int, float]]] = {}
    for trial_id, metric, value in journal.trial_values(analysed_only=True):
        index = metric_index.get(metric)
        if index is None:
            raise DataError(f"{journal.path}: table 'trial_values', row trial_id {trial_id}: metric {metric!r} is not a metric of "
                            "any test of the journal (table 'tests', column 'metrics')")
        declared.setdefault(trial_id, []).append((index, value))
    row_of = {int(t): i for i, t in enumerate(trials.trial_ids)}
    idx_ok = np.flatnonzero(trials.ok)
    _check_harness(journal.path, trials, idx_ok, metric_index)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("src", "metric", "value")}
    for j, name in enumerate(HARNESS_METRICS):
        cols["src"].append(idx_ok)
        cols["metric"].append(np.full(len(idx_ok), metric_index[name], dtype=np.int32))
        cols["value"].append(trials.harness[idx_ok, j])
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
    src_all = np.concatenate(cols["src"]) if cols["src"] else np.zeros(0, dtype=np.int64)
    metric = np.concatenate(cols["metric"]) if cols["metric"] else np.zeros(0, dtype=np.int32)
    value = np.concatenate(cols["value"]) if cols["value"] else np.zeros(0)
    order = np.lexsort((metric, src_all))
    return src_all[order], metric[order], value[order]


def _check_harness(path: str, trials: _Trials, idx_ok: np.ndarray, metric_index: dict[str, int]) -> None:
    """Every successful trial has the harness's measurements, and the tests declare them."""
    missing = [name for name in HARNESS_METRICS if name not in metric_index]
    if missing and len(idx_ok):
        raise DataError(f"{path}: table 'tests', column 'metrics': no test declares {', '.join(missing)}, which the harness "
                        "records for every trial")
    unknown = ~np.isfinite(trials.harness[idx_ok])
    if unknown.any():
        row, column = (int(k) for k in np.argwhere(unknown)[0])
        raise DataError(f"{path}: table 'trials', row id {int(trials.trial_ids[idx_ok[row]])}: column '{HARNESS_METRICS[column]}' "
                        "holds nothing (NULL), where a successful trial has its measurement")


def _warnings(journal: Journal, directory: str, meta: dict[str, Any], runs: list[dict[str, Any]], attempts: list[dict[str, Any]],
              test_names: tuple[str, ...]) -> list[str]:
    """What the importer notices about the runs (failed trials are the table's outcomes)."""
    warnings = []
    redone = [a for a in attempts if a["status"] == "interrupted"]
    if redone:
        warnings.append(
            f"{directory}: {len(redone)} interrupted run attempt(s) were redone from their reset; their trials are kept in the journal but not analysed"
        )
    unfinished = [r for r in runs if r["status"] not in FINISHED]  # runs a sequential stop made unnecessary are not missing
    if unfinished:
        warnings.append(
            f"{directory}: the experiment is unfinished ({len(runs) - len(unfinished)} of {len(runs)} runs done); "
            f"finish it with `benchsage resume {directory}`"
        )
    warnings.extend(meta.get("spec_warnings") or ())  # an A/A test, said by the spec
    warnings.extend(leftover_warnings(journal.conn, test_names))
    described = meta.get("treatments") or []
    skipped = [r for r in runs if r["status"] == "skipped"]
    if described and skipped:
        contexts = sorted({str(described[r["treatment"]].get("context")) for r in skipped if r["treatment"] is not None},
                          key=lambda c: (len(c), c))
        warnings.append(f"{directory}: the link-order build failed for context(s) {', '.join(contexts)}: their {len(skipped)} "
                        "runs were skipped and are not in the analysis")
    return warnings


def _provenance(journal: Journal, directory: str, meta: dict[str, Any], runs: list[dict[str, Any]], attempts: list[dict[str, Any]],
                test_names: tuple[str, ...], workers: int) -> dict[str, Any]:
    """Where the trials come from: the experiment's record, its plan, each analysed run's
    start, worker, snapshot and boot, its looks, and what the analyses need of its spec."""
    done_attempts = {a["run_id"]: a for a in attempts if a["status"] == "done"}
    provenance: dict[str, Any] = {
        "kind": "benchsage",
        "directory": directory,
        "name": meta.get("name"),
        "spec": meta.get("spec_text"),
        "spec_path": meta.get("spec_path"),
        "seed": meta.get("seed"),
        "runs_per_arm": meta.get("runs_per_arm"),
        "random_orders": meta.get("random_orders", SHUFFLE),  # journals before Williams orders shuffled
        "tool_version": meta.get("tool_version"),
        "created": meta.get("created"),
        "reset": meta.get("reset"),
        "commands": {t["name"]: t["command"] for t in journal.tests()},  # what each test ran (hyperfine's "command")
        "plan": [{"run": r["id"], "arm": r["arm"], "order": [test_names[i] for i in r["order"]], "status": r["status"]} for r in runs],
        "run_starts": {r: a["started"] for r, a in done_attempts.items()},
        "snapshots": {r: a["snapshot"] for r, a in done_attempts.items() if a["snapshot"]},
        "run_workers": {r: a["worker"] for r, a in done_attempts.items()},
        "alpha": meta.get("alpha"),
        "correction": meta.get("correction"),
    }
    if meta.get("deploy"):  # what [deploy] shipped, and each host's verification
        provenance["deploy"] = {**meta["deploy"], "hosts": journal.deploys()}
    if meta.get("sequential"):  # the looks of a sequential experiment, for the analysis's "sequential"
        provenance["sequential"] = {"plan": meta["sequential"], "looks": [look["record"] for look in journal.looks()]}
    described = meta.get("treatments") or []
    if described:
        provenance["treatments"] = described
    provenance.update(analysis_meta(meta))
    if described:
        provenance["run_contexts"] = {r["id"]: described[r["treatment"]]["context"] for r in runs
                                      if r["treatment"] is not None and "context" in described[r["treatment"]]}
    # A fleet's reports say how many boots each worker's runs saw (reboot resets at work).
    boot_ids = _run_boot_ids(journal) if workers > 1 else {}
    run_boot_ids = {r: boot_ids[r] for r in done_attempts if boot_ids.get(r) is not None}
    if run_boot_ids:
        provenance["run_boot_ids"] = run_boot_ids
    return provenance


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


def _with_sweeps(swept: dict[str, list[str | None]], n_tests: int, row_tests: np.ndarray,
                 cells: tuple[Any, Any, np.ndarray | None]) -> tuple[Any, Any, np.ndarray]:
    """The treatment dimensions with a "sweep:NAME" dimension per sweep appended: each row the
    level of its test (-1 for a test that does not sweep NAME)."""
    dims, levels, codes = cells
    sweep_dims, sweep_levels_, per_test = encode_treatments(swept, n_tests)
    per_row = per_test[row_tests] if len(row_tests) else np.zeros((0, len(sweep_dims)), dtype=np.int32)
    before = codes if codes is not None else np.zeros((len(row_tests), 0), dtype=np.int32)
    return tuple(dims) + sweep_dims, tuple(levels) + sweep_levels_, np.ascontiguousarray(np.hstack([before, per_row]), dtype=np.int32)


_ANALYSIS_KEYS = ("compare", "observer_baseline", "observer_levels", "factors", "context_dimensions", "sweeps", "test_sweeps")


def analysis_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """What the analyses of treatments read of the spec, as the journal recorded it when the
    experiment was created (execute/create.py): the declared comparisons, the observer's
    lightest level and its levels in declared order, the factors' levels in declared order,
    the context's dimensions, the sweeps' levels and each expanded test's; only those the spec
    declares. A journal written before these
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
