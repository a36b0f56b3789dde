"""2^k factorial designs: the effects and their variation, factorial_2k of the test values, declared
levels set the sign, unbalanced or incomplete designs are noted (their words: tests/report/words)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.treatments import analyze_treatments
from benchsage.analyze.treatments.notes import FactorNotTwoLevels, UnbalancedDesign, UnbalancedFactorial
from benchsage.stats.factorial import factorial_2k
from benchsage.store.table import TrialTable
from benchsage.report.treatments_json import factorial_json

sys.path.insert(0, str(Path(__file__).parent))
from treatment_data import build, columns_of  # noqa: E402


def test_a_2x2_design_gives_a_its_variation_q_and_a_small_interaction() -> None:
    def work(c, o, f):
        return 0.100 + 0.020 * (f["A"] == "hi") + 0.002 * (f["B"] == "hi")

    table = build({"work": work}, contexts=0, runs=16, factors=2, cv=0.02)
    (row,) = analyze_treatments(table).factorial
    terms = {t.term: t for t in row.result.terms}
    assert terms["A"].variation_pct >= 90
    assert terms["A"].ci[0] <= 0.010 <= terms["A"].ci[1]
    assert terms["A:B"].variation_pct < 2
    assert sum(t.variation_pct for t in terms.values()) + row.result.error_pct == pytest.approx(100, abs=1e-6)
    doc = factorial_json(row)
    assert [t["term"] for t in doc["terms"]] == ["A", "B", "A:B", "error"]
    assert doc["levels"] == {"A": ["lo", "hi"], "B": ["lo", "hi"]} and doc["r"] == 8


def test_factorial_rows_are_factorial_2k_of_the_test_values() -> None:
    def t(c, o, f):
        return 5.0 + (f["A"] == "hi") - 0.5 * (f["B"] == "hi") + 0.25 * (f["C"] == "hi") * (f["A"] == "hi")

    table = build({"t": t}, contexts=0, runs=8, factors=3, cv=0.05, seed=2)
    (row,) = analyze_treatments(table).factorial
    frame = table.to_pandas()
    settings_ = {n: frame[f"factor:{n}"].astype(str).tolist() for n in "ABC"}
    ref = factorial_2k(frame.value.to_numpy(), settings_, {n: ("lo", "hi") for n in "ABC"})
    assert row.result == ref
    assert [t.term for t in row.result.terms] == ["A", "B", "C", "A:B", "A:C", "B:C", "A:B:C"]


def test_declared_factor_levels_set_the_sign_of_q() -> None:
    def t(c, o, f):
        return 1.0 + 0.2 * (f["A"] == "hi")

    table = build({"t": t}, contexts=0, runs=8, factors=1, cv=0.01)
    assert analyze_treatments(table).factorial[0].result.terms[0].effect == pytest.approx(0.1, rel=0.05)
    declared = TrialTable.from_columns(**columns_of(table), provenance={"factors": [{"name": "A", "levels": ["hi", "lo"]}]})
    row = analyze_treatments(declared).factorial[0]
    assert row.result.terms[0].effect == pytest.approx(-0.1, rel=0.05) and factorial_json(row)["levels"] == {"A": ["hi", "lo"]}


def test_an_unbalanced_or_incomplete_design_is_said_so() -> None:
    def t(c, o, f):
        return 1.0 + (f["A"] == "hi")

    table = build({"t": t}, contexts=0, runs=8, factors=1, cv=0.01)
    drop = np.zeros(len(table), bool)
    drop[np.flatnonzero(table.levels("factor:A")[1] == 1)[:2]] = True
    result = analyze_treatments(table.select(~drop))
    assert result.factorial[0].result.r == 6 and result.factorial[0].reason == UnbalancedDesign(6, 8)
    assert UnbalancedFactorial("t", "wall_time", UnbalancedDesign(6, 8)) in result.warnings
    only_low = analyze_treatments(table.select(table.levels("factor:A")[1] == 0)).factorial[0]
    assert only_low.result is None and only_low.reason == FactorNotTwoLevels("A")
