"""The verdict in words (report/words/verdict.py) on the paper's artifact and on hand-made analyses."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.order import analyze_table
from benchsage.report.words import verdict_sentence
from benchsage.store.table import TrialTable

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "analyze"))
from verdict_data import artifact_table, two_metrics_and_an_untested_test  # noqa: E402


@pytest.mark.artifact
def test_order_matters_sentence():
    analysis = analyze_table(artifact_table("memcached-table3", "all_exp_results.csv", "exp_command"))
    assert verdict_sentence(analysis) == (
        "Order matters: 1 of 3 tests (./get_hits_test.sh) differ between fixed and random order "
        "(Kruskal-Wallis, Bonferroni family-wise α = 0.05, corrected α = 0.0167)."
    )


@pytest.mark.artifact
def test_no_effect_sentence():
    analysis = analyze_table(artifact_table("npbench-table4", "all_test_results.csv", "test_command"))
    # Each of the 3 tests would have shown an order effect of 3.77% (80% power): the largest of them bounds what went unseen.
    bound = max(v.min_detectable_pct for v in analysis.tests if v.primary)
    assert f"{bound:.3g}" == "3.77"
    assert verdict_sentence(analysis) == (
        "No order effect larger than 3.77% (80% power) in 3 tests (Kruskal-Wallis, Bonferroni family-wise α = 0.05, corrected α = 0.0167)."
    )
    assert analysis.verdict == "no-effect"


@pytest.mark.artifact
def test_holm_is_named():
    analysis = analyze_table(artifact_table("npbench-table4", "all_test_results.csv", "test_command"), correction="holm", alpha=0.1)
    assert "Holm family-wise α = 0.1, strictest corrected α = 0.0333" in verdict_sentence(analysis)


def test_too_few_runs_is_not_called_no_effect():
    table = TrialTable.from_columns(test=["a"] * 4 + ["b"] * 4, arm=["fixed", "random"] * 4, value=np.arange(8.0))
    analysis = analyze_table(table)
    sentence = verdict_sentence(analysis)
    assert sentence == ("Too few runs to detect an order effect: at 2 values per arm Kruskal-Wallis gives no p-value (it needs 5); "
                        "see `benchsage plan --pilot`.")
    assert analysis.verdict == "undetectable"
    empty = analyze_table(TrialTable.from_columns(test=[], arm=[], value=[]))
    assert verdict_sentence(empty) == "No verdict: the data holds no trials to compare."


def test_untested_comparisons_are_mentioned_and_metrics_named():
    table = two_metrics_and_an_untested_test()
    sentence = verdict_sentence(analyze_table(table))
    assert sentence.startswith("Order matters: 1 of 2 comparisons (a [x]) differ between fixed and random order; "
                               "1 comparison could not have shown one (")


@pytest.mark.artifact
def test_many_significant_names_are_summarised():
    analysis = analyze_table(artifact_table("memcached-table3", "all_exp_results.csv", "exp_command"))
    hit = next(v for v in analysis.tests if v.significant)
    many = tuple(dataclasses.replace(hit, test=f"t{i}") for i in range(8))
    sentence = verdict_sentence(dataclasses.replace(analysis, tests=many))
    assert "8 of 8 tests (t0, t1, t2, t3, t4 and 3 more) differ" in sentence


@pytest.mark.artifact
def test_no_primary_metrics():
    analysis = analyze_table(artifact_table("memcached-table3", "all_exp_results.csv", "exp_command"))
    secondary = tuple(dataclasses.replace(v, primary=False) for v in analysis.tests)
    assert verdict_sentence(dataclasses.replace(analysis, tests=secondary)).startswith("No verdict: no primary metric")
