"""The analysis side of fleets: each worker's own verdict, whether the workers measure the same
thing (the fleet diagnostic), and whether they ran the same software (the identity diagnostic).

The combined, stratified rows are analyze/order.py's (see analyze/strata.py); this module adds
what only a fleet has.

Per-worker verdicts: each worker's rows analysed alone, exactly as a one-worker experiment,
with the family-wise correction over that worker's comparisons.

Fleet diagnostic, per primary (test, metric) with at least two workers holding `min_values`
values (both arms together): the k-sample Kruskal-Wallis test across workers (df = workers - 1;
Kruskal & Wallis 1952), one family over the tests (Bonferroni or Holm, as the analysis);
`spread_pct` = (largest - smallest worker median) / smallest x 100 (None when the smallest is
not positive). Outliers, for a test whose workers differ: Dunn's pairwise comparisons of its
workers (Dunn 1964, the post-hoc test of Kruskal-Wallis, on the same ranks) at the Bonferroni
share alpha / m of the test family (m tests), stepped down by Shaffer's (1986) method with the
Kruskal-Wallis test as its gate (shaffer_limits): once the gate rejects that all workers agree,
at most t of the pairs can be alike, t given by the ways W workers can fall into groups of
equals (with three workers, one pair at most: each pair is tested at the full share, where Holm
over the three pairs spent a third of it), so the claims of all tests together keep the
family-wise error at most alpha. A worker is an outlier when it differs from more than half of
the other workers. That names the odd machine of a fleet whose majority agrees (1, 1, 1.5: the
third), names every worker when none agrees with the others (1, 1.5, 3), and, unlike a test of
each worker against the others pooled or against the median of their medians, does not flag a
normal worker of three because what it is compared with contains the odd one. The gate (the
test's own Kruskal-Wallis being significant) keeps an agreeing fleet's outliers empty. With two
workers that differ, both are listed: two machines cannot say which one is odd.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Sequence

import numpy as np

from benchsage.analyze.effects import detectable
from benchsage.analyze.identity import Identity, compare_workers
from benchsage.analyze.notes import WorkersDiffer
from benchsage.analyze.order import analyze_table
from benchsage.analyze.sorted_values import comparisons
from benchsage.analyze.verdict import Analysis, FleetRow, TestVerdict, WorkerVerdicts
from benchsage.stats.correction import adjust
from benchsage.stats.median_ci import grouped_median_ci
from benchsage.stats.stratified import dunn, kruskal_k, pair_codes
from benchsage.store.table import TrialTable


def _num(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def present_workers(table: TrialTable) -> list[int]:
    """Codes of the workers that hold rows, in the table's worker order."""
    if len(table) == 0:
        return []
    return np.flatnonzero(np.bincount(table.worker, minlength=len(table.worker_names))).tolist()


def worker_verdicts(
    table: TrialTable,
    combined: Analysis,
    *,
    alpha: float,
    correction: str,
    ci_method: str = "exact-binomial",
    ci_level: float = 0.95,
    ci_case_rule: str = "paper",
    min_values: int = 5,
    owner: np.ndarray | None = None,
) -> tuple[WorkerVerdicts, ...]:
    """Each worker's rows analysed alone, corrected within the worker (in the table's worker order).

    owner: the worker of each comparison (the i-th of combined.tests), from
    strata.comparison_workers, when every comparison's values come from one worker (each worker
    ran its own tests). Then a worker's rows are the combined rows of its comparisons: only the
    correction differs, and it is recomputed instead of the whole analysis.
    """
    if owner is not None:
        return _recorrected(table, combined, owner, alpha=alpha, correction=correction)
    out = []
    for w in present_workers(table):
        own = analyze_table(
            table.select(table.worker == w), alpha=alpha, correction=correction, ci_method=ci_method, ci_level=ci_level,
            ci_case_rule=ci_case_rule, min_values=min_values,
        )
        out.append(WorkerVerdicts(table.worker_names[w], own.order_matters, own.alpha_corrected, own.tests))
    return tuple(out)


def recorrect(verdicts: Sequence[TestVerdict], correction: str, alpha: float) -> tuple[tuple[TestVerdict, ...], float | None, bool]:
    """The rows corrected as one analysis of them alone would: primary and other metrics each
    their own family. Returns (rows, the primary family's alpha_corrected, order_matters)."""
    p = np.array([v.kw_p if v.kw_p is not None else np.nan for v in verdicts], dtype=np.float64)
    primary = np.array([v.primary for v in verdicts], dtype=bool)
    p_adj = np.full(len(verdicts), np.nan)
    reject = np.zeros(len(verdicts), dtype=bool)
    alpha_corrected = None
    m = 0
    for family in (primary, ~primary):
        corr = adjust(np.where(family, p, np.nan), correction, alpha)
        p_adj[family], reject[family] = corr.p_adjusted[family], corr.reject[family]
        if family is primary:
            alpha_corrected, m = corr.alpha_corrected, corr.m
    # Whether each primary row can reach the new family's level is judged again; its shift
    # interval and detectable shift keep the level they were computed at (shift_level says which).
    rows = tuple(
        dataclasses.replace(v, p_adjusted=_num(p_adj[i]), significant=bool(reject[i]) if v.kw_p is not None else None,
                            **({"detectable": detectable(v.least_p, m, alpha)} if v.primary else {}))
        for i, v in enumerate(verdicts)
    )
    return rows, alpha_corrected, bool(np.any(reject & primary))


