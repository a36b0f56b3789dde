"""The self-contained HTML report: verdict, tables, figures, per-test detail, diagnostics,
provenance and warnings in one file that needs no network to open.

Every string that came from a spec, a data file or a test's output goes through `_e`
(html.escape); a Content-Security-Policy forbids any script but the report's own table sorter.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import html
import json
import math
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from benchsage import __version__
from benchsage.analyze.diagnostics import run_starts
from benchsage.analyze.summary import verdict_sentence, workers_sentence
from benchsage.analyze.verdict import Analysis, Carryover, FleetRow, PositionEffect, TestVerdict, Trend
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

_DASH = "—"


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _e(value: Any) -> str:
    """Escape anything for HTML text or a quoted attribute; control characters (which HTML
    does not allow, e.g. NUL in a test's output) become U+FFFD."""
    return _CONTROL.sub("\ufffd", html.escape(str(value), quote=True))


def _asset(name: str) -> str:
    return resources.files("benchsage.report").joinpath(name).read_text(encoding="utf-8")


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
    body = [
        _header(name, analysis, table),
        _verdict_section(analysis, table),
        _tables_section(analysis, detail_ids),
        _figures_section(analysis, primary),
        _detail_section(table, detail, detail_ids, detail_note, analysis.ci_level),
        _workers_section(analysis, table),
        _diagnostics_section(analysis, table),
        _provenance_section(analysis, table),
        _warnings_section(analysis, table),
    ]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<meta name="generator" content="benchsage {_e(__version__)}">',
            f"<title>{_e(name)}</title>",
            f"<style>\n{_asset('report.css')}</style>",
            "</head>",
            "<body>",
            *body,
            f"<script>{script}</script>",
            "</body>",
            "</html>",
            "",
        ]
    )


# -- formatting -------------------------------------------------------------------------------


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


def _num_td(x: Any, text: str, cls: str = "") -> str:
    v = repr(float(x)) if _finite(x) else ""
    c = f' class="{cls}"' if cls else ""
    return f'<td data-v="{v}"{c}>{_e(text)}</td>'


def _yes_no(flag: bool | None) -> str:
    return _DASH if flag is None else ("yes" if flag else "no")


def _ci_text(median: Any, ci: tuple[float, float] | None) -> str:
    if not _finite(median):
        return _DASH
    if ci is None:
        return _e(_fmt(median))
    return f'{_e(_fmt(median))}<span class="ci">[{_e(_fmt(ci[0]))}, {_e(_fmt(ci[1]))}]</span>'


def _html_td(x: Any, inner: str) -> str:
    """A numeric cell whose content is already escaped HTML."""
    v = repr(float(x)) if _finite(x) else ""
    return f'<td data-v="{v}">{inner}</td>'


def _facts(items: Iterable[tuple[str, str]]) -> str:
    """A definition list; keys are ours, values must already be escaped HTML."""
    rows = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in items)
    return f'<dl class="facts">{rows}</dl>'


def _title(analysis: Analysis, table: TrialTable) -> str:
    for prov in (table.provenance, analysis.provenance):
        name = prov.get("name") if isinstance(prov, Mapping) else None
        if name:
            return f"benchsage report: {name}"
    sources = analysis.sources or table.sources
    if sources:
        return f"benchsage report: {Path(sources[0]).name}" + (f" and {len(sources) - 1} more" if len(sources) > 1 else "")
    return "benchsage report"


# -- sections -----------------------------------------------------------------------------------


def _header(name: str, analysis: Analysis, table: TrialTable) -> str:
    links = [
        ("verdict", "Verdict"),
        ("tables", "Tests"),
        ("figures", "Figures"),
        ("detail", "Per-test detail"),
        *((("workers", "Workers"),) if analysis.combined is not None else ()),
        ("diagnostics", "Diagnostics"),
        ("provenance", "Provenance"),
        ("warnings", "Warnings"),
    ]
    nav = "".join(f'<a href="#{k}">{t}</a>' for k, t in links)
    version = analysis.tool_version or __version__
    return (
        f"<header><h1>{_e(name)}</h1>"
        f'<p class="meta">benchsage {_e(version)} · {len(table):,} values · '
        f"{len(analysis.tests):,} comparisons · fixed order vs random order</p>"
        f"<nav>{nav}</nav></header>"
    )


