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
    facts = [("tests", f"{len(table.test_names):,}"), ("metrics", ", ".join(table.metric_names) or DASH), ("workers", workers or DASH)]
    deploy = merged.get("deploy")
    if isinstance(deploy, dict):  # the software every worker ran, verified by tree id
        what = f"commit {deploy.get('commit')}" if deploy.get("commit") else f"folder, tree {deploy.get('tree')}"
        extra = f" with {len(deploy['dirty'])} uncommitted files" if deploy.get("dirty") else ""
        facts.append(("deployed", f"{what}{extra} to {len({h.get('worker') for h in deploy.get('hosts') or ()})} hosts, each verified"))
    return {
        "tool": f"benchsage {analysis.tool_version} (report written by {VERSION})",
        "sources": list(analysis.sources or table.sources),
        "facts": facts,
        "tree": provenance_node(merged) if merged else None,
    }
