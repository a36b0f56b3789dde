"""The warnings of the analysis and of the data, each once, bounded."""

from __future__ import annotations

from typing import Any

from benchsage.report.html.material import Material
from benchsage.report.html.numbers import counted
from benchsage.report.words import said

KEY = "warnings"
TITLE = "Warnings"
HEADING = "Warnings"
OPEN = False
WARNINGS_MAX = 200


def gist(shown: dict[str, Any]) -> str:
    n = len(shown["shown"]) + shown["more"]
    return counted(n, "warning") if n else "none"


def view(material: Material) -> dict[str, Any]:
    analysis, table = material.analysis, material.table
    distinct = said((*analysis.warnings, *table.warnings), once=True)
    return {"shown": distinct[:WARNINGS_MAX], "more": max(0, len(distinct) - WARNINGS_MAX)}