def _recorrected(table: TrialTable, combined: Analysis, owner: np.ndarray, *, alpha: float, correction: str) -> tuple[WorkerVerdicts, ...]:
    if len(owner) != len(combined.tests):
        raise ValueError(f"owner names the worker of {len(owner)} comparisons, the analysis has {len(combined.tests)}")
    by_worker: dict[int, list[TestVerdict]] = {}
    for v, w in zip(combined.tests, owner.tolist()):
        by_worker.setdefault(w, []).append(v)
    out = []
    for w in present_workers(table):
        rows, alpha_corrected, matters = recorrect(by_worker.get(w, []), correction, alpha)
        out.append(WorkerVerdicts(table.worker_names[w], matters, alpha_corrected, rows))
    return tuple(out)


def fleet_rows(table: TrialTable, *, alpha: float, correction: str, min_values: int = 5) -> tuple[FleetRow, ...]:
    """The fleet diagnostic of every primary (test, metric) measured by at least two workers
    (see the module docstring)."""
    keep = table.primary & np.isfinite(table.value)
    t = table if keep.all() else table.select(keep)
    if len(t) == 0:
        return ()
    comp, comp_test, comp_metric = comparisons(t)
    n_comp = len(comp_test)
    n_workers = max(len(t.worker_names), 1)
    worker = t.worker.astype(np.int64)
    pair, pair_comp, n_pairs = pair_codes(comp, worker, n_workers)
    pair_worker = np.zeros(n_pairs, dtype=np.int64)
    pair_worker[pair] = worker
    n_pair = np.bincount(pair, minlength=n_pairs)
    eligible_pair = n_pair >= min_values
    workers_of = np.bincount(pair_comp, weights=eligible_pair, minlength=n_comp).astype(np.int64)
    examined = workers_of >= 2
    rows = eligible_pair[pair] & examined[comp]
    if not rows.any():
        return ()
    value, c, w = t.value[rows], comp[rows], worker[rows]
    kw = kruskal_k(value, c, w, n_comp, n_workers)
    medians = grouped_median_ci(t.value, pair, n_pairs).median
    comps = np.flatnonzero(examined)
    corr = adjust(kw.pvalue[comps], correction, alpha)
    share = alpha / corr.m if corr.m else alpha
    pairwise = dunn(value, c, w, n_comp, n_workers)
    pairs_p: dict[int, list[tuple[int, int, float]]] = {}
    for cc, wi, wj, pp in zip(pairwise.group.tolist(), pairwise.i.tolist(), pairwise.j.tolist(), pairwise.pvalue.tolist()):
        pairs_p.setdefault(cc, []).append((wi, wj, pp))
    pairs_of: dict[int, list[int]] = {}
    for j in np.flatnonzero(eligible_pair).tolist():
        pairs_of.setdefault(int(pair_comp[j]), []).append(j)
    names = t.worker_names
    out = []
    for i, cc in enumerate(comps.tolist()):
        own = sorted(pairs_of.get(cc, []), key=lambda j: int(pair_worker[j]))
        meds = {names[int(pair_worker[j])]: _num(medians[j]) for j in own}
        finite = [m for m in meds.values() if m is not None]
        spread = (max(finite) - min(finite)) / min(finite) * 100.0 if finite and min(finite) > 0 else None
        significant = bool(corr.reject[i]) if math.isfinite(kw.pvalue[cc]) else None
        outliers: tuple[str, ...] = ()
        if significant:
            outliers = tuple(names[x] for x in _outliers(pairs_p.get(cc, []), len(own), share))
        out.append(
            FleetRow(
                test=t.test_names[int(comp_test[cc])],
                metric=t.metric_names[int(comp_metric[cc])],
                workers=len(own),
                kw_h=_num(kw.statistic[cc]),
                df=int(kw.df[cc]),
                kw_p=_num(kw.pvalue[cc]),
                p_adjusted=_num(corr.p_adjusted[i]),
                significant=significant,
                spread_pct=spread,
                medians=meds,
                n={names[int(pair_worker[j])]: int(n_pair[j]) for j in own},
                outliers=outliers,
            )
        )
    return tuple(out)


