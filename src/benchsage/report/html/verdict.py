"""The verdict: did the order of tests matter, in one sentence, and the facts behind it."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchsage.analyze.summary import verdict_sentence
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import finite

KEY = "verdict"
TITLE = "Verdict"


def view(material: Material) -> dict[str, Any]:
    analysis, table, primary = material.analysis, material.table, material.primary
    tested = [v for v in primary if v.kw_p is not None]
    cases = {c: sum(1 for v in primary if v.ci_case == c) for c in (1, 2, 3)}
    runs = int(len(np.unique(table.run[table.run >= 0]))) if len(table) else 0
    corrected = f" (corrected alpha {analysis.alpha_corrected:.3g})" if finite(analysis.alpha_corrected) else ""
    facts = [
        ("comparisons (primary)", f"{len(primary):,} ({len(tested):,} with a p-value)"),
        ("significant", f"{len(analysis.significant_tests):,}"),
        ("alpha", f"{analysis.alpha:g} family-wise, {analysis.correction} correction{corrected}"),
        ("confidence intervals", f"{analysis.ci_method}, {analysis.ci_level:.0%}; case rule {analysis.ci_case_rule}"),
        ("CI cases", f"case 1: {cases[1]:,} · case 2: {cases[2]:,} · case 3: {cases[3]:,}"),
        ("data", f"{len(table):,} values in {runs:,} runs; {analysis.excluded or table.excluded:,} trials excluded (not ok)"),
    ]
    return {"effect": analysis.order_matters, "sentence": verdict_sentence(analysis), "facts": facts}