def _verdict_section(analysis: Analysis, table: TrialTable) -> str:
    primary = [v for v in analysis.tests if v.primary]
    tested = [v for v in primary if v.kw_p is not None]
    sig = analysis.significant_tests
    cls = "verdict effect" if analysis.order_matters else "verdict"
    cases = {c: sum(1 for v in primary if v.ci_case == c) for c in (1, 2, 3)}
    runs = int(len(np.unique(table.run[table.run >= 0]))) if len(table) else 0
    facts = [
        ("comparisons (primary)", f"{len(primary):,} ({len(tested):,} with a p-value)"),
        ("significant", f"{len(sig):,}"),
        ("alpha", f"{analysis.alpha:g} family-wise, {_e(analysis.correction)} correction"
         + (f" (corrected alpha {analysis.alpha_corrected:.3g})" if _finite(analysis.alpha_corrected) else "")),
        ("confidence intervals", f"{_e(analysis.ci_method)}, {analysis.ci_level:.0%}; case rule {_e(analysis.ci_case_rule)}"),
        ("CI cases", f"case 1: {cases[1]:,} · case 2: {cases[2]:,} · case 3: {cases[3]:,}"),
        ("data", f"{len(table):,} values in {runs:,} runs; {analysis.excluded or table.excluded:,} trials excluded (not ok)"),
    ]
    return (
        '<section id="verdict"><h2>Verdict</h2>'
        f'<p class="{cls}">{_e(verdict_sentence(analysis))}</p>'
        f"{_facts(facts)}</section>"
    )


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


def _test_row(v: TestVerdict, anchor: str | None, notes: bool) -> str:
    name = _e(v.test)
    if anchor:
        name = f'<a href="#{anchor}">{name}</a>'
    case = "" if v.ci_case is None else str(v.ci_case)
    cells = [
        f'<td class="name">{name}</td>',
        _num_td(v.n_fixed + v.n_random, f"{v.n_fixed} / {v.n_random}"),
        _num_td(v.kw_h, _fmt(v.kw_h)),
        _num_td(v.kw_p, _fmt_p(v.kw_p)),
        _num_td(v.p_adjusted, _fmt_p(v.p_adjusted)),
        f'<td class="text{" yes" if v.significant else ""}">{_yes_no(v.significant)}</td>',
        _num_td(v.eta2, _fmt(v.eta2, 3)),
        _num_td(v.delta_pct, _fmt_pct(v.delta_pct)),
        _num_td(v.cv_fixed, _fmt(v.cv_fixed, 3)),
        _num_td(v.cv_random, _fmt(v.cv_random, 3)),
        _html_td(v.median_fixed, _ci_text(v.median_fixed, v.ci_fixed)),
        _html_td(v.median_random, _ci_text(v.median_random, v.ci_random)),
        _num_td(v.ci_case, case or _DASH, "case1" if v.ci_case == 1 else ""),
    ]
    if notes:
        cells.append(f'<td class="text">{_e("; ".join(v.notes))}</td>')
    cls = ' class="sig"' if v.significant else ""
    return f"<tr{cls}>{''.join(cells)}</tr>"


def _test_table(verdicts: Sequence[TestVerdict], detail_ids: Mapping[tuple[str, str], str], ci_level: float,
                stratified: bool = False) -> str:
    """stratified: the rows combine workers with van Elteren's test, whose statistic is a
    chi-square with one degree of freedom, not Kruskal-Wallis H."""
    notes = any(v.notes for v in verdicts)
    titles = [t.format(ci=f"{ci_level:.0%}") for t, _ in _TEST_COLUMNS]
    if stratified:
        titles[titles.index("KW H")] = "van Elteren χ²"
    columns = tuple(zip(titles, (c for _, c in _TEST_COLUMNS))) + ((("notes", "text"),) if notes else ())
    head = "".join(f'<th class="{c}" scope="col">{_e(t)}</th>' if c else f'<th scope="col">{_e(t)}</th>' for t, c in columns)
    rows = "\n".join(_test_row(v, detail_ids.get((v.test, v.metric)), notes) for v in sorted(verdicts, key=_sort_key_p))
    tall = " tall" if len(verdicts) > TALL_ROWS else ""
    return f'<div class="scroll{tall}"><table class="sortable"><thead><tr>{head}</tr></thead><tbody>\n{rows}\n</tbody></table></div>'


