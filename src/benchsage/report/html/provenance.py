"""Provenance: the tool, the sources, and everything the data records about how it was made
(spec, seed, plan, environment snapshots, ...), merged from the table and the analysis."""

from __future__ import annotations

from typing import Any

from benchsage.report.html.material import Material
from benchsage.report.html.numbers import DASH
from benchsage.report.html.values import provenance_node
from benchsage.vocabulary import VERSION

KEY = "provenance"
TITLE = "Provenance"


def view(material: Material) -> dict[str, Any]:
    analysis, table = material.analysis, material.table
    workers = ", ".join(table.worker_names[:50]) + (" …" if len(table.worker_names) > 50 else "")
    merged: dict[str, Any] = dict(table.provenance)
    for k, v in analysis.provenance.items():
        merged.setdefault(k, v)
    return {
        "tool": f"benchsage {analysis.tool_version} (report written by {VERSION})",
        "sources": list(analysis.sources or table.sources),
        "facts": [("tests", f"{len(table.test_names):,}"), ("metrics", ", ".join(table.metric_names) or DASH),
                  ("workers", workers or DASH)],
        "tree": provenance_node(merged) if merged else None,
    }
