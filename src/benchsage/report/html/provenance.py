"""Provenance: the tool, the sources, and everything the data records about how it was made
(spec, seed, plan, environment snapshots, ...), merged from the table and the analysis."""

from __future__ import annotations

from typing import Any

from benchsage.report.html.material import Material
from benchsage.report.html.numbers import DASH, counted
from benchsage.report.html.values import is_time, provenance_node, utc
from benchsage.vocabulary import VERSION

KEY = "provenance"
TITLE = "Provenance"
HEADING = "Provenance"
OPEN = False


def gist(shown: dict[str, Any]) -> str:
    """'benchsage 0.1.0, created 2026-11-28 17:09:45 UTC; spec, plan, 60 environment snapshots'."""
    return "; ".join(part for part in (shown["made"], ", ".join(shown["recorded"])) if part) or "nothing recorded"


def _recorded(version: str | None, merged: dict[str, Any]) -> dict[str, Any]:
    """What the gist says: which tool made the data and when, and what it recorded."""
    made = [f"benchsage {version}"] if version else []
    if is_time("created", merged.get("created")):
        made.append(f"created {utc(float(merged['created']))}")
    recorded = [key for key in ("spec", "plan") if merged.get(key)]
    if merged.get("snapshots"):
        recorded.append(counted(len(merged["snapshots"]), "environment snapshot"))
    return {"made": ", ".join(made), "recorded": recorded}


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
    version = f"benchsage {analysis.tool_version}" if analysis.tool_version else "a benchsage version not recorded"
    return {
        **_recorded(analysis.tool_version, merged),
        "tool": f"{version} (report written by {VERSION})",
        "sources": list(analysis.sources or table.sources),
        "facts": facts,
        "tree": provenance_node(merged) if merged else None,
    }
