"""Factorial designs with a factor of more than two levels: an ANOVA of each (test, primary
metric), its p-values corrected over every term, a sweep dimension left alone, an undeclared
level said (its words: tests/report/words)."""

from __future__ import annotations

import math

import itertools

import numpy as np
import pytest
from scipy import stats

from benchsage.analyze.treatments import AnovaResult, analyze_treatments
from benchsage.analyze.treatments.notes import FactorLevelUndeclared, UnbalancedDesign, UnbalancedFactorial
from benchsage.report.treatments_json import factorial_json
from benchsage.report.words import say
from benchsage.store.table import TrialTable

THREADS = ("1", "2", "4")
DECLARED = {"factors": [{"name": "threads", "levels": list(THREADS)}, {"name": "gov", "levels": ["perf", "save"]}]}


def _table(r: int = 4, seed: int = 1, provenance: dict | None = None) -> TrialTable:
    """Two tests in a 3 x 2 design, r values per cell in each arm: "scales" gets faster with
    threads, "flat" does not; each row also carries a sweep level of its test."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "threads", "gov", "sweep")}
    run = 0
    for threads, gov in itertools.product(THREADS, ("perf", "save")):
        for arm in ("fixed", "random"):
            for _ in range(r):
                for pos, test in enumerate(("scales", "flat")):
                    base = 1.0 / int(threads) if test == "scales" else 1.0
                    cols["test"].append(test)
                    cols["arm"].append(arm)
                    cols["value"].append(base * (1 + rng.normal(0, 0.01)))
                    cols["run"].append(run)
                    cols["position"].append(pos)
                    cols["threads"].append(threads)
                    cols["gov"].append(gov)
                    cols["sweep"].append("8" if test == "scales" else None)
                run += 1
    treatments = {"factor:threads": cols.pop("threads"), "factor:gov": cols.pop("gov"), "sweep:conns": cols.pop("sweep")}
    return TrialTable.from_columns(**cols, treatments=treatments, provenance=provenance if provenance is not None else DECLARED)


def test_a_factor_of_three_levels_gets_an_anova_per_test() -> None:
    table = _table()
    rows = {r.test: r for r in analyze_treatments(table).factorial}
    scales, flat = rows["scales"], rows["flat"]
    assert scales.anova and isinstance(scales.result, AnovaResult) and scales.reason == ""
    assert [t.term for t in scales.result.terms] == ["threads", "gov", "threads:gov"]
    assert scales.result.r == 8 and scales.result.error_df == 6 * 7
    assert scales.result.term("threads").variation_pct > 95 and scales.significant[0] is True
    assert flat.result.term("threads").variation_pct < 50
    # one factor of the data checked against scipy: the threads term of a design without gov
    one = table.select(table.levels("factor:gov")[1] == 0)
    one = TrialTable.from_columns(**{k: v for k, v in _columns(one).items()}, provenance={"factors": DECLARED["factors"][:1]})
    row = next(r for r in analyze_treatments(one).factorial if r.test == "scales")
    code = one.levels("factor:threads")[1]
    mine = one.test == one.test_names.index("scales")
    reference = stats.f_oneway(*(one.value[mine & (code == c)] for c in range(3)))
    # scipy's F tail, never below one over the 24! / (8!)^3 ways to deal the values into the cells
    floor = math.factorial(8) ** 3 / math.factorial(24)
    assert row.result.term("threads").p == pytest.approx(max(reference.pvalue, floor), rel=1e-9)


def _columns(table: TrialTable) -> dict:
    """A table's rows as from_columns takes them, its factor:threads only."""
    names, codes = table.levels("factor:threads")
    return {"test": [table.test_names[t] for t in table.test], "arm": ["fixed" if a == 0 else "random" for a in table.arm],
            "value": table.value, "run": table.run, "position": table.position,
            "treatments": {"factor:threads": [names[c] for c in codes]}}


def test_p_values_are_corrected_over_every_term_of_every_row() -> None:
    rows = analyze_treatments(_table(), correction="bonferroni").factorial
    m = sum(len(r.result.terms) for r in rows)
    for r in rows:
        for t, adjusted in zip(r.result.terms, r.p_adjusted):
            assert adjusted == pytest.approx(min(1.0, t.p * m))


def test_the_json_of_an_anova_row() -> None:
    row = next(r for r in analyze_treatments(_table()).factorial if r.test == "scales")
    doc = factorial_json(row)
    assert doc["design"] == "anova" and doc["levels"] == {"threads": ["1", "2", "4"], "gov": ["perf", "save"]}
    assert [t["term"] for t in doc["terms"]] == ["threads", "gov", "threads:gov", "error"]
    assert set(doc["terms"][0]) == {"term", "df", "ss", "ms", "f", "p", "p_adjusted", "significant", "variation_pct"}
    assert set(doc["terms"][-1]) == {"term", "df", "ss", "ms", "variation_pct"}
    assert sum(t["variation_pct"] for t in doc["terms"]) == pytest.approx(100.0)
    assert doc["effects"]["threads"]["1"] > 0 > doc["effects"]["threads"]["4"] and doc["r"] == 8 and doc["reason"] == ""


def test_undeclared_levels_and_unbalanced_cells_are_said() -> None:
    table = _table(provenance={"factors": [{"name": "threads", "levels": ["1", "2", "8"]}, DECLARED["factors"][1]]})
    (row, _) = analyze_treatments(table).factorial
    assert row.result is None and row.reason == FactorLevelUndeclared("threads", "4")
    assert say(row.reason) == "factor 'threads' has level '4' in the data, which the experiment does not declare"
    full = _table()
    drop = np.zeros(len(full), bool)
    drop[np.flatnonzero(full.levels("factor:threads")[1] == 2)[:2]] = True  # two values of each test at threads=4
    result = analyze_treatments(full.select(~drop))
    assert UnbalancedFactorial("flat", "value", UnbalancedDesign(7, 8, "full factorial")) in result.warnings
    assert "unbalanced full factorial design (7-8 values" in say(result.factorial[0].reason)


def test_without_declarations_the_levels_in_the_data_decide_the_design() -> None:
    rows = analyze_treatments(_table(provenance={})).factorial
    assert all(r.anova and r.result is not None for r in rows) and rows[0].levels["threads"] == ("1", "2", "4")


def test_a_sweep_dimension_alone_is_no_treatment() -> None:
    table = _table()
    names, codes = table.levels("sweep:conns")
    only_sweep = TrialTable.from_columns(test=[table.test_names[t] for t in table.test], arm=["fixed" if a == 0 else "random" for a in table.arm],
                                         value=table.value, treatments={"sweep:conns": [names[c] if c >= 0 else None for c in codes]})
    result = analyze_treatments(only_sweep)
    assert (result.factorial, result.context_effects, result.observer, result.comparisons) == (None, None, None, None)
    assert result.order_table is only_sweep
