"""A fleet's workers: how the combined rows treat them, each worker's verdict and rows, and
whether the workers ran the same software and measure the same thing."""

from __future__ import annotations

from typing import Any

from benchsage.analyze.verdict import Analysis
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import DASH, counted
from benchsage.report.html.rows import DIAGNOSTIC_ROWS, medians_text
from benchsage.report.html.tables import sort_key_p, verdict_table
from benchsage.report.words import workers_sentence
from benchsage.report.words.verdict import names as named

KEY = "workers"
TITLE = "Workers"
HEADING = "Workers"
OPEN = False  # each worker's rows; its gist says what matters (where the order matters, identity)
WORKER_NAMES = 10  # a worker's significant tests named up to this many


def _worker_rows(analysis: Analysis) -> list[dict[str, Any]]:
    rows = []
    for w in analysis.workers:
        s = w.summary
        primary = [v for v in w.tests if v.primary]
        names = named(sorted(s.significant, key=sort_key_p), s.several_metrics, WORKER_NAMES, "{:,}")
        rows.append({
            "worker": w.worker,
            "order_matters": w.order_matters,
            "names": names or DASH,
            "primary": s.primary,
            "tested": f"{s.tested:,} of {s.primary:,}",
            "alpha_corrected": w.alpha_corrected,
            "runs": w.runs,
            "boots": w.boots,
            "table": verdict_table(primary, {}, analysis.ci_level) if primary else None,
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
            "rows": [(r, medians_text(r.medians), ", ".join(r.outliers) or DASH) for r in rows]}


def gist(shown: dict[str, Any]) -> str:
    """'3 workers; the order matters on 1; their software differs'."""
    matters = sum(1 for w in shown["rows"] if w["order_matters"])
    text = f"{counted(shown['count'], 'worker')}; the order matters on {matters:,}"
    identity = {"identical": "; the same software", "differs": "; their software differs"}
    return text + identity.get(shown["identity"]["state"], "")


def view(material: Material) -> dict[str, Any] | None:
    """None unless the data comes from a fleet."""
    analysis = material.analysis
    if analysis.combined is None or not analysis.fleet:
        return None
    return {
        "count": analysis.combined.workers,
        "method": analysis.combined.method,
        "sentence": workers_sentence(analysis),
        "rows": _worker_rows(analysis),
        "identity": _identity_view(analysis),
        "fleet": _fleet_view(analysis),
    }
