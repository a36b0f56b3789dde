"""Per-test detail: each chosen test's summary line and figure (its values by arm, by position
in the run and over time), drawn from the table's values."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from benchsage.analyze.diagnostics import run_starts
from benchsage.analyze.verdict import TestVerdict
from benchsage.report import plots
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import DASH, counted, finite, fmt, fmt_p, fmt_pct, yes_no
from benchsage.report.html.tables import sort_key_p
from benchsage.store.table import TrialTable

KEY = "detail"
TITLE = "Per-test detail"
HEADING = "Per-test detail"
OPEN = False
# Every test when there are few; otherwise the significant ones (smallest p first) and the
# largest |Δ%|, so that thousands of tests still give a small file.
DETAIL_ALL_MAX = 24
DETAIL_MAX = 48
TOP_EFFECTS = 12


def choose_detail(primary: Sequence[TestVerdict]) -> tuple[list[TestVerdict], str]:
    """The tests whose detail is shown, in order, and a note saying which when not all are."""
    with_data = [v for v in primary if v.n_fixed + v.n_random > 0]
    if len(with_data) <= DETAIL_ALL_MAX:
        return sorted(with_data, key=sort_key_p), ""
    sig = sorted((v for v in with_data if v.significant), key=sort_key_p)
    big = sorted((v for v in with_data if finite(v.delta_pct)), key=lambda v: -abs(float(v.delta_pct)))[:TOP_EFFECTS]
    chosen: list[TestVerdict] = []
    seen: set[tuple[str, str]] = set()
    # The largest effects are always shown; significant ones fill the remaining places.
    for v in sig[: max(0, DETAIL_MAX - TOP_EFFECTS)] + big + sig[max(0, DETAIL_MAX - TOP_EFFECTS):]:
        if (v.test, v.metric) not in seen and len(chosen) < DETAIL_MAX:
            seen.add((v.test, v.metric))
            chosen.append(v)
    shown_sig = sum(1 for v in chosen if v.significant)
    note = (
        f"Per-test detail is shown for {len(chosen)} of {len(with_data):,} tests: "
        f"{shown_sig:,} of the {len(sig):,} significant ones (smallest p first) and the "
        f"{TOP_EFFECTS} largest |Δ%|. The figures above and the tables cover every test."
    )
    return chosen, note


def _rows_of(table: TrialTable) -> Any:
    """A lookup (test name, metric name) -> row indices, built with one sort of the table."""
    tcode = {n: i for i, n in enumerate(table.test_names)}
    mcode = {n: i for i, n in enumerate(table.metric_names)}
    width = max(1, len(table.metric_names))
    key = table.test.astype(np.int64) * width + table.metric
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]

    def rows(test: str, metric: str) -> np.ndarray:
        if test not in tcode or metric not in mcode:
            return np.zeros(0, dtype=np.int64)
        k = tcode[test] * width + mcode[metric]
        lo, hi = np.searchsorted(sorted_key, [k, k + 1])
        return order[lo:hi]

    return rows


def gist(shown: dict[str, Any]) -> str:
    """'4 tests: values by arm, by position and over time'."""
    articles = shown["articles"]
    text = counted(len(articles), "test") + (f" of {shown['total']:,}" if shown["total"] > len(articles) else "")
    return text + ": values by arm, by position and over time" if articles else "none"


def view(material: Material) -> dict[str, Any]:
    """Each chosen test's summary line and figure (None: the table holds no values for it)."""
    table, detail, ids, ci_level = material.table, material.detail, material.detail_ids, material.analysis.ci_level
    rows_of = _rows_of(table) if detail else None
    # "Over time" is drawn at each run's start as the diagnostics define it: some sources
    # (OrderSage) time trials on a clock that restarts with every run.
    starts = run_starts(table) if detail else np.zeros(0)
    run_origin = float(np.nanmin(starts)) if np.isfinite(starts).any() else None
    timed = np.isfinite(table.time)
    trial_origin = float(table.time[timed].min()) if detail and timed.any() else None
    articles = []
    for v in detail:
        anchor = ids[(v.test, v.metric)]
        rows = rows_of(v.test, v.metric)
        rows = rows[np.isfinite(table.value[rows])]  # as the analysis did
        summary = (
            f"p = {fmt_p(v.kw_p)} (adjusted {fmt_p(v.p_adjusted)}), significant: {yes_no(v.significant)}, "
            f"eta²_H = {fmt(v.eta2, 3)}, Δ% = {fmt_pct(v.delta_pct)}, CI case {v.ci_case if v.ci_case is not None else DASH}"
        )
        plot = None
        if len(rows):
            position = table.position[rows]
            run = table.run[rows]
            time, origin, time_of = None, None, "run"
            if run_origin is not None and bool(np.all(run >= 0)) and bool(np.all(np.isfinite(starts[run]))):
                time, origin = starts[run], run_origin
            elif trial_origin is not None and bool(np.all(timed[rows])):
                time, origin, time_of = table.time[rows], trial_origin, "trial"
            plot = plots.test_detail(
                v,
                f"fig-{anchor}",
                table.value[rows],
                table.arm[rows],
                position if bool(np.all(position >= 0)) else None,
                time,
                time_origin=origin,
                time_of=time_of,
                ci_level=ci_level,
            )
        articles.append({"anchor": anchor, "verdict": v, "summary": summary, "plot": plot})
    total = sum(1 for v in material.primary if v.n_fixed + v.n_random > 0)
    return {"note": material.detail_note, "articles": articles, "total": total}