def _tables_section(analysis: Analysis, detail_ids: Mapping[tuple[str, str], str]) -> str:
    out = ['<section id="tables"><h2>Tests: fixed order vs random order</h2>',
           '<p class="note">One row per test, as in the paper\'s Tables 3–5, sorted by p-value; '
           "click a column heading to sort. Δ% = (mean fixed − mean random) / mean fixed × 100. "
           "Rows in red are significant after the correction.</p>"]
    if not analysis.tests:
        out.append("<p>No tests were compared.</p>")
    groups: dict[tuple[bool, str], list[TestVerdict]] = {}
    for v in analysis.tests:
        groups.setdefault((not v.primary, v.metric), []).append(v)
    for (secondary, metric), vs in sorted(groups.items(), key=lambda kv: kv[0]):
        unit, better = vs[0].unit, vs[0].better
        label = plots.axis_label(metric, unit, better)
        family = "not in the correction family" if secondary else "primary"
        out.append(f"<h3>metric {_e(metric)} <span class=\"meta\">({_e(label)}; {family}; {len(vs):,} tests)</span></h3>")
        out.append(_test_table(vs, detail_ids, analysis.ci_level, stratified=analysis.combined is not None))
    out.append("</section>")
    return "\n".join(out)


def _figure_html(plot: plots.Plot) -> str:
    caption = f"<figcaption>{_e(plot.caption)}</figcaption>" if plot.caption else ""
    return f'<figure id="{_e(plot.key)}"><h3>{_e(plot.title)}</h3>\n{plot.svg}\n{caption}</figure>'


def _figures_section(analysis: Analysis, primary: Sequence[TestVerdict]) -> str:
    figures = [
        plots.pvalues_sorted(primary, analysis.alpha, analysis.alpha_corrected),
        plots.eta2_sorted(primary),
        plots.delta_sorted(primary),
        plots.ci_case_counts(primary, analysis.ci_level),
        plots.median_cis(primary, analysis.ci_level),
    ]
    shown = [f for f in figures if f is not None]
    body = (
        '<div class="figures">' + "\n".join(_figure_html(f) for f in shown) + "</div>"
        if shown
        else "<p>No test had enough values to plot.</p>"
    )
    legend = (
        '<p class="note">All primary comparisons. Colours: <span class="legend-fixed">fixed order</span>, '
        '<span class="legend-random">random order</span>; red marks significant tests and case 1.</p>'
    )
    return f'<section id="figures"><h2>Figures</h2>{legend}\n{body}</section>'


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


def _detail_section(table: TrialTable, detail: Sequence[TestVerdict], ids: Mapping[tuple[str, str], str], note: str, ci_level: float) -> str:
    out = ['<section id="detail"><h2>Per-test detail</h2>']
    if note:
        out.append(f'<p class="note">{_e(note)}</p>')
    if not detail:
        out.append("<p>No test to show.</p>")
    rows_of = _rows_of(table) if detail else None
    # "Over time" is drawn at each run's start as the diagnostics define it: some sources
    # (OrderSage) time trials on a clock that restarts with every run.
    starts = run_starts(table) if detail else np.zeros(0)
    run_origin = float(np.nanmin(starts)) if np.isfinite(starts).any() else None
    timed = np.isfinite(table.time)
    trial_origin = float(table.time[timed].min()) if detail and timed.any() else None
    for v in detail:
        anchor = ids[(v.test, v.metric)]
        rows = rows_of(v.test, v.metric)
        rows = rows[np.isfinite(table.value[rows])]  # as the analysis did
        summary = (
            f"p = {_fmt_p(v.kw_p)} (adjusted {_fmt_p(v.p_adjusted)}), significant: {_yes_no(v.significant)}, "
            f"eta²_H = {_fmt(v.eta2, 3)}, Δ% = {_fmt_pct(v.delta_pct)}, CI case {v.ci_case if v.ci_case is not None else _DASH}"
        )
        out.append(
            f'<article class="detail" id="{anchor}"><h3>{_e(v.test)} '
            f'<span class="meta">{_e(v.metric)}</span></h3><p class="meta">{_e(summary)}</p>'
        )
        if len(rows) == 0:
            out.append("<p>The trial table holds no values for this test.</p></article>")
            continue
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
        out.append(f"{plot.svg}</article>")
    out.append("</section>")
    return "\n".join(out)


# -- workers (fleets) -------------------------------------------------------------------------------

MEDIANS_SHOWN = 8  # workers whose median a fleet row spells out


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


