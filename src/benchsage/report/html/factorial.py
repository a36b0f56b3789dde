"""Factorial designs (2^k r, Jain): each term's effect and its share of the variation; with a
factor of more than two levels, each term's share of the variation and its F test."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchsage.report import plots
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import DASH, counted, finite
from benchsage.report.html.rows import FIGURE_ROWS, TREATMENT_ROWS

KEY = "factorial"
TITLE = "Factorial"
HEADING = "Factorial"
OPEN = True  # the factors the spec varied on purpose: a question the experiment asked


def gist(shown: dict[str, Any]) -> str:
    """'2 tests; 3 terms with an effect' (a significant F test, or an effect whose CI excludes 0)."""
    terms = [t for t in shown["lines"] if t["term"] not in (None, "error")]
    effects = sum(1 for t in terms if t.get("significant") or t.get("excludes_zero"))
    return f"{counted(shown['total'], 'test')}; {counted(effects, 'term')} with an effect"


def view(material: Material) -> dict[str, Any] | None:
    """Each term's effect q with its interval and share of the variation (an ANOVA design: its df,
    F, corrected p and share of the variation); None without factors."""
    rows = material.doc.get("factorial")
    if rows is None:
        return None
    several = len({r["metric"] for r in rows}) > 1
    anova = any(r.get("design") == "anova" for r in rows)
    lines = []
    for r in rows[:TREATMENT_ROWS]:
        if not r.get("terms"):
            lines.append({"test": r["test"], "metric": r["metric"], "term": None, "reason": r.get("reason") or DASH})
            continue
        if anova:
            lines.extend({"test": r["test"], "metric": r["metric"], "term": t["term"], "df": t.get("df"), "f": t.get("f"),
                          "p_adjusted": t.get("p_adjusted"), "significant": t.get("significant"),
                          "variation_pct": t.get("variation_pct")} for t in r["terms"])
            continue
        for t in r["terms"]:
            ci = t.get("ci")
            excludes = None if ci is None or not all(finite(x) for x in ci) else bool(ci[0] > 0 or ci[1] < 0)
            lines.append({"test": r["test"], "metric": r["metric"], "term": t["term"], "effect": t.get("effect"), "ci": ci,
                          "variation_pct": t.get("variation_pct"), "excludes_zero": excludes})
    analysed = [r for r in rows if r.get("terms")]
    designs = list(dict.fromkeys(
        "; ".join(f"{name}: {', '.join(lv) if anova else f'{lv[0]} → {lv[1]}'}" for name, lv in (r.get("levels") or {}).items())
        + (f" (r = {r['r']} replications per cell)" if r.get("r") is not None else "") for r in analysed))
    figure = None
    if analysed:
        terms = [t["term"] for t in analysed[0]["terms"]]
        shown = [r for r in analysed if [t["term"] for t in r["terms"]] == terms][:FIGURE_ROWS]
        shares = np.array([[t.get("variation_pct") if finite(t.get("variation_pct")) else np.nan for t in r["terms"]] for r in shown])
        figure = plots.allocation_of_variation(
            [f"{r['test']} [{r['metric']}]" if several else str(r["test"]) for r in shown], terms, shares)
    more = max(0, len(rows) - TREATMENT_ROWS)
    units = {m: material.table.metric_info(m).unit for m in material.table.metric_names}
    return {"lines": lines, "designs": designs, "figure": figure, "more": more, "total": len(rows), "anova": anova, "units": units}
