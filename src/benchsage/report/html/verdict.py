"""The verdict: the one-screen answer the terminal opens with (report/words/answer.py), then the
facts behind it."""

from __future__ import annotations

from typing import Any

from benchsage.report.html.material import Material
from benchsage.report.html.numbers import finite
from benchsage.report.words import verdict_sentence
from benchsage.report.words.answer import answer

KEY = "verdict"
TITLE = "Verdict"


def view(material: Material) -> dict[str, Any]:
    analysis, table = material.analysis, material.table
    s = analysis.summary
    cases = dict(zip((1, 2, 3), s.ci_cases))
    corrected = f" (corrected alpha {analysis.alpha_corrected:.3g})" if finite(analysis.alpha_corrected) else ""
    facts = [
        ("comparisons (primary)", f"{s.primary:,} ({s.tested:,} with a p-value)"),
        ("significant", f"{len(analysis.significant_tests):,}"),
        ("alpha", f"{analysis.alpha:g} family-wise, {analysis.correction} correction{corrected}"),
        ("confidence intervals", f"{analysis.ci_method}, {analysis.ci_level:.0%}; case rule {analysis.ci_case_rule}"),
        ("CI cases", f"case 1: {cases[1]:,} · case 2: {cases[2]:,} · case 3: {cases[3]:,}"),
        ("data", f"{analysis.values:,} values in {analysis.runs:,} runs; {analysis.excluded or table.excluded:,} trials excluded (not ok)"),
    ]
    lines = answer(analysis)
    return {"effect": analysis.order_matters, "verdict": analysis.verdict, "headline": lines[0],
            "lines": lines[1:-1], "method": lines[-1].text, "sentence": verdict_sentence(analysis), "facts": facts}