def _worker_rows(analysis: Analysis, table: TrialTable) -> str:
    counts = _runs_and_boots(table)
    head = "".join(
        f'<th scope="col" class="text">{_e(h)}</th>' if h in ("worker", "order matters", "significant tests") else f'<th scope="col">{_e(h)}</th>'
        for h in ("worker", "order matters", "significant tests", "tested", "corrected alpha", "runs", "boots")
    )
    rows = []
    for w in analysis.workers:
        primary = [v for v in w.tests if v.primary]
        several = len({v.test for v in primary}) != len(primary)
        sig = sorted((v for v in primary if v.significant), key=_sort_key_p)
        names = ", ".join(f"{v.test} [{v.metric}]" if several else v.test for v in sig[:10]) + (f" and {len(sig) - 10:,} more" if len(sig) > 10 else "")
        runs, boots = counts.get(w.worker, (None, None))
        cls = ' class="sig"' if w.order_matters else ""
        rows.append(
            f'<tr{cls}><td class="name">{_e(w.worker)}</td><td class="text{" yes" if w.order_matters else ""}">{_yes_no(w.order_matters)}</td>'
            f'<td class="name">{_e(names or _DASH)}</td>'
            + _num_td(len(primary), f"{sum(v.kw_p is not None for v in primary):,} of {len(primary):,}")
            + _num_td(w.alpha_corrected, _fmt(w.alpha_corrected, 3))
            + _num_td(runs, f"{runs:,}" if runs is not None else _DASH)
            + _num_td(boots, f"{boots:,}" if boots else _DASH)
            + "</tr>"
        )
    return f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead><tbody>\n{"".join(rows)}\n</tbody></table></div>'


def _identity_html(analysis: Analysis) -> str:
    diag = analysis.diagnostics
    identity = diag.identity if diag is not None else None
    if diag is None:
        return "<p>Not computed (diagnostics were switched off).</p>"
    if identity is None:
        return "<p>The data holds no environment snapshots from two workers: whether they ran the same software cannot be checked.</p>"
    missing = (f'<p class="note">No snapshot from {_e(", ".join(identity.missing))}.</p>' if identity.missing else "")
    if identity.identical:
        return (f"<p>The {len(identity.workers):,} workers ran the same software on the same kind of machine: files, kernel, "
                f"CPU and its settings, and tool versions agree.</p>{missing}")
    rows = []
    for d in identity.differences:
        groups: dict[str, list[str]] = {}
        for worker, value in d.values.items():
            groups.setdefault("unknown or missing" if value is None else str(value), []).append(worker)
        cells = "".join(f'<li><code>{_e(v)}</code> <span class="meta">on {_e(", ".join(ws))}</span></li>' for v, ws in groups.items())
        rows.append(f'<tr><td class="name">{_e(d.what)}</td><td class="text"><ul>{cells}</ul></td></tr>')
    return (
        f'<p><span class="yes">not identical</span>: {len(identity.differences):,} difference'
        f'{"s" if len(identity.differences) != 1 else ""} between the workers\' environment snapshots.</p>{missing}'
        '<div class="scroll"><table><thead><tr><th scope="col" class="text">what</th><th scope="col" class="text">values</th>'
        f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    )


def _fleet_row(r: FleetRow) -> str:
    cls = ' class="sig"' if r.significant else ""
    items = list(r.medians.items())
    medians = ", ".join(f"{w} {_fmt(m)}" for w, m in items[:MEDIANS_SHOWN]) + (f", … ({len(items) - MEDIANS_SHOWN:,} more)" if len(items) > MEDIANS_SHOWN else "")
    return (
        f'<tr{cls}><td class="name">{_e(r.test)}</td><td class="text">{_e(r.metric)}</td>'
        + _num_td(r.workers, str(r.workers)) + _num_td(r.kw_h, _fmt(r.kw_h)) + _num_td(r.kw_p, _fmt_p(r.kw_p))
        + _num_td(r.p_adjusted, _fmt_p(r.p_adjusted)) + _sig_td(r.significant)
        + _num_td(r.spread_pct, _fmt(r.spread_pct, 3)) + f'<td class="text">{_e(medians)}</td>'
        + f'<td class="name">{_e(", ".join(r.outliers) or _DASH)}</td></tr>'
    )


