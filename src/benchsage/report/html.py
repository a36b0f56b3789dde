"""The self-contained HTML report: verdict, tables, figures, per-test detail, diagnostics,
provenance and warnings in one file that needs no network to open.

The markup lives in Jinja2 templates (report/templates/) rendered with autoescaping, so every
string that came from a spec, a data file or a test's output is escaped wherever a template
prints it; this module only chooses and orders what to show. A Content-Security-Policy forbids
any script but the report's own table sorter.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
import math
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

import jinja2
import numpy as np
from markupsafe import Markup

from benchsage import __version__
from benchsage.analyze.diagnostics import run_starts
from benchsage.analyze.summary import verdict_sentence, workers_sentence
from benchsage.analyze.treatments import CONTEXT, CONTEXT_PREFIX, NUMERIC_DIMENSIONS, ContextEffect
from benchsage.analyze.verdict import Analysis, TestVerdict
from benchsage.errors import UsageError
from benchsage.report import plots
from benchsage.store.table import TrialTable

# Per-test detail: every test when there are few; otherwise the significant ones (smallest
# p first) and the largest |Δ%|, so that thousands of tests still give a small file.
DETAIL_ALL_MAX = 24
DETAIL_MAX = 48
TOP_EFFECTS = 12
DIAGNOSTIC_ROWS = 50  # rows per diagnostics table (significant first)
WARNINGS_MAX = 200
TALL_ROWS = 30  # a longer table scrolls inside its own box, so the figures stay in reach
TEXT_MAX = 200_000  # characters of one provenance text (spec, plan) before it is cut
NESTED_TEXT_MAX = 5_000  # ... and of a value inside a table
MEDIANS_SHOWN = 8  # workers whose median a fleet row spells out
PLAN_ROWS = 40  # runs listed in the plan table
ORDER_NAMES = 12  # tests named per run in the plan table
TREATMENT_ROWS = 50  # rows of a context, observer or factorial table (the notable first)
FIGURE_ROWS = 40  # tests (or test and level) in an observer or allocation figure
CONTEXT_PANELS = 9  # panels of the per-context figure: the claims first, then the tests

_DASH = "—"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


# -- entry points -----------------------------------------------------------------------------


def write_report(analysis: Analysis, table: TrialTable, path: str | os.PathLike[str]) -> None:
    """Write the HTML report of `analysis` (computed from `table`) to `path`.

    The file is written next to its destination and renamed into place, so a reader never
    sees half a report.
    """
    text = render_report(analysis, table)
    dest = Path(path)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, dest)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {dest}: {exc.strerror or exc}") from exc
    finally:
        if tmp.exists():
            tmp.unlink()


def render_report(analysis: Analysis, table: TrialTable) -> str:
    """The report as one HTML string."""
    script = _asset("sort.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    # No network at all: nothing may be fetched, only data: images and the sorter may run.
    csp = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    primary = [v for v in analysis.tests if v.primary]
    detail, detail_note = _choose_detail(primary)
    detail_ids = {(v.test, v.metric): f"d-{i}" for i, v in enumerate(detail)}
    name = _title(analysis, table)
    # The treatment sections read the analysis JSON (CONTRACT.md's shapes, the interface users
    # script against); without the diagnostics, whose rows are the costly part of it.
    doc = dataclasses.replace(analysis, diagnostics=None).to_json()
    page = {
        "title": name,
        "csp": csp,
        "version": __version__,
        # Our own files, shipped with the package: markup, not data.
        "css": Markup(_asset("report.css")),
        "script": Markup(script),
        "verdict": _verdict_view(analysis, table),
        "comparisons": _comparisons_view(analysis, doc),
        "tables": _tables_view(analysis, detail_ids),
        "figures": _figures_view(analysis, primary),
        "detail": _detail_view(table, detail, detail_ids, detail_note, analysis.ci_level),
        "workers": _workers_view(analysis, table),
        "contexts": _contexts_view(analysis, doc, table),
        "observer": _observer_view(doc),
        "factorial": _factorial_view(doc),
        "sequential": _sequential_view(doc),
        "diagnostics": _diagnostics_view(analysis, table),
        "provenance": _provenance_view(analysis, table),
        "warnings": _warnings_view(analysis, table),
    }
    page["header"] = _header_view(analysis, table, page)
    return _environment().get_template("report.html").render(page)


# -- templates --------------------------------------------------------------------------------


def _asset(name: str) -> str:
    return resources.files("benchsage.report").joinpath(name).read_text(encoding="utf-8")


def _no_control(value: Any) -> Any:
    """Every printed value passes here before it is escaped: control characters (which HTML
    does not allow, e.g. NUL in a test's output) become U+FFFD. Markup is ours and left alone."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return _CONTROL.sub("\ufffd", value)
    return value


@functools.cache
def _environment() -> jinja2.Environment:
    """The templates, from the installed package (a wheel carries them as package data)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("benchsage.report", "templates"),
        autoescape=True,  # every template, whatever its name: data never becomes markup
        undefined=jinja2.StrictUndefined,  # a misspelt field is an error, not an empty cell
        finalize=_no_control,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(fmt=_fmt, fmt_p=_fmt_p, fmt_pct=_fmt_pct, sortkey=_sortkey, yes_no=_yes_no, commas=_commas)
    env.globals["DASH"] = _DASH
    return env


# -- formatting (template filters) --------------------------------------------------------------


def _finite(x: Any) -> bool:
    return x is not None and isinstance(x, (int, float, np.floating, np.integer)) and math.isfinite(float(x))


def _fmt(x: Any, digits: int = 4) -> str:
    """A number with `digits` significant digits, plainly written when that is readable."""
    if not _finite(x):
        return _DASH
    x = float(x)
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    if mag >= 7 or mag < -3:
        return f"{x:.{digits - 1}e}"
    return f"{x:,.{max(0, digits - 1 - mag)}f}"


def _fmt_p(p: Any) -> str:
    if not _finite(p):
        return _DASH
    p = float(p)
    return f"{p:.2e}" if p < 1e-3 else f"{p:.4f}"


def _fmt_pct(x: Any) -> str:
    return f"{float(x):+.2f}" if _finite(x) else _DASH


def _sortkey(x: Any) -> str:
    """A numeric cell's data-v for the sorter: empty when unknown (sorted last)."""
    return repr(float(x)) if _finite(x) else ""


def _yes_no(flag: bool | None) -> str:
    return _DASH if flag is None else ("yes" if flag else "no")


def _commas(n: Any) -> str:
    return f"{n:,}"


def _title(analysis: Analysis, table: TrialTable) -> str:
    for prov in (table.provenance, analysis.provenance):
        name = prov.get("name") if isinstance(prov, Mapping) else None
        if name:
            return f"benchsage report: {name}"
    sources = analysis.sources or table.sources
    if sources:
        return f"benchsage report: {Path(sources[0]).name}" + (f" and {len(sources) - 1} more" if len(sources) > 1 else "")
    return "benchsage report"


# -- header, verdict, tests, figures ------------------------------------------------------------


_SECTIONS = (
    ("verdict", "Verdict"),
    ("comparisons", "Comparisons"),
    ("tables", "Tests"),
    ("figures", "Figures"),
    ("detail", "Per-test detail"),
    ("workers", "Workers"),
    ("contexts", "Context effects"),
    ("observer", "Observer effect"),
    ("factorial", "Factorial"),
    ("sequential", "Sequential stopping"),
    ("diagnostics", "Diagnostics"),
    ("provenance", "Provenance"),
    ("warnings", "Warnings"),
)


def _header_view(analysis: Analysis, table: TrialTable, page: Mapping[str, Any]) -> dict[str, Any]:
    """The title line and a link to each section the page has (the others are None)."""
    links = [(key, text) for key, text in _SECTIONS if page[key] is not None]
    return {"links": links, "version": analysis.tool_version or __version__, "n_values": len(table),
            "n_tests": len(analysis.tests)}


def _verdict_view(analysis: Analysis, table: TrialTable) -> dict[str, Any]:
    primary = [v for v in analysis.tests if v.primary]
    tested = [v for v in primary if v.kw_p is not None]
    cases = {c: sum(1 for v in primary if v.ci_case == c) for c in (1, 2, 3)}
    runs = int(len(np.unique(table.run[table.run >= 0]))) if len(table) else 0
    corrected = f" (corrected alpha {analysis.alpha_corrected:.3g})" if _finite(analysis.alpha_corrected) else ""
    facts = [
        ("comparisons (primary)", f"{len(primary):,} ({len(tested):,} with a p-value)"),
        ("significant", f"{len(analysis.significant_tests):,}"),
        ("alpha", f"{analysis.alpha:g} family-wise, {analysis.correction} correction{corrected}"),
        ("confidence intervals", f"{analysis.ci_method}, {analysis.ci_level:.0%}; case rule {analysis.ci_case_rule}"),
        ("CI cases", f"case 1: {cases[1]:,} · case 2: {cases[2]:,} · case 3: {cases[3]:,}"),
        ("data", f"{len(table):,} values in {runs:,} runs; {analysis.excluded or table.excluded:,} trials excluded (not ok)"),
    ]
    return {"effect": analysis.order_matters, "sentence": verdict_sentence(analysis), "facts": facts}


_TEST_COLUMNS = (
    ("test", "text"),
    ("n fixed / random", ""),
    ("KW H", ""),
    ("p", ""),
    ("p adjusted", ""),
    ("significant", "text"),
    ("eta²_H", ""),
    ("Δ%", ""),
    ("CV fixed", ""),
    ("CV random", ""),
    ("median fixed [{ci} CI]", ""),
    ("median random [{ci} CI]", ""),
    ("CI case", ""),
)


def _sort_key_p(v: TestVerdict) -> tuple[float, float, str]:
    p = v.p_adjusted if _finite(v.p_adjusted) else v.kw_p
    return (float(p) if _finite(p) else math.inf, -abs(v.delta_pct) if _finite(v.delta_pct) else 0.0, v.test)


def _test_table(verdicts: Sequence[TestVerdict], detail_ids: Mapping[tuple[str, str], str], ci_level: float,
                stratified: bool = False) -> dict[str, Any]:
    """One table of test rows, sorted by p. stratified: the rows combine workers with van
    Elteren's test, whose statistic is a chi-square with one degree of freedom, not
    Kruskal-Wallis H."""
    notes = any(v.notes for v in verdicts)
    titles = [t.format(ci=f"{ci_level:.0%}") for t, _ in _TEST_COLUMNS]
    if stratified:
        titles[titles.index("KW H")] = "van Elteren χ²"
    columns = list(zip(titles, (c for _, c in _TEST_COLUMNS))) + ([("notes", "text")] if notes else [])
    rows = [(v, detail_ids.get((v.test, v.metric))) for v in sorted(verdicts, key=_sort_key_p)]
    return {"columns": columns, "rows": rows, "notes": notes, "tall": len(verdicts) > TALL_ROWS}


def _tables_view(analysis: Analysis, detail_ids: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    groups: dict[tuple[bool, str], list[TestVerdict]] = {}
    for v in analysis.tests:
        groups.setdefault((not v.primary, v.metric), []).append(v)
    out = []
    for (secondary, metric), vs in sorted(groups.items(), key=lambda kv: kv[0]):
        out.append({
            "metric": metric,
            "label": plots.axis_label(metric, vs[0].unit, vs[0].better),
            "family": "not in the correction family" if secondary else "primary",
            "count": len(vs),
            "table": _test_table(vs, detail_ids, analysis.ci_level, stratified=analysis.combined is not None),
        })
    return {"groups": out}


def _figures_view(analysis: Analysis, primary: Sequence[TestVerdict]) -> dict[str, Any]:
    figures = [
        plots.pvalues_sorted(primary, analysis.alpha, analysis.alpha_corrected),
        plots.eta2_sorted(primary),
        plots.delta_sorted(primary),
        plots.ci_case_counts(primary, analysis.ci_level),
        plots.median_cis(primary, analysis.ci_level),
    ]
    return {"shown": [f for f in figures if f is not None]}


# -- per-test detail ----------------------------------------------------------------------------


def _choose_detail(primary: Sequence[TestVerdict]) -> tuple[list[TestVerdict], str]:
    with_data = [v for v in primary if v.n_fixed + v.n_random > 0]
    if len(with_data) <= DETAIL_ALL_MAX:
        return sorted(with_data, key=_sort_key_p), ""
    sig = sorted((v for v in with_data if v.significant), key=_sort_key_p)
    big = sorted((v for v in with_data if _finite(v.delta_pct)), key=lambda v: -abs(float(v.delta_pct)))[:TOP_EFFECTS]
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


def _detail_view(table: TrialTable, detail: Sequence[TestVerdict], ids: Mapping[tuple[str, str], str], note: str,
                 ci_level: float) -> dict[str, Any]:
    """Each chosen test's summary line and figure (None: the table holds no values for it)."""
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
            f"p = {_fmt_p(v.kw_p)} (adjusted {_fmt_p(v.p_adjusted)}), significant: {_yes_no(v.significant)}, "
            f"eta²_H = {_fmt(v.eta2, 3)}, Δ% = {_fmt_pct(v.delta_pct)}, CI case {v.ci_case if v.ci_case is not None else _DASH}"
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
    return {"note": note, "articles": articles}


# -- workers (fleets) -------------------------------------------------------------------------------


def _runs_and_boots(table: TrialTable) -> dict[str, tuple[int, int]]:
    """Per worker: analysed runs, and distinct boot ids among them (a reboot reset gives each run its own)."""
    prov = table.provenance
    run_workers = prov.get("run_workers") or {}
    boots = prov.get("run_boot_ids") or {}
    out: dict[str, tuple[int, int]] = {}
    for worker in sorted({str(w) for w in run_workers.values()}):
        runs = [r for r, w in run_workers.items() if str(w) == worker]
        out[worker] = (len(runs), len({boots[r] for r in runs if r in boots}))
    return out


def _worker_rows(analysis: Analysis, table: TrialTable) -> list[dict[str, Any]]:
    counts = _runs_and_boots(table)
    rows = []
    for w in analysis.workers:
        primary = [v for v in w.tests if v.primary]
        several = len({v.test for v in primary}) != len(primary)
        sig = sorted((v for v in primary if v.significant), key=_sort_key_p)
        names = ", ".join(f"{v.test} [{v.metric}]" if several else v.test for v in sig[:10]) + (f" and {len(sig) - 10:,} more" if len(sig) > 10 else "")
        runs, boots = counts.get(w.worker, (None, None))
        rows.append({
            "worker": w.worker,
            "order_matters": w.order_matters,
            "names": names or _DASH,
            "primary": len(primary),
            "tested": f"{sum(v.kw_p is not None for v in primary):,} of {len(primary):,}",
            "alpha_corrected": w.alpha_corrected,
            "runs": runs,
            "boots": boots,
            "table": _test_table(primary, {}, analysis.ci_level) if primary else None,
        })
    return rows


def _identity_view(analysis: Analysis) -> dict[str, Any]:
    diag = analysis.diagnostics
    if diag is None:
        return {"state": "off"}
    identity = diag.identity
    if identity is None:
        return {"state": "unknown"}
    differences = []
    for d in identity.differences:
        groups: dict[str, list[str]] = {}
        for worker, value in d.values.items():
            groups.setdefault("unknown or missing" if value is None else str(value), []).append(worker)
        differences.append((d.what, [(v, ", ".join(ws)) for v, ws in groups.items()]))
    return {"state": "identical" if identity.identical else "differs", "workers": len(identity.workers),
            "missing": ", ".join(identity.missing), "differences": differences}


def _fleet_view(analysis: Analysis) -> dict[str, Any]:
    diag = analysis.diagnostics
    if diag is None or diag.fleet is None:
        return {"state": "off"}
    if not diag.fleet:
        return {"state": "empty"}
    rows = sorted(diag.fleet, key=lambda r: (0 if r.significant else 1, -(r.spread_pct or 0.0)))[:DIAGNOSTIC_ROWS]
    total = len(diag.fleet)
    shown = f"showing {len(rows):,} of {total:,} tests, differing first" if len(rows) < total else f"{total:,} tests"
    return {"state": "rows", "differing": sum(1 for r in diag.fleet if r.significant), "total": total, "shown": shown,
            "rows": [(r, _medians_text(r.medians), ", ".join(r.outliers) or _DASH) for r in rows]}


def _workers_view(analysis: Analysis, table: TrialTable) -> dict[str, Any] | None:
    """A fleet: how the combined rows treat the workers, each worker's verdict and rows, and
    whether the workers ran the same software and measure the same thing."""
    if analysis.combined is None:
        return None
    return {
        "count": analysis.combined.workers,
        "method": analysis.combined.method,
        "sentence": workers_sentence(analysis),
        "rows": _worker_rows(analysis, table),
        "identity": _identity_view(analysis),
        "fleet": _fleet_view(analysis),
    }


# -- treatments: comparisons, contexts, instrumentation, factors; sequential stopping -----------


def _floats(values: Any) -> np.ndarray:
    """JSON numbers (None where unknown) as floats, NaN for None."""
    return np.array([x if _finite(x) else np.nan for x in values], dtype=np.float64)


def _p_key(row: Mapping[str, Any]) -> float:
    p = row.get("p_adjusted") if _finite(row.get("p_adjusted")) else row.get("p", row.get("kw_p"))
    return float(p) if _finite(p) else math.inf


def _notable_first(rows: Sequence[Mapping[str, Any]], limit: int, what: str) -> dict[str, Any]:
    """Significant rows first, then by p; at most `limit`, with a note saying how many."""
    shown = sorted(rows, key=lambda r: (0 if r.get("significant") else 1, _p_key(r)))[:limit]
    note = f"showing {len(shown):,} of {len(rows):,} {what}, significant first" if len(shown) < len(rows) else f"{len(rows):,} {what}"
    return {"rows": shown, "shown": note}


def _comparisons_view(analysis: Analysis, doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The declared claims "a is better than b": each row of the JSON with its winner named,
    and the analysis's sentence for it (the headline the terminal prints too)."""
    rows = doc.get("comparisons")
    if rows is None:
        return None
    out = []
    # The JSON rows are the analysis's rows, in order: each has its sentence.
    for c, claim in zip(rows, analysis.comparisons or ()):
        contexts = c.get("contexts")
        winner = {"a": c["a"], "b": c["b"]}.get(c.get("better") or "")
        out.append({
            "row": c,
            "sentence": claim.sentence(),
            "winner": winner or ("undecided" if c.get("p") is not None else _DASH),
            "contexts": _strata_won(c, contexts),
            "flips": None if not contexts else contexts.get("flips"),
            "holds": [(c.get("holds_in") or {}).get(arm) for arm in ("fixed", "random")],
            "workers": _strata_won(c, c.get("workers")),
            "worker_flips": bool((c.get("workers") or {}).get("flips")),
            "cells": _strata_won(c, c.get("factor_cells")),
            "cell_flips": bool((c.get("factor_cells") or {}).get("flips")),
        })
    return {"rows": out, "reasons": any(c.get("p") is None for c in rows), "fleet": any(c.get("workers") for c in rows),
            "factors": any(c.get("factor_cells") for c in rows)}


def _strata_won(row: Mapping[str, Any], strata: Mapping[str, Any] | None) -> str:
    """Where each test of a claim wins (contexts, a fleet's workers): "o3 2 · o2 1 · undecided 0 of 3"."""
    if not strata:
        return _DASH
    return f"{row['a']} {strata['a_better']:,} · {row['b']} {strata['b_better']:,} · undecided {strata['undecided']:,} of {strata['n']:,}"


def _context_settings(table: TrialTable) -> dict[str, dict[str, str]]:
    """Each context's own settings (env_bytes, cpus, ...): the most common level of each
    "context:NAME" dimension among the context's rows."""
    found = table.levels(CONTEXT)
    if found is None:
        return {}
    names, codes = found
    out: dict[str, dict[str, str]] = {name: {} for name in names}
    known = codes >= 0
    for k, dim in enumerate(table.dims):
        if not dim.startswith(CONTEXT_PREFIX):
            continue
        levels = table.treatment[:, k]
        ok = known & (levels >= 0)
        width = len(table.dim_levels[k])
        counts = np.bincount(codes[ok].astype(np.int64) * width + levels[ok], minlength=len(names) * width).reshape(len(names), width)
        for c, name in enumerate(names):
            if counts[c].any():
                out[name][dim[len(CONTEXT_PREFIX):]] = table.dim_levels[k][int(counts[c].argmax())]
    return out


def _numeric_axis(contexts: Sequence[str], settings: Mapping[str, Mapping[str, str]]) -> tuple[np.ndarray | None, str]:
    """The contexts' x positions: their size setting (env_bytes, cwd_bytes) when every context
    has one and they differ, as in Mytkowicz et al.'s Figures 6-7; else None (side by side)."""
    for dim in NUMERIC_DIMENSIONS:
        try:
            xs = np.array([float(settings[c][dim]) for c in contexts])
        except (KeyError, ValueError):
            continue
        if len(np.unique(xs)) > 1:
            return xs, dim
    return None, "context"


def _comparison_panel(c: Mapping[str, Any], settings: Mapping[str, Mapping[str, str]]) -> plots.ContextPanel:
    per = c["per_context"]
    names = [str(pc["context"]) for pc in per]
    merged = {n: {**settings.get(n, {}), **(pc.get("values") or {})} for n, pc in zip(names, per)}
    x, xlabel = _numeric_axis(names, merged)
    ci = [pc.get("ci") or [None, None] for pc in per]
    colour = {"a": plots.A_BETTER_COLOUR, "b": plots.SIGNIFICANT_COLOUR}
    return plots.ContextPanel(
        title=f"{c['a']} / {c['b']} ({c['metric']})",
        ylabel=f"ratio of medians {plots.short_label(str(c['a']), 16)} / {plots.short_label(str(c['b']), 16)}",
        labels=names,
        y=_floats(pc.get("ratio") for pc in per),
        low=_floats(lo for lo, _ in ci),
        high=_floats(hi for _, hi in ci),
        colours=[colour.get(pc.get("better") or "", plots.UNDECIDED_COLOUR) for pc in per],
        x=x,
        xlabel=xlabel,
        reference=1.0,
    )


def _test_panels(effects: Sequence[ContextEffect], table: TrialTable, settings: Mapping[str, Mapping[str, str]]) -> list[plots.ContextPanel]:
    """Per test, its median and CI in each context, as the analysis found them in the values the
    context analysis examined (the lightest observer level)."""
    panels = []
    for effect in effects:
        if not effect.median_ci:
            continue
        shown = list(effect.median_ci)
        median, low, high = (_floats(column) for column in zip(*effect.median_ci.values()))
        x, xlabel = _numeric_axis(shown, settings)
        info = table.metric_info(effect.metric)
        panels.append(plots.ContextPanel(
            title=f"{effect.test} ({effect.metric})",
            ylabel=f"median, {plots.short_axis_label(info.name, info.unit, info.better)}",
            labels=shown,
            y=median,
            low=low,
            high=high,
            colours=[plots.FIXED_COLOUR] * len(shown),
            x=x,
            xlabel=xlabel,
            flagged=bool(effect.significant),
        ))
    return panels


def _contexts_view(analysis: Analysis, doc: Mapping[str, Any], table: TrialTable) -> dict[str, Any] | None:
    """Context effects (Mytkowicz et al.): per test, Kruskal-Wallis across the contexts and each
    context setting's test; the figure shows every claim's ratio and the notable tests' medians
    context by context."""
    effects = doc.get("context_effects")
    claims = [c for c in doc.get("comparisons") or () if c.get("per_context")]
    if effects is None and not claims:
        return None
    effects = list(effects or ())
    dims = list(dict.fromkeys(d for r in effects for d in r.get("by") or {}))
    view = _notable_first(effects, TREATMENT_ROWS, "tests")
    settings = _context_settings(table)
    panels = [_comparison_panel(c, settings) for c in claims[:CONTEXT_PANELS]]
    typed = {(e.test, e.metric): e for e in analysis.context_effects or ()}
    notable = [typed[(r["test"], r["metric"])] for r in view["rows"][: CONTEXT_PANELS - len(panels)]]
    panels += _test_panels(notable, table, settings)
    figure = plots.per_context(
        "fig-contexts",
        "Per measurement context",
        "One point per context with its confidence interval. A claim a vs b: the ratio of medians a/b "
        "(green: a better in that context, red: b better, grey: undecided, after the correction over the "
        "contexts); points on both sides of the dashed line at 1.0 are a flip of the winner. A test: its "
        f"median in that context with the {analysis.ci_level:.0%} CI (a title in red: the test's context "
        "effect is significant). Contexts are placed by their size setting (env_bytes, cwd_bytes) when they have one.",
        panels,
    )
    columns = ("test", "metric", "contexts", "KW H", "p", "p adjusted", "significant", "spread %",
               *(f"{d} p" for d in dims), "median per context")
    return {"rows": [(r, _medians_text(r.get("medians") or {})) for r in view["rows"]], "shown": view["shown"],
            "dims": dims, "columns": columns, "figure": figure,
            "methods": list(dict.fromkeys(str(r["method"]) for r in effects if r.get("method")))}


def _medians_text(medians: Mapping[str, Any]) -> str:
    """'c0 1.005, c1 0.9012, …' for a table cell, bounded."""
    shown = list(medians.items())
    more = f", … ({len(shown) - MEDIANS_SHOWN:,} more)" if len(shown) > MEDIANS_SHOWN else ""
    return ", ".join(f"{name} {_fmt(m)}" for name, m in shown[:MEDIANS_SHOWN]) + more


def _observer_view(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The observer effect: each instrumentation level against the lightest, per test."""
    rows = doc.get("observer")
    if rows is None:
        return None
    view = _notable_first(rows, TREATMENT_ROWS, "rows")
    figure_rows = [r for r in view["rows"] if r.get("primary", True)][:FIGURE_ROWS]
    several = len({r["metric"] for r in figure_rows}) > 1

    def pct(ci: Any, i: int) -> float:
        return (float(ci[i]) - 1.0) * 100.0 if ci and _finite(ci[i]) else math.nan

    figure = plots.observer_effects(
        [f"{r['test']} [{r['metric']}, {r['level']}]" if several else f"{r['test']} [{r['level']}]" for r in figure_rows],
        _floats(r.get("effect_pct") for r in figure_rows),
        np.array([pct(r.get("ci"), 0) for r in figure_rows]),
        np.array([pct(r.get("ci"), 1) for r in figure_rows]),
        [r.get("significant") for r in figure_rows],
    ) if figure_rows else None
    return {**view, "figure": figure}


def _factorial_view(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """2^k r designs: each term's effect q with its interval and share of the variation."""
    rows = doc.get("factorial")
    if rows is None:
        return None
    several = len({r["metric"] for r in rows}) > 1
    lines = []
    for r in rows[:TREATMENT_ROWS]:
        if not r.get("terms"):
            lines.append({"test": r["test"], "metric": r["metric"], "term": None, "reason": r.get("reason") or _DASH})
            continue
        for t in r["terms"]:
            ci = t.get("ci")
            excludes = None if ci is None or not all(_finite(x) for x in ci) else bool(ci[0] > 0 or ci[1] < 0)
            lines.append({"test": r["test"], "metric": r["metric"], "term": t["term"], "effect": t.get("effect"), "ci": ci,
                          "variation_pct": t.get("variation_pct"), "excludes_zero": excludes})
    analysed = [r for r in rows if r.get("terms")]
    designs = list(dict.fromkeys(
        "; ".join(f"{name}: {lv[0]} → {lv[1]}" for name, lv in (r.get("levels") or {}).items())
        + (f" (r = {r['r']} replications per cell)" if r.get("r") is not None else "") for r in analysed))
    figure = None
    if analysed:
        terms = [t["term"] for t in analysed[0]["terms"]]
        shown = [r for r in analysed if [t["term"] for t in r["terms"]] == terms][:FIGURE_ROWS]
        shares = np.array([[t.get("variation_pct") if _finite(t.get("variation_pct")) else np.nan for t in r["terms"]] for r in shown])
        figure = plots.allocation_of_variation(
            [f"{r['test']} [{r['metric']}]" if several else str(r["test"]) for r in shown], terms, shares)
    more = max(0, len(rows) - TREATMENT_ROWS)
    return {"lines": lines, "designs": designs, "figure": figure, "more": more, "total": len(rows)}


_SEQUENTIAL_LABELS = {
    "planned_looks": "planned looks (runs per arm)",
    "tests": "tests in the family",
    "min_effect": "min effect (%)",
    "spending": "alpha spending",
    "correction": "correction over tests",
}


def _stopping_text(stopped: int | None, most: int | None, undecided: int) -> str:
    """Where the experiment stopped, in words: early (every test decided), at the most runs, or not yet."""
    at_most = f" (at most {most:,} runs per arm)" if most is not None else ""
    if stopped is None:
        return f"not stopped: no look has decided every test yet{at_most}"
    if most is not None and stopped >= most:
        left = f"; {undecided:,} test{'s' if undecided != 1 else ''} undecided" if undecided else ""
        return f"ran to the most runs, {most:,} per arm{left}"
    return f"stopped early at {stopped:,} runs per arm{at_most}: every test decided"


def _sequential_view(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """Where a sequential experiment stopped, its looks, and each test's decision."""
    seq = doc.get("sequential")
    if seq is None:
        return None
    order = {"effect": 0, "no-effect": 1}
    decisions = sorted((r for r in doc.get("tests", ()) if r.get("primary") and "decided" in r),
                       key=lambda r: (order.get(r.get("decided") or "", 2), r.get("decided_at_runs") or math.inf, r["test"]))
    counts = {name: sum(1 for r in decisions if r.get("decided") == name) for name in ("effect", "no-effect")}
    undecided = len(decisions) - sum(counts.values())
    facts = [("stopping", _stopping_text(seq.get("stopped_at_runs"), seq.get("max_runs"), undecided)),
             ("method", str(seq.get("method") or _DASH))]
    facts += [(_SEQUENTIAL_LABELS.get(k, k.replace("_", " ")), ", ".join(str(x) for x in v) if isinstance(v, list) else str(v))
              for k, v in seq.items()
              if k not in ("looks", "stopped_at_runs", "max_runs", "method") and v is not None and not isinstance(v, Mapping)]
    return {"facts": facts, "looks": list(seq.get("looks") or ()), "decisions": decisions[:TREATMENT_ROWS],
            "total": len(decisions), "counts": counts, "undecided": undecided}


# -- diagnostics ----------------------------------------------------------------------------------


def _run_starts(table: TrialTable) -> tuple[np.ndarray, np.ndarray]:
    """Each run's start (as the diagnostics see it) and its arm; runs without a time are left out."""
    starts = run_starts(table)
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int8)
    known = table.run >= 0
    arm = np.full(len(starts), -1, dtype=np.int8)
    arm[table.run[known]] = table.arm[known]
    keep = np.isfinite(starts) & (arm >= 0)
    return starts[keep], arm[keep]


def _diag_order(items: Sequence[Any]) -> list[Any]:
    """Significant rows first, then by p; at most DIAGNOSTIC_ROWS."""

    def key(d: Any) -> tuple[int, float]:
        p = d.p_adjusted if _finite(d.p_adjusted) else d.p
        return (0 if d.significant else 1, float(p) if _finite(p) else math.inf)

    return sorted(items, key=key)[:DIAGNOSTIC_ROWS]


def _diag_rows(items: Sequence[Any], what: str) -> dict[str, Any]:
    rows = _diag_order(items)
    total = len(items)
    shown = f"showing {len(rows):,} of {total:,} {what}, significant first" if total > len(rows) else f"{total:,} {what}"
    return {"rows": rows, "shown": shown}


def _diagnostics_view(analysis: Analysis, table: TrialTable) -> dict[str, Any]:
    diag = analysis.diagnostics
    il = diag.interleaving if diag is not None else None
    starts, arms = _run_starts(table)
    view: dict[str, Any] = {
        "interleaving": il,
        "interleaving_state": None if il is None else {True: "interleaved", False: "not interleaved", None: "unknown"}[il.interleaved],
        "timeline": plots.run_timeline(starts, arms) if len(starts) else None,
        "computed": diag is not None,
    }
    if diag is None:
        return view
    view.update(
        position_effects=_diag_rows(diag.position_effects, "position effects") if diag.position_effects else None,
        carryover=_diag_rows(diag.carryover, "predecessor effects") if diag.carryover else None,
        balance=diag.carryover_balance.detail if diag.carryover_balance is not None else None,
        trends=_diag_rows(diag.trends, "trends") if diag.trends else None,
        software=_node(diag.workers) if diag.workers else None,
    )
    return view


# -- provenance: any value as a tree of nodes that templates/values.html draws ----------------------


def _plain(obj: Any) -> Any:
    """Dataclasses, numpy values and tuples as plain JSON-able Python values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain(dataclasses.asdict(obj))
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _text(text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text}


def _pre(text: str, limit: int = TEXT_MAX) -> dict[str, Any]:
    cut = ""
    if len(text) > limit:
        cut = f"\n… ({len(text) - limit:,} more characters not shown)"
        text = text[:limit]
    return {"kind": "pre", "text": text + cut}


def _json_text(obj: Any) -> str:
    return json.dumps(_plain(obj), indent=1, default=str, ensure_ascii=False)


def _node(obj: Any, depth: int = 0) -> dict[str, Any]:
    """Any provenance value as a node: short scalars inline, mappings as key/value tables,
    lists of records as tables, long text as preformatted blocks (all bounded)."""
    obj = _plain(obj)
    limit = TEXT_MAX if depth == 0 else NESTED_TEXT_MAX
    if obj is None or isinstance(obj, (bool, int, float)):
        return _text(json.dumps(obj, default=str))
    if isinstance(obj, str):
        return _text(obj) if len(obj) <= 200 and "\n" not in obj else _pre(obj, limit)
    if depth >= 3:
        return _pre(_json_text(obj), limit)
    if isinstance(obj, Mapping):
        entries = list(obj.items())
        # Long mappings (a start time per run, ...) fold away until asked for.
        return {"kind": "map", "rows": [(k, _node(v, depth + 1)) for k, v in entries[:200]],
                "total": len(entries), "more": max(0, len(entries) - 200), "fold": len(entries) > 12}
    if isinstance(obj, list):
        if obj and all(isinstance(x, Mapping) for x in obj):
            names: list[str] = []
            for x in obj[:50]:
                names.extend(k for k in x if k not in names)
            rows = [[_node(x.get(k, ""), depth + 2) for k in names] for x in obj[:50]]
            return {"kind": "records", "names": names, "rows": rows, "more": max(0, len(obj) - 50)}
        if all(x is None or isinstance(x, (bool, int, float, str)) for x in obj):
            text = ", ".join(str(x) for x in obj)
            return _text(text) if len(text) <= 200 else _pre(text, limit)
        return _pre(_json_text(obj), limit)
    return _text(str(obj))


def _flatten(obj: Any, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    else:
        out[prefix or "value"] = obj if isinstance(obj, str) else json.dumps(obj, default=str)
    return out


def _ranges(runs: Sequence[str]) -> str:
    """'0-4, 7, 9' for run ids that are integers; a plain list otherwise (bounded)."""
    try:
        ids = sorted(int(r) for r in runs)
    except ValueError:
        text = ", ".join(sorted(runs))
        return text if len(text) < 300 else text[:300] + " …"
    parts: list[str] = []
    start = prev = ids[0]
    for i in ids[1:] + [None]:  # type: ignore[list-item]
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        if i is not None:
            start = prev = i
    text = ", ".join(parts)
    return text if len(text) < 300 else text[:300] + " …"


def _snapshots_node(snapshots: Any) -> dict[str, Any]:
    """Environment snapshots of many runs, folded: one row per setting, its value when all runs
    agree, and otherwise each distinct value with the runs that had it (differences stand out)."""
    snapshots = _plain(snapshots)
    if isinstance(snapshots, list):
        snapshots = {str(i): s for i, s in enumerate(snapshots)}
    if not isinstance(snapshots, Mapping) or not snapshots:
        return _node(snapshots)
    flat = {str(run): _flatten(s) for run, s in snapshots.items()}
    names: list[str] = []
    for f in flat.values():
        names.extend(k for k in f if k not in names)
    rows = []
    for name in names:
        by_value: dict[str, list[str]] = {}
        for run, f in flat.items():
            by_value.setdefault(f.get(name, "(missing)"), []).append(run)
        if len(by_value) == 1:
            (value,) = by_value
            rows.append({"name": name, "same": _text(value) if len(value) <= 300 else _pre(value)})
            continue
        ranked = sorted(by_value.items(), key=lambda kv: -len(kv[1]))
        rows.append({
            "name": name,
            "same": None,
            "distinct": len(ranked),
            "shown": [(v[:300], "runs" if len(rs) > 1 else "run", _ranges(rs)) for v, rs in ranked[:8]],
            "more": max(0, len(ranked) - 8),
        })
    return {"kind": "snapshots", "count": len(flat), "rows": rows}


def _plan_node(plan: Any) -> dict[str, Any]:
    """The plan: how the arms alternate in time, and each run's order (bounded, so that a
    plan of hundreds of runs over thousands of tests stays readable and small)."""
    plan = _plain(plan)
    if isinstance(plan, list):  # a journal's plan: one record per run
        plan = {"runs": plan}
    runs = plan.get("runs") if isinstance(plan, Mapping) else None
    if not isinstance(runs, list) or not all(isinstance(r, Mapping) for r in runs):
        return _pre(plan) if isinstance(plan, str) else _node(plan)
    names = plan.get("test_names") or []
    facts = [(k, _node(v, 2)) for k, v in plan.items() if k not in ("runs", "test_names")]
    arms = "".join({"fixed": "F", "random": "R"}.get(str(r.get("arm")), "?") for r in runs)
    facts.append(("runs", _text(f"{len(runs):,}")))
    facts.append(("arms in time order (F fixed, R random)", _pre(arms) if len(arms) > 100 else _text(arms)))
    statuses: dict[str, int] = {}
    for r in runs:
        if "status" in r:
            statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    if statuses:
        facts.append(("run status", _text(", ".join(f"{n:,} {s}" for s, n in statuses.items()))))

    def order_text(order: Any) -> str:
        order = order if isinstance(order, list) else []
        shown = [str(names[i]) if isinstance(i, int) and 0 <= i < len(names) else str(i) for i in order[:ORDER_NAMES]]
        return ", ".join(shown) + (f", … ({len(order) - ORDER_NAMES:,} more)" if len(order) > ORDER_NAMES else "")

    rows = [(r.get("index", r.get("run", i)), r.get("arm", ""), r.get("status", ""), order_text(r.get("order")))
            for i, r in enumerate(runs[:PLAN_ROWS])]
    return {"kind": "plan", "facts": facts, "rows": rows, "more": max(0, len(runs) - PLAN_ROWS)}


def _provenance_node(prov: Mapping[str, Any]) -> dict[str, Any]:
    """Labelled blocks: the well-known keys first, drawn their own way, then the rest as they
    are, then the provenance of each source part."""
    special = {
        "tool_version": ("tool version", _node),
        "seed": ("seed", _node),
        "spec": ("spec", lambda s: _pre(s) if isinstance(s, str) else _node(s)),
        "plan": ("plan", _plan_node),
        "snapshots": ("environment snapshots", _snapshots_node),
    }
    blocks = [(label, fn(prov[key])) for key, (label, fn) in special.items() if key in prov and prov[key] is not None]
    blocks += [(key, _node(value)) for key, value in prov.items() if key not in special and key != "parts"]
    parts = prov.get("parts")
    nested = []
    if isinstance(parts, list):
        nested = [(i + 1, _provenance_node(part)) for i, part in enumerate(parts) if isinstance(part, Mapping) and part]
    return {"kind": "provenance", "blocks": blocks, "parts": nested}


def _provenance_view(analysis: Analysis, table: TrialTable) -> dict[str, Any]:
    workers = ", ".join(table.worker_names[:50]) + (" …" if len(table.worker_names) > 50 else "")
    merged: dict[str, Any] = dict(table.provenance)
    for k, v in analysis.provenance.items():
        merged.setdefault(k, v)
    return {
        "tool": f"benchsage {analysis.tool_version} (report written by {__version__})",
        "sources": list(analysis.sources or table.sources),
        "facts": [("tests", f"{len(table.test_names):,}"), ("metrics", ", ".join(table.metric_names) or _DASH),
                  ("workers", workers or _DASH)],
        "tree": _provenance_node(merged) if merged else None,
    }


def _warnings_view(analysis: Analysis, table: TrialTable) -> dict[str, Any]:
    seen: dict[str, None] = {}
    for w in (*analysis.warnings, *table.warnings):
        seen.setdefault(str(w), None)
    distinct = list(seen)
    return {"shown": distinct[:WARNINGS_MAX], "more": max(0, len(distinct) - WARNINGS_MAX)}
