"""The analysis JSON (report/json.py): what json.dumps writes, the diagnostic rows encoded a
column at a time included."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

from benchsage.analyze.verdict import Analysis, Carryover, Diagnostics, Interleaving, PositionEffect, Rows, Trend
from benchsage.report.json import analysis_json, analysis_json_text, rows_json_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analyze"))
from rows_data import trend_rows  # noqa: E402


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(trend_rows())
def test_json_text_is_what_json_dumps_writes(rows: Rows[Trend]) -> None:
    expected = json.dumps([dict(vars(r)) for r in rows], separators=(",", ":"), allow_nan=False)
    assert rows_json_text(rows) == expected
    assert rows.records() == [dict(vars(r)) for r in rows]


def test_mixed_and_unusual_columns_fall_back_to_json_dumps() -> None:
    rows = Rows(
        Carryover,
        {
            "test": ["a", "b"], "metric": ["m", "m"], "after": ["(reset)", "a"],
            "n_after": [5, 6], "n_other": [7.0, 8],  # a float and an int in one column
            "median_after": [1.5, None], "median_other": [2.0, 3.0], "effect_pct": [1e300, -0.0],
            "p": [0.5, 1e-320], "p_adjusted": [1.0, None], "significant": [False, None],
        },
    )
    assert rows_json_text(rows) == json.dumps(rows.records(), separators=(",", ":"))


def test_non_finite_numbers_are_refused_as_json_dumps_refuses_them() -> None:
    rows = Rows(Trend, {"test": ["a"], "metric": ["m"], "arm": ["fixed"], "n": [3], "spearman_rho": [math.nan], "p": [None], "p_adjusted": [None], "significant": [None]})
    with pytest.raises(ValueError, match="JSON compliant"):
        rows_json_text(rows)


def test_analysis_json_text_equals_json_dumps_of_to_json() -> None:
    effect = PositionEffect('he said "hi" \\ \u00e9', "m", 0, 5, 6, 1.0, 2.0, -50.0, 0.01, 0.02, True, None)
    rows = Rows(PositionEffect, {f: [getattr(effect, f)] * 3 for f in vars(effect)})
    for position_effects in (rows, (effect,), ()):
        analysis = Analysis(
            tool_version="0", alpha=0.05, correction="bonferroni", alpha_corrected=0.05, ci_method="exact-binomial",
            ci_level=0.95, ci_case_rule="paper", order_matters=False, tests=(), warnings=("w",),
            diagnostics=Diagnostics(Interleaving(True, "ok", 1, 1), position_effects=position_effects),
        )
        extra = {"experiment": "x"}
        doc = analysis_json(analysis)
        doc.update(extra)
        assert analysis_json_text(analysis, extra) == json.dumps(doc, separators=(",", ":"), allow_nan=False)
        assert analysis_json_text(analysis, indent=2) == json.dumps(analysis_json(analysis), indent=2, allow_nan=False)