def _fleet_html(analysis: Analysis) -> str:
    diag = analysis.diagnostics
    if diag is None or diag.fleet is None:
        return "<p>Not computed (diagnostics were switched off).</p>"
    if not diag.fleet:
        return "<p>No test was measured by two workers with enough values to compare.</p>"
    differing = sum(1 for r in diag.fleet if r.significant)
    rows = sorted(diag.fleet, key=lambda r: (0 if r.significant else 1, -(r.spread_pct or 0.0)))[:DIAGNOSTIC_ROWS]
    headers = ("test", "metric", "workers", "KW H", "p", "p adjusted", "significant", "spread %", "median per worker", "outliers")
    text_cols = {"test", "metric", "significant", "median per worker", "outliers"}
    head = "".join(f'<th scope="col" class="text">{_e(h)}</th>' if h in text_cols else f'<th scope="col">{_e(h)}</th>' for h in headers)
    shown = f"showing {len(rows):,} of {len(diag.fleet):,} tests, differing first" if len(rows) < len(diag.fleet) else f"{len(diag.fleet):,} tests"
    return (
        f"<p>The workers' results differ in {differing:,} of {len(diag.fleet):,} tests.</p>"
        f'<p class="note">{_e(shown)}. Kruskal-Wallis across workers (both arms), corrected over tests; spread = '
        "(largest − smallest worker median) / smallest × 100; outliers: workers that differ (Dunn's pairwise test, Holm) "
        "from more than half of the others.</p>"
        f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead><tbody>\n{"".join(_fleet_row(r) for r in rows)}\n</tbody></table></div>'
    )


def _workers_section(analysis: Analysis, table: TrialTable) -> str:
    """A fleet: how the combined rows treat the workers, each worker's verdict and rows, and
    whether the workers ran the same software and measure the same thing."""
    if analysis.combined is None:
        return ""
    out = ['<section id="workers"><h2>Workers</h2>',
           f'<p>{analysis.combined.workers:,} workers. The verdict and the tables above combine them {_e(analysis.combined.method)}.</p>']
    sentence = workers_sentence(analysis)
    out.append("<h3>Verdict per worker</h3>")
    if sentence:
        out.append(f"<p>{_e(sentence)}</p>")
    out.append(_worker_rows(analysis, table))
    for w in analysis.workers:
        primary = [v for v in w.tests if v.primary]
        if primary:
            out.append(f"<details><summary>tests on {_e(w.worker)} ({len(primary):,} primary comparisons)</summary>"
                       f"{_test_table(primary, {}, analysis.ci_level)}</details>")
    out.append("<h3>Identity: did every worker run the same software?</h3>")
    out.append(_identity_html(analysis))
    out.append("<h3>Fleet: do the workers measure the same thing?</h3>")
    out.append(_fleet_html(analysis))
    out.append("</section>")
    return "\n".join(out)


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


def _diag_table(headers: Sequence[str], rows: Sequence[str], total: int, what: str) -> str:
    text_cols = {"test", "metric", "after", "arm", "significant"}
    head = "".join(f'<th scope="col" class="text">{_e(h)}</th>' if h in text_cols else f'<th scope="col">{_e(h)}</th>' for h in headers)
    shown = f"showing {len(rows):,} of {total:,} {what}, significant first" if total > len(rows) else f"{total:,} {what}"
    return (
        f'<p class="note">{_e(shown)}.</p><div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead>'
        f"<tbody>\n{''.join(rows)}\n</tbody></table></div>"
    )


def _diag_order(items: Sequence[Any]) -> list[Any]:
    def key(d: Any) -> tuple[int, float]:
        p = d.p_adjusted if _finite(d.p_adjusted) else d.p
        return (0 if d.significant else 1, float(p) if _finite(p) else math.inf)

    return sorted(items, key=key)[:DIAGNOSTIC_ROWS]


def _sig_td(flag: bool | None) -> str:
    return f'<td class="text{" yes" if flag else ""}">{_yes_no(flag)}</td>'


def _positions(d: PositionEffect) -> str:
    last = getattr(d, "position_last", None)
    return str(d.position) if last is None or last == d.position else f"{d.position}–{last}"


def _position_row(d: PositionEffect) -> str:
    cls = ' class="sig"' if d.significant else ""
    return (
        f'<tr{cls}><td class="name">{_e(d.test)}</td><td class="text">{_e(d.metric)}</td>'
        + _num_td(d.position, _positions(d)) + _num_td(d.n_at, str(d.n_at)) + _num_td(d.n_other, str(d.n_other))
        + _num_td(d.median_at, _fmt(d.median_at)) + _num_td(d.median_other, _fmt(d.median_other))
        + _num_td(d.effect_pct, _fmt_pct(d.effect_pct)) + _num_td(d.p, _fmt_p(d.p))
        + _num_td(d.p_adjusted, _fmt_p(d.p_adjusted)) + _sig_td(d.significant) + "</tr>"
    )