def _outliers(pairs: Sequence[tuple[int, int, float]], n_workers: int, level: float) -> list[int]:
    """Workers that differ from more than half of the others, the pairs decided by Shaffer's
    step-down at `level` after the gate (see shaffer_limits)."""
    usable = sorted(((i, j, p) for i, j, p in pairs if math.isfinite(p)), key=lambda pair: pair[2])
    if not usable:
        return []
    limits = shaffer_limits(n_workers)
    differs: dict[int, int] = {}
    for step, (i, j, p) in enumerate(usable):
        true_at_most = limits[min(step, len(limits) - 1)]
        if true_at_most > 0 and p > level / true_at_most:
            break  # step-down: the first pair kept stops the procedure
        differs[i] = differs.get(i, 0) + 1
        differs[j] = differs.get(j, 0) + 1
    return sorted(x for x, k in differs.items() if k > (n_workers - 1) / 2)


def shaffer_limits(n_workers: int) -> tuple[int, ...]:
    """t_i, i = 1..W(W-1)/2: the most pairs of W workers that can still be alike when i - 1 pairs
    differ and the gate rejected that all are alike. Shaffer (1986), "Modified sequentially
    rejective multiple test procedures", JASA 81(395): the pairs that are alike are those within
    groups of equal workers, so their possible numbers are S(W) = {C(g1, 2) + ... : g1 + ... = W};
    t_i = max{s in S(W): s <= min(M - i + 1, M - 1)}, M = C(W, 2). The i-th smallest p is rejected
    when p <= level / t_i (t_i = 0: the gate decided it). Three workers: S = {0, 1, 3}, t = 1, 1, 1."""
    possible = _alike_counts(n_workers)
    pairs = n_workers * (n_workers - 1) // 2
    return tuple(max(s for s in possible if s <= min(pairs - i, pairs - 1)) for i in range(pairs))


def _alike_counts(n: int) -> frozenset[int]:
    """S(n): the numbers of alike pairs of n workers split into groups of equals."""
    counts = [frozenset({0}), frozenset({0})]
    for k in range(2, n + 1):
        counts.append(frozenset(j * (j - 1) // 2 + x for j in range(1, k + 1) for x in counts[k - j]))
    return counts[n] if n < len(counts) else frozenset({0})


def fleet_warnings(rows: Sequence[FleetRow]) -> list[WorkersDiffer]:
    """One warning when the workers disagree: how many tests, the largest spread, and the
    workers most often odd."""
    differing = [r for r in rows if r.significant]
    if not differing:
        return []
    counts: dict[str, int] = {}
    for r in differing:
        for w in r.outliers:
            counts[w] = counts.get(w, 0) + 1
    odd = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    largest = max(differing, key=lambda r: r.spread_pct if r.spread_pct is not None else -1.0)
    spread = (largest.spread_pct, largest.test, largest.metric) if largest.spread_pct is not None else None
    return [WorkersDiffer(len(differing), len(rows), spread, odd)]


def runs_and_boots(workers: Sequence[WorkerVerdicts], provenance: Mapping[str, Any]) -> tuple[WorkerVerdicts, ...]:
    """`workers` with the runs each did and the distinct boot ids among them, from a journal's
    provenance (run_workers, run_boot_ids); unchanged for a source that does not record them."""
    run_workers = provenance.get("run_workers") or {}
    boots = provenance.get("run_boot_ids") or {}
    counts: dict[str, tuple[int, int]] = {}
    for worker in sorted({str(w) for w in run_workers.values()}):
        runs = [r for r, w in run_workers.items() if str(w) == worker]
        counts[worker] = (len(runs), len({boots[r] for r in runs if r in boots}))
    return tuple(dataclasses.replace(w, runs=counts[w.worker][0], boots=counts[w.worker][1]) if w.worker in counts else w
                 for w in workers)


def snapshots_by_run(provenance: Mapping[str, Any]) -> tuple[dict[Any, Any], dict[Any, str]]:
    """Every run's snapshot and worker, from a journal's provenance or each of a combination's parts."""
    snapshots: dict[Any, Any] = {}
    workers: dict[Any, str] = {}
    parts = provenance.get("parts")
    sources = [(i, p) for i, p in enumerate(parts) if isinstance(p, Mapping)] if isinstance(parts, list) else [(None, provenance)]
    for i, prov in sources:
        run_workers = prov.get("run_workers") or {}
        for run, snap in (prov.get("snapshots") or {}).items():
            key = run if i is None else (i, run)
            snapshots[key] = snap
            if run in run_workers:
                workers[key] = str(run_workers[run])
    return snapshots, workers


def identity(table: TrialTable, workers: Sequence[str] | None = None) -> Identity | None:
    """The identity diagnostic of the table's workers (None without snapshots from two workers).

    workers: the names of the workers that hold rows, when the caller knows them."""
    snapshots, run_workers = snapshots_by_run(table.provenance)
    names = list(workers) if workers is not None else [table.worker_names[w] for w in present_workers(table)]
    return compare_workers(snapshots, run_workers, names)
