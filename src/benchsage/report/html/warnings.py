"""The warnings of the analysis and of the data, each once, bounded."""

from __future__ import annotations

from typing import Any

from benchsage.report.html.material import Material
from benchsage.report.words import said

KEY = "warnings"
TITLE = "Warnings"
WARNINGS_MAX = 200


def view(material: Material) -> dict[str, Any]:
    analysis, table = material.analysis, material.table
    seen: dict[str, None] = {}
    for w in (*said(analysis.warnings, once=True), *table.warnings):
        seen.setdefault(str(w), None)
    distinct = list(seen)
    return {"shown": distinct[:WARNINGS_MAX], "more": max(0, len(distinct) - WARNINGS_MAX)}