def _carryover_row(d: Carryover) -> str:
    cls = ' class="sig"' if d.significant else ""
    return (
        f'<tr{cls}><td class="name">{_e(d.test)}</td><td class="text">{_e(d.metric)}</td>'
        f'<td class="name">{_e(d.after)}</td>'
        + _num_td(d.n_after, str(d.n_after)) + _num_td(d.n_other, str(d.n_other))
        + _num_td(d.median_after, _fmt(d.median_after)) + _num_td(d.median_other, _fmt(d.median_other))
        + _num_td(d.effect_pct, _fmt_pct(d.effect_pct)) + _num_td(d.p, _fmt_p(d.p))
        + _num_td(d.p_adjusted, _fmt_p(d.p_adjusted)) + _sig_td(d.significant) + "</tr>"
    )


def _trend_row(d: Trend) -> str:
    cls = ' class="sig"' if d.significant else ""
    return (
        f'<tr{cls}><td class="name">{_e(d.test)}</td><td class="text">{_e(d.metric)}</td>'
        f'<td class="text">{_e(d.arm)}</td>'
        + _num_td(d.n, str(d.n)) + _num_td(d.spearman_rho, _fmt(d.spearman_rho, 3))
        + _num_td(d.p, _fmt_p(d.p)) + _num_td(d.p_adjusted, _fmt_p(d.p_adjusted)) + _sig_td(d.significant) + "</tr>"
    )


def _diagnostics_section(analysis: Analysis, table: TrialTable) -> str:
    out = ['<section id="diagnostics"><h2>Diagnostics</h2>']
    diag = analysis.diagnostics
    out.append("<h3>Interleaving of the arms in time</h3>")
    if diag is not None and diag.interleaving is not None:
        il = diag.interleaving
        state = {True: "interleaved", False: "not interleaved", None: "unknown"}[il.interleaved]
        cls = ' class="yes"' if il.interleaved is False else ""
        out.append(
            f"<p><span{cls}>{state}</span>: {_e(il.detail)} "
            f'<span class="meta">({il.n_fixed_runs:,} fixed runs, {il.n_random_runs:,} random runs)</span></p>'
        )
    starts, arms = _run_starts(table)
    timeline = plots.run_timeline(starts, arms) if len(starts) else None
    if timeline is not None:
        out.append(_figure_html(timeline))
    elif diag is None or diag.interleaving is None:
        out.append("<p>The data does not say when runs started.</p>")
    if diag is None:
        out.append(
            "<p>No position, carry-over or trend diagnostics were computed: they need the run "
            "and the position of every trial.</p></section>"
        )
        return "\n".join(out)
    out.append("<h3>Position effects</h3>")
    out.append(
        '<p class="note">In the random arm each test runs at many positions: the median at one '
        "position against the median elsewhere, effect = (median at − median other) / median other × 100.</p>"
    )
    if diag.position_effects:
        out.append(_diag_table(
            ("test", "metric", "position", "n at", "n other", "median at", "median other", "effect %", "p", "p adjusted", "significant"),
            [_position_row(d) for d in _diag_order(diag.position_effects)], len(diag.position_effects), "position effects"))
    else:
        out.append("<p>None computed.</p>")
    out.append("<h3>Carry-over (effect of the preceding test)</h3>")
    if diag.carryover_balance is not None:
        out.append(f'<p class="note">{html.escape(diag.carryover_balance.detail)}</p>')
    if diag.carryover:
        out.append(_diag_table(
            ("test", "metric", "after", "n after", "n other", "median after", "median other", "effect %", "p", "p adjusted", "significant"),
            [_carryover_row(d) for d in _diag_order(diag.carryover)], len(diag.carryover), "predecessor effects"))
    else:
        out.append("<p>None computed.</p>")
    out.append("<h3>Trends within an arm over time</h3>")
    if diag.trends:
        out.append(_diag_table(
            ("test", "metric", "arm", "n", "Spearman rho", "p", "p adjusted", "significant"),
            [_trend_row(d) for d in _diag_order(diag.trends)], len(diag.trends), "trends"))
    else:
        out.append("<p>None computed.</p>")
    if diag.workers:
        out.append("<h3>Workers whose software differs</h3>")
        out.append(_value_html(diag.workers))
    out.append("</section>")
    return "\n".join(out)


# -- provenance -----------------------------------------------------------------------------------


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


def _pre(text: str, limit: int = TEXT_MAX) -> str:
    cut = ""
    if len(text) > limit:
        cut = f"\n… ({len(text) - limit:,} more characters not shown)"
        text = text[:limit]
    return f"<pre>{_e(text + cut)}</pre>"


def _json_text(obj: Any) -> str:
    return json.dumps(_plain(obj), indent=1, default=str, ensure_ascii=False)


