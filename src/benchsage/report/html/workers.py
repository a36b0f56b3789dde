"""A fleet's workers: how the combined rows treat them, each worker's verdict and rows, and
whether the workers ran the same software and measure the same thing."""

from __future__ import annotations

from typing import Any

from benchsage.analyze.summary import workers_sentence
from benchsage.analyze.verdict import Analysis
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import DASH
from benchsage.report.html.rows import DIAGNOSTIC_ROWS, medians_text
from benchsage.report.html.tables import sort_key_p, verdict_table
from benchsage.store.table import TrialTable

KEY = "workers"
TITLE = "Workers"


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
        sig = sorted((v for v in primary if v.significant), key=sort_key_p)
        names = ", ".join(f"{v.test} [{v.metric}]" if several else v.test for v in sig[:10]) + (f" and {len(sig) - 10:,} more" if len(sig) > 10 else "")
        runs, boots = counts.get(w.worker, (None, None))
        rows.append({
            "worker": w.worker,
            "order_matters": w.order_matters,
            "names": names or DASH,
            "primary": len(primary),
            "tested": f"{sum(v.kw_p is not None for v in primary):,} of {len(primary):,}",
            "alpha_corrected": w.alpha_corrected,
            "runs": runs,
            "boots": boots,
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


def view(material: Material) -> dict[str, Any] | None:
    """None unless the data comes from a fleet."""
    analysis, table = material.analysis, material.table
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
