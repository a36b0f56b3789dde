"""The verdict as counts and names (analyze/summary.py), on the paper's artifact and on
hand-made analyses; report/words/verdict.py says it."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze import summary
from benchsage.analyze.order import analyze_table
from benchsage.store.table import TrialTable

sys.path.insert(0, str(Path(__file__).parent))
from verdict_data import artifact_table, two_metrics_and_an_untested_test  # noqa: E402


@pytest.mark.artifact
def test_an_order_effect_names_its_comparisons_and_counts_the_ci_cases() -> None:
    analysis = analyze_table(artifact_table("memcached-table3", "all_exp_results.csv", "exp_command"))
    s = analysis.summary
    assert s.kind == summary.ORDER_MATTERS and (s.primary, s.tested, s.untested) == (3, 3, 0)
    assert [v.test for v in s.significant] == ["./get_hits_test.sh"] and not s.several_metrics
    assert sum(s.ci_cases) == 3 and s.ci_cases == tuple(sum(v.ci_case == c for v in analysis.tests) for c in summary.CI_CASES)


@pytest.mark.artifact
def test_the_kinds_of_no_verdict() -> None:
    table = TrialTable.from_columns(test=["a"] * 4 + ["b"] * 4, arm=["fixed", "random"] * 4, value=np.arange(8.0))
    s = analyze_table(table).summary
    assert (s.kind, s.primary, s.tested, s.untested, s.ci_cases) == (summary.NONE_TESTED, 2, 0, 2, (0, 0, 0, 2))
    assert analyze_table(TrialTable.from_columns(test=[], arm=[], value=[])).summary.kind == summary.NO_TRIALS
    analysis = analyze_table(artifact_table("memcached-table3", "all_exp_results.csv", "exp_command"))
    secondary = tuple(dataclasses.replace(v, primary=False) for v in analysis.tests)
    assert dataclasses.replace(analysis, tests=secondary).summary.kind == summary.NO_PRIMARY


def test_several_metrics_of_a_test_and_untested_comparisons_are_counted() -> None:
    table = two_metrics_and_an_untested_test()
    s = analyze_table(table).summary
    assert s.kind == summary.ORDER_MATTERS and s.several_metrics and (s.primary, s.tested, s.untested) == (3, 2, 1)
    assert [(v.test, v.metric) for v in s.significant] == [("a", "x")]