def _value_html(obj: Any, depth: int = 0) -> str:
    """Any provenance value as escaped HTML: short scalars inline, mappings as key/value
    tables, lists of records as tables, long text as preformatted blocks."""
    obj = _plain(obj)
    limit = TEXT_MAX if depth == 0 else NESTED_TEXT_MAX
    if obj is None or isinstance(obj, (bool, int, float)):
        return _e(json.dumps(obj, default=str))
    if isinstance(obj, str):
        return _e(obj) if len(obj) <= 200 and "\n" not in obj else _pre(obj, limit)
    if depth >= 3:
        return _pre(_json_text(obj), limit)
    if isinstance(obj, Mapping):
        items = list(obj.items())
        rows = "".join(f"<tr><td>{_e(k)}</td><td>{_value_html(v, depth + 1)}</td></tr>" for k, v in items[:200])
        more = f'<p class="note">… {len(items) - 200:,} more entries</p>' if len(items) > 200 else ""
        block = f'<table class="kv"><tbody>{rows}</tbody></table>{more}'
        # Long mappings (a start time per run, ...) fold away until asked for.
        return block if len(items) <= 12 else f"<details><summary>{len(items):,} entries</summary>{block}</details>"
    if isinstance(obj, list):
        if obj and all(isinstance(x, Mapping) for x in obj):
            keys: list[str] = []
            for x in obj[:50]:
                keys.extend(k for k in x if k not in keys)
            head = "".join(f'<th class="text">{_e(k)}</th>' for k in keys)
            body = "".join(
                "<tr>" + "".join(f'<td class="text">{_value_html(x.get(k, ""), depth + 2)}</td>' for k in keys) + "</tr>"
                for x in obj[:50]
            )
            more = f'<p class="note">… {len(obj) - 50:,} more rows</p>' if len(obj) > 50 else ""
            return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}'
        if all(x is None or isinstance(x, (bool, int, float, str)) for x in obj):
            text = ", ".join(str(x) for x in obj)
            return _e(text) if len(text) <= 200 else _pre(text, limit)
        return _pre(_json_text(obj), limit)
    return _e(obj)


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


def _snapshots_html(snapshots: Any) -> str:
    """Environment snapshots of many runs, folded: one row per setting, its value when all runs
    agree, and otherwise each distinct value with the runs that had it (differences stand out)."""
    snapshots = _plain(snapshots)
    if isinstance(snapshots, list):
        snapshots = {str(i): s for i, s in enumerate(snapshots)}
    if not isinstance(snapshots, Mapping) or not snapshots:
        return _value_html(snapshots)
    flat = {str(run): _flatten(s) for run, s in snapshots.items()}
    keys: list[str] = []
    for f in flat.values():
        keys.extend(k for k in f if k not in keys)
    rows = []
    for key in keys:
        by_value: dict[str, list[str]] = {}
        for run, f in flat.items():
            by_value.setdefault(f.get(key, "(missing)"), []).append(run)
        if len(by_value) == 1:
            (value,) = by_value
            cell = _e(value) if len(value) <= 300 else _pre(value)
            rows.append(f"<tr><td>{_e(key)}</td><td>{cell}</td></tr>")
            continue
        items = sorted(by_value.items(), key=lambda kv: -len(kv[1]))
        shown = "".join(
            f'<li>{_e(v[:300])} <span class="meta">({"runs" if len(rs) > 1 else "run"} {_e(_ranges(rs))})</span></li>'
            for v, rs in items[:8]
        )
        more = f"<li class=\"meta\">… {len(items) - 8:,} more values</li>" if len(items) > 8 else ""
        rows.append(f'<tr><td>{_e(key)}</td><td><span class="differs">{len(items):,} different values</span><ul>{shown}{more}</ul></td></tr>')
    return f'<p class="note">{len(flat):,} snapshots.</p><table class="kv"><tbody>{"".join(rows)}</tbody></table>'


PLAN_ROWS = 40  # runs listed in the plan table
ORDER_NAMES = 12  # tests named per run in the plan table


