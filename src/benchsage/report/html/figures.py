"""The summary figures over every primary test: the paper's Figures 2-6 (plots.py draws them)."""

from __future__ import annotations

from typing import Any

from benchsage.report import plots
from benchsage.report.html.material import Material

KEY = "figures"
TITLE = "Figures"


def view(material: Material) -> dict[str, Any]:
    analysis, primary = material.analysis, material.primary
    figures = [
        plots.pvalues_sorted(primary, analysis.alpha, analysis.alpha_corrected),
        plots.eta2_sorted(primary),
        plots.delta_sorted(primary),
        plots.ci_case_counts(analysis.summary.ci_cases, analysis.ci_level),
        plots.median_cis(primary, analysis.ci_level),
    ]
    return {"shown": [f for f in figures if f is not None]}
