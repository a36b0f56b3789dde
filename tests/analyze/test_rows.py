"""Diagnostic rows kept as columns (verdict.Rows): they behave as the tuple of their rows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

from benchsage.analyze.verdict import Rows, Trend

sys.path.insert(0, str(Path(__file__).parent))
from rows_data import trend_rows  # noqa: E402


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


def test_columns_must_be_complete_and_of_one_length() -> None:
    with pytest.raises(ValueError, match="no column for"):
        Rows(Trend, {"test": ["a"]})
    full = {"test": ["a"], "metric": ["m"], "arm": ["fixed"], "n": [3], "spearman_rho": [0.1], "p": [0.2], "p_adjusted": [0.2], "significant": [False]}
    with pytest.raises(ValueError, match="different lengths"):
        Rows(Trend, full | {"n": [3, 4]})