def _plan_html(plan: Any) -> str:
    """The plan: how the arms alternate in time, and each run's order (bounded, so that a
    plan of hundreds of runs over thousands of tests stays readable and small)."""
    plan = _plain(plan)
    if isinstance(plan, list):  # a journal's plan: one record per run
        plan = {"runs": plan}
    runs = plan.get("runs") if isinstance(plan, Mapping) else None
    if not isinstance(runs, list) or not all(isinstance(r, Mapping) for r in runs):
        return _pre(plan) if isinstance(plan, str) else _value_html(plan)
    names = plan.get("test_names") or []
    facts = [(k, _value_html(v, 2)) for k, v in plan.items() if k not in ("runs", "test_names")]
    arms = "".join({"fixed": "F", "random": "R"}.get(str(r.get("arm")), "?") for r in runs)
    facts.append(("runs", f"{len(runs):,}"))
    facts.append(("arms in time order (F fixed, R random)", _pre(arms) if len(arms) > 100 else _e(arms)))
    statuses: dict[str, int] = {}
    for r in runs:
        if "status" in r:
            statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    if statuses:
        facts.append(("run status", _e(", ".join(f"{n:,} {s}" for s, n in statuses.items()))))

    def order_text(order: Any) -> str:
        order = order if isinstance(order, list) else []
        shown = [str(names[i]) if isinstance(i, int) and 0 <= i < len(names) else str(i) for i in order[:ORDER_NAMES]]
        return ", ".join(shown) + (f", … ({len(order) - ORDER_NAMES:,} more)" if len(order) > ORDER_NAMES else "")

    rows = "".join(
        f'<tr><td>{_e(r.get("index", r.get("run", i)))}</td><td class="text">{_e(r.get("arm", ""))}</td>'
        f'<td class="text">{_e(r.get("status", ""))}</td><td class="name">{_e(order_text(r.get("order")))}</td></tr>'
        for i, r in enumerate(runs[:PLAN_ROWS])
    )
    more = f'<p class="note">… {len(runs) - PLAN_ROWS:,} more runs</p>' if len(runs) > PLAN_ROWS else ""
    table = (
        '<div class="scroll"><table><thead><tr><th>run</th><th class="text">arm</th><th class="text">status</th>'
        f'<th class="text">order</th></tr></thead><tbody>{rows}</tbody></table></div>{more}'
    )
    return _facts(facts) + f"<details><summary>runs and their orders</summary>{table}</details>"


def _provenance_html(prov: Mapping[str, Any]) -> str:
    out = []
    special = {
        "tool_version": ("tool version", _value_html),
        "seed": ("seed", _value_html),
        "spec": ("spec", lambda s: _pre(s) if isinstance(s, str) else _value_html(s)),
        "plan": ("plan", _plan_html),
        "snapshots": ("environment snapshots", _snapshots_html),
    }
    for key, (label, fn) in special.items():
        if key in prov and prov[key] is not None:
            out.append(f"<h3>{_e(label)}</h3>{fn(prov[key])}")
    for key, value in prov.items():
        if key in special or key == "parts":
            continue
        out.append(f"<h3>{_e(key)}</h3>{_value_html(value)}")
    parts = prov.get("parts")
    if isinstance(parts, list):
        for i, part in enumerate(parts):
            if isinstance(part, Mapping) and part:
                out.append(f'<section class="part"><h3>source part {i + 1}</h3>{_provenance_html(part)}</section>')
    return "\n".join(out)


def _provenance_section(analysis: Analysis, table: TrialTable) -> str:
    sources = analysis.sources or table.sources
    facts = [
        ("tool", f"benchsage {_e(analysis.tool_version)} (report written by {_e(__version__)})"),
        ("sources", "<br>".join(_e(s) for s in sources) or _DASH),
        ("tests", f"{len(table.test_names):,}"),
        ("metrics", _e(", ".join(table.metric_names)) or _DASH),
        ("workers", _e(", ".join(table.worker_names[:50])) + (" …" if len(table.worker_names) > 50 else "") or _DASH),
    ]
    merged: dict[str, Any] = dict(table.provenance)
    for k, v in analysis.provenance.items():
        merged.setdefault(k, v)
    body = _provenance_html(merged) if merged else "<p>The data carries no provenance.</p>"
    return f'<section id="provenance"><h2>Provenance</h2>{_facts(facts)}\n{body}</section>'


def _warnings_section(analysis: Analysis, table: TrialTable) -> str:
    seen: dict[str, None] = {}
    for w in (*analysis.warnings, *table.warnings):
        seen.setdefault(str(w), None)
    items = list(seen)
    if not items:
        return '<section id="warnings"><h2>Warnings</h2><p>None.</p></section>'
    shown = "".join(f"<li>{_e(w)}</li>" for w in items[:WARNINGS_MAX])
    more = f"<li>… {len(items) - WARNINGS_MAX:,} more</li>" if len(items) > WARNINGS_MAX else ""
    return f'<section id="warnings"><h2>Warnings</h2><ul class="warnings">{shown}{more}</ul></section>'
