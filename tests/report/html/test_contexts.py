"""Context effects (report/html/contexts.py): the table, and the figure of each claim's ratio and
each test's median per context with the intervals the analysis computed."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.verdict import Analysis
from benchsage.report import plots
from benchsage.report.html import contexts
from benchsage.report.html.numbers import fmt, fmt_p
from benchsage.store.table import TrialTable
from benchsage.report.treatments_json import comparison_json

from reports import CLAIM_A, CLAIM_B, row_text, section_of


def test_context_effects_table_and_figure(treated: tuple[Analysis, TrialTable, Path]) -> None:
    import xml.etree.ElementTree as ET

    analysis, _, path = treated
    section = section_of(path.read_text(encoding="utf-8"), "contexts")
    for effect in analysis.context_effects:
        (row,) = row_text(section, effect.test)
        assert row[2:8] == [str(len(effect.medians)), fmt(effect.kw_h), fmt_p(effect.kw_p),
                            fmt_p(effect.p_adjusted), "yes" if effect.significant else "no", fmt(effect.spread_pct, 3)]
        assert row[8].startswith(fmt_p(effect.by["env_bytes"])) and row[9].startswith(fmt_p(effect.by["cpus"]))
        assert row[10].startswith(", ".join(f"{c} {fmt(m)}" for c, m in list(effect.medians.items())[:3]))
    assert [e.significant for e in analysis.context_effects if e.test == CLAIM_A] == [True]
    figure = re.search(r'<figure id="fig-contexts">.*?</figure>', section, re.S).group(0)
    svg = ET.fromstring(re.search(r"<svg\b.*?</svg>", figure, re.S).group(0))
    labels = ["".join(t.itertext()) for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    # One panel for the claim (the ratio per context), one per test (its median per context),
    # contexts placed by their environment size.
    assert f"{CLAIM_A} / {CLAIM_B} (wall_time)" in labels and f"{CLAIM_A} (wall_time)" in labels and "o2 (wall_time)" in labels
    assert labels.count("env_bytes") == 3
    assert len(re.findall(r'id="fig-contexts-axes_\d+"', figure)) == 3


def test_the_context_figure_draws_each_context_median_and_its_exact_interval(treated: tuple[Analysis, TrialTable, Path]) -> None:
    from scipy import stats

    from benchsage.analyze.treatments import order_rows

    analysis, table, _ = treated
    settings = contexts._context_settings(table)
    assert settings["c0"] == {"env_bytes": "3000", "cpus": "0"}
    panels = contexts._test_panels(analysis.context_effects, table, settings)
    examined = order_rows(table)  # the lightest observer level, as the context analysis
    names, codes = examined.levels("context")
    for effect, panel in zip(analysis.context_effects, panels):
        test = examined.test == examined.test_names.index(effect.test)
        for i, context in enumerate(panel.labels):
            x = np.sort(examined.value[test & (codes == names.index(context))])
            n = len(x)
            # Largest l whose interval [x(l), x(n-l+1)] still covers the median with >= 95%.
            l = max(k for k in range(1, n // 2 + 1) if stats.binom.cdf(n - k, n, 0.5) - stats.binom.cdf(k - 1, n, 0.5) >= 0.95)
            assert panel.y[i] == pytest.approx(np.median(x), rel=1e-12)
            assert (panel.low[i], panel.high[i]) == (x[l - 1], x[n - l])
        assert list(panel.x) == [float(settings[c]["env_bytes"]) for c in panel.labels]
    claim = contexts._comparison_panel(comparison_json(analysis.comparisons[0]), settings)
    per = analysis.comparisons[0].per_context
    assert list(claim.y) == [s.comparison.ratio for s in per] and claim.reference == 1.0
    assert claim.colours == [{"a": plots.A_BETTER_COLOUR, "b": plots.SIGNIFICANT_COLOUR}.get(s.better, plots.UNDECIDED_COLOUR) for s in per]
