"""Diagnostic rows kept as columns (verdict.Rows) and their JSON, against json.dumps."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.analyze.verdict import Analysis, Carryover, Diagnostics, Interleaving, PositionEffect, Rows, Trend

names = st.text(max_size=12)  # any unicode: quotes, backslashes, control characters, NUL, emoji
maybe_float = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False))
maybe_bool = st.one_of(st.none(), st.booleans())


@st.composite
def trend_rows(draw: st.DrawFn) -> Rows[Trend]:
    n = draw(st.integers(0, 20))
    column = lambda s: draw(st.lists(s, min_size=n, max_size=n))  # noqa: E731
    return Rows(
        Trend,
        {
            "test": column(names),
            "metric": column(names),
            "arm": column(st.sampled_from(["fixed", "random"])),
            "n": column(st.integers(-(2**70), 2**70)),
            "spearman_rho": column(maybe_float),
            "p": column(maybe_float),
            "p_adjusted": column(maybe_float),
            "significant": column(maybe_bool),
        },
    )


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(trend_rows())
def test_json_text_is_what_json_dumps_writes(rows: Rows[Trend]) -> None:
    expected = json.dumps([dict(vars(r)) for r in rows], separators=(",", ":"), allow_nan=False)
    assert rows.json_text() == expected
    assert rows.records() == [dict(vars(r)) for r in rows]


@settings(max_examples=100, deadline=None)
@given(trend_rows())
def test_rows_behave_like_the_tuple_of_their_rows(rows: Rows[Trend]) -> None:
    as_tuple = tuple(rows)
    assert rows == as_tuple and as_tuple == rows and len(rows) == len(as_tuple)
    assert bool(rows) == bool(as_tuple)
    for i in range(-len(rows), len(rows)):
        assert rows[i] == as_tuple[i]
    assert rows[1:3] == as_tuple[1:3]
    with pytest.raises(IndexError):
        rows[len(rows)]
    if as_tuple:
        changed = as_tuple[:-1] + (Trend("other", "m", "fixed", 1, None, None),)
        assert rows != changed


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
    assert rows.json_text() == json.dumps(rows.records(), separators=(",", ":"))


def test_non_finite_numbers_are_refused_as_json_dumps_refuses_them() -> None:
    rows = Rows(Trend, {"test": ["a"], "metric": ["m"], "arm": ["fixed"], "n": [3], "spearman_rho": [math.nan], "p": [None], "p_adjusted": [None], "significant": [None]})
    with pytest.raises(ValueError, match="JSON compliant"):
        rows.json_text()


def test_columns_must_be_complete_and_of_one_length() -> None:
    with pytest.raises(ValueError, match="no column for"):
        Rows(Trend, {"test": ["a"]})
    full = {"test": ["a"], "metric": ["m"], "arm": ["fixed"], "n": [3], "spearman_rho": [0.1], "p": [0.2], "p_adjusted": [0.2], "significant": [False]}
    with pytest.raises(ValueError, match="different lengths"):
        Rows(Trend, full | {"n": [3, 4]})


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
        doc = analysis.to_json()
        doc.update(extra)
        assert analysis.to_json_text(extra) == json.dumps(doc, separators=(",", ":"), allow_nan=False)
        assert analysis.to_json_text(indent=2) == json.dumps(analysis.to_json(), indent=2, allow_nan=False)
