"""The summary figures over every primary test: the paper's Figures 2-6 (plots.py draws them)."""

from __future__ import annotations

from typing import Any

from benchsage.report import plots
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import counted

KEY = "figures"
TITLE = "Figures"
HEADING = "Figures"
OPEN = False


def gist(shown: dict[str, Any]) -> str:
    return f"{counted(len(shown['shown']), 'figure')} of every primary test" if shown["shown"] else "none"


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
