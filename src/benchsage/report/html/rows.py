"""Rows of long tables: how many each section shows and in which order (the notable first),
and the short text of a row's medians."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from benchsage.report.html.numbers import finite, fmt

DIAGNOSTIC_ROWS = 50  # rows per diagnostics table (significant first)
TREATMENT_ROWS = 50  # rows of a context, observer or factorial table (the notable first)
FIGURE_ROWS = 40  # tests (or test and level) in an observer or allocation figure
MEDIANS_SHOWN = 8  # workers (or contexts) whose median a row spells out


def floats(values: Any) -> np.ndarray:
    """Numbers (None where unknown) as floats, NaN for None."""
    return np.array([x if finite(x) else np.nan for x in values], dtype=np.float64)


def p_key(row: Mapping[str, Any]) -> float:
    p = row.get("p_adjusted") if finite(row.get("p_adjusted")) else row.get("p", row.get("kw_p"))
    return float(p) if finite(p) else math.inf


def notable_first(rows: Sequence[Mapping[str, Any]], limit: int, what: str) -> dict[str, Any]:
    """Significant rows first, then by p; at most `limit`, with a note saying how many."""
    shown = sorted(rows, key=lambda r: (0 if r.get("significant") else 1, p_key(r)))[:limit]
    note = f"showing {len(shown):,} of {len(rows):,} {what}, significant first" if len(shown) < len(rows) else f"{len(rows):,} {what}"
    return {"rows": shown, "shown": note}


def medians_text(medians: Mapping[str, Any]) -> str:
    """'c0 1.005, c1 0.9012, …' for a table cell, bounded."""
    shown = list(medians.items())
    more = f", … ({len(shown) - MEDIANS_SHOWN:,} more)" if len(shown) > MEDIANS_SHOWN else ""
    return ", ".join(f"{name} {fmt(m)}" for name, m in shown[:MEDIANS_SHOWN]) + more
