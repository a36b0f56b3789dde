"""The words of a declared claim (report/words/comparisons.py): who wins and by how much, the test,
and where the winner holds or flips: the order arms, the contexts, a fleet's workers, the
factor cells; and why a claim of the spec could not be tested."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from benchsage.analyze.treatments import analyze_treatments
from benchsage.report.words import comparison_sentence
from benchsage.report.quantity import sig3
from benchsage.report.words.comparisons import method_name, p_text
from benchsage.store.table import TrialTable

sys.path.insert(0, str(Path(__file__).parents[2] / "analyze" / "treatments"))
from treatment_data import build, claims, columns_of, const, env_time, fleet_table  # noqa: E402


def test_a_claim_that_flips_with_the_environment_and_one_that_holds_everywhere() -> None:
    table = build({"envsize": env_time, "s15": const(0.015), "s20": const(0.020), "s30": const(0.030)})
    flip, sleeps = analyze_treatments(table, options=claims(("envsize", "s15"), ("s20", "s30"))).comparisons
    assert "flips in" in comparison_sentence(flip) or flip.better is None
    sentence = comparison_sentence(sleeps)
    c = sleeps.overall
    # s20/s30 = 0.668: s20 ran 1.50x faster, the interval turned with it.
    assert sentence.startswith(f"s20 ran {sig3(1 / c.ratio)}× faster than s30 [{sig3(1 / c.ci[1])}, {sig3(1 / c.ci[0])}] (95% CI; ")
    assert sentence.endswith("holds in both orders; holds in all 8 contexts")
    assert f"Mann-Whitney p = {p_text(c.p)}" in sentence
    assert "%" not in sentence.replace("95% CI", "")  # a ratio is a factor, never "33.2% faster"


def test_a_claim_of_the_spec_whose_test_has_no_values_says_why() -> None:
    table = build({"x": const(1.0), "y": const(2.0)}, contexts=0, runs=6)
    declared = TrialTable.from_columns(**columns_of(table), provenance={"compare": [{"a": "x", "b": "gone", "metric": None}]})
    (row,) = analyze_treatments(declared).comparisons
    sentence = comparison_sentence(row)
    assert "no test" in sentence
    assert sentence == f"no test between x and gone on : {row.overall.reason}"


def test_too_few_values_per_context_are_said_so_not_read_as_undecided() -> None:
    table = build({"a": const(1.0), "b": const(1.2)}, contexts=8, runs=16)  # 4 values of each test per context
    (row,) = analyze_treatments(table, options=claims(("a", "b"))).comparisons
    assert comparison_sentence(row).endswith(
        "holds in both orders; not testable within the 8 contexts (fewer than 5 values of a test in each)")


def test_a_claim_that_flips_on_one_worker_of_a_fleet_says_so() -> None:
    table = fleet_table({"w1": {"o3": 0.093, "o2": 0.100}, "w2": {"o3": 0.093, "o2": 0.100}, "w3": {"o3": 0.110, "o2": 0.100}})
    (row,) = analyze_treatments(table, options=claims(("o3", "o2"))).comparisons
    assert "flips on 1 of 3 workers" in comparison_sentence(row)


def test_a_claim_that_holds_on_every_worker_says_so() -> None:
    same = {"o3": 0.093, "o2": 0.100}
    (row,) = analyze_treatments(fleet_table({"w1": same, "w2": same}), options=claims(("o3", "o2"))).comparisons
    assert "holds on all 2 workers" in comparison_sentence(row)
    (alone,) = analyze_treatments(fleet_table({"w1": same}), options=claims(("o3", "o2"))).comparisons
    assert "workers" not in comparison_sentence(alone)


def test_a_claim_across_the_factor_cells_says_so() -> None:
    o3 = lambda c, o, f: 0.093 if f["A"] == "lo" else 0.110  # noqa: E731
    table = build({"o3": o3, "o2": const(0.100)}, contexts=0, factors=2, runs=32, seed=9)
    (row,) = analyze_treatments(table, options=claims(("o3", "o2"))).comparisons
    assert "factor cells" in comparison_sentence(row)


def test_a_metric_that_is_not_a_time_is_higher_or_lower() -> None:
    table = build({"a": const(2.0), "b": const(1.0)}, contexts=0, runs=10)
    (row,) = analyze_treatments(table, options=claims(("a", "b"))).comparisons
    assert row.better == "b" and comparison_sentence(row).startswith(f"b ran {sig3(row.ratio)}× faster than a [")
    not_a_time = dataclasses.replace(row, unit="")
    assert comparison_sentence(not_a_time).startswith(f"b's wall_time is {sig3(row.ratio)}× lower than a's [")
    a_wins = dataclasses.replace(row, unit="", better="a")
    assert comparison_sentence(a_wins).startswith(f"a's wall_time is {sig3(row.ratio)}× higher than b's [")


@pytest.mark.parametrize("p, text", [(None, "–"), (0.0, "0"), (0.05, "0.05"), (0.001, "0.001"), (1.234e-5, "1.23e-5"), (9.99e-4, "9.99e-4")])
def test_p_values_read_short(p: float | None, text: str) -> None:
    assert p_text(p) == text


def test_the_tests_are_named_as_a_reader_knows_them() -> None:
    assert method_name("mann-whitney") == "Mann-Whitney" and method_name("touati:welch-t") == "Touati: Welch t"
    assert method_name("something-new") == "something-new"
