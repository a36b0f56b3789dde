"""The words of the treatment analyses' notes (report/words/treatments.py): every kind of note in
analyze/treatments/notes.py has words, each says what it did before the notes were values, and
the analyses' notes read as expected."""

from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.pipeline import Options, analyze_loaded
from benchsage.analyze.treatments import analyze_treatments, notes
from benchsage.report.words import said, say

sys.path.insert(0, str(Path(__file__).parents[2] / "analyze" / "treatments"))
from treatment_data import build, const, env_time  # noqa: E402

NOTE_KINDS = [kind for _, kind in inspect.getmembers(notes, inspect.isclass)
              if kind.__module__ == notes.__name__ and dataclasses.is_dataclass(kind)]
SAMPLES = {str: "x", int: 3, float: 1.5, bool: True}


def _sample(kind: type) -> object:
    """A note of `kind` with made-up data: its fields by their types, notes within notes too."""
    hints = typing.get_type_hints(kind)
    values = {}
    for f in dataclasses.fields(kind):
        hint = hints[f.name]
        options = [t for t in typing.get_args(hint) if t is not type(None)] or [hint]
        first = options[0]
        values[f.name] = SAMPLES[first] if first in SAMPLES else _sample(first)
    return kind(**values)


def test_the_notes_module_defines_note_kinds() -> None:
    assert len(NOTE_KINDS) >= 7 and all(kind.__dataclass_params__.frozen for kind in NOTE_KINDS)  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", NOTE_KINDS, ids=lambda k: k.__name__)
def test_every_note_kind_has_words(kind: type) -> None:
    text = say(_sample(kind))
    assert isinstance(text, str) and text


def test_each_note_in_words() -> None:
    assert say(notes.ObserverBaselineOnly("none", 40, 80)) == (
        "the order analysis and the comparisons use the values measured at observer level 'none' only "
        "(40 of 80): the other levels are compared with it under 'observer'")
    assert say(notes.ObserverPerturbs("strace", "none", 2, 3, "syscalls", "wall_time", 201.04)) == (
        "observer level 'strace' perturbs what it measures: 2 of 3 (test, metric) pairs differ from 'none' "
        "(largest: syscalls wall_time +201.0%); values collected under 'strace' are not the tests' own")
    assert "(largest: syscalls wall_time a significant change)" in say(notes.ObserverPerturbs("strace", "none", 1, 1, "syscalls", "wall_time", None))
    assert say(notes.FactorNotTwoLevels("A")) == "factor 'A' does not have exactly two levels in the data"
    design = notes.UnbalancedDesign(6, 8)
    assert say(design) == "unbalanced 2^k design (6-8 values per combination of levels): the first 6 of each analysed"
    assert say(notes.UnbalancedFactorial("t", "wall_time", design)) == (
        "t (wall_time): unbalanced 2^k design (6-8 values per combination of levels): the first 6 of each analysed")
    assert say(notes.ContextMethod(aligned=False)) == "kruskal-wallis across contexts"
    assert say(notes.ContextMethod(aligned=True)) == (
        "kruskal-wallis across contexts; values aligned on the factor levels (each combination's median replaced by the test's)")


@pytest.mark.parametrize("numeric, exact, approximate, text", [
    (True, True, False, "spearman of the context medians against the value (exact permutation p)"),
    (True, False, True, "spearman of the context medians against the value (t approximation)"),
    (True, True, True, "spearman of the context medians against the value (exact permutation p, t approximation)"),
    (False, True, False, "kruskal-wallis of the context medians across the levels (exact permutation p)"),
    (False, False, True, "kruskal-wallis of the context medians across the levels (chi-squared approximation)"),
    (False, True, True, "kruskal-wallis of the context medians across the levels (chi-squared approximation, exact permutation p)"),
])
def test_a_context_dimension_method_in_words(numeric: bool, exact: bool, approximate: bool, text: str) -> None:
    assert say(notes.DimensionMethod(numeric, exact, approximate)) == text


def test_the_observer_warnings_of_an_analysis() -> None:
    def syscalls(c, o, f):
        return 0.004 * (3.0 if o == "strace" else 1.0)

    def loop(c, o, f):
        return 0.050 * (1.01 if o == "strace" else 1.0)

    table = build({"syscalls": syscalls, "loop": loop}, contexts=0, runs=20, observer=("none", "strace"))
    result = analyze_treatments(table)
    assert any("observer level 'strace' perturbs" in w and "syscalls" in w for w in said(result.warnings))
    alone = table.select(table.levels("observer")[1] == table.levels("observer")[0].index("none"))
    analysis = analyze_loaded(table, Options())
    assert any("observer level 'none' only" in w for w in said(analysis.warnings))
    assert f"observer level 'none' only ({len(alone)} of {len(table)})" in said(analysis.warnings, once=True)[0]


def test_an_unbalanced_or_incomplete_design_is_said_so() -> None:
    def t(c, o, f):
        return 1.0 + (f["A"] == "hi")

    table = build({"t": t}, contexts=0, runs=8, factors=1, cv=0.01)
    drop = np.zeros(len(table), bool)
    drop[np.flatnonzero(table.levels("factor:A")[1] == 1)[:2]] = True
    result = analyze_treatments(table.select(~drop))
    assert "the first 6 of each analysed" in say(result.factorial[0].reason)
    assert any("unbalanced 2^k design" in w for w in said(result.warnings))
    only_low = analyze_treatments(table.select(table.levels("factor:A")[1] == 0)).factorial[0]
    assert "exactly two levels" in say(only_low.reason)


def test_the_context_methods_of_an_analysis() -> None:
    many = {e.test: e for e in analyze_treatments(build({"e": env_time}, contexts=12, runs=48)).context_effects}
    assert "t approximation" in say(many["e"].by_detail["env_bytes"]["method"])
    (few,) = analyze_treatments(build({"noisy": const(0.02)}, contexts=6, runs=18, cv=0.05, seed=5)).context_effects
    assert "exact permutation p" in say(few.by_detail["env_bytes"]["method"])
    (aligned,) = analyze_treatments(build({"e": env_time}, contexts=8, runs=16, factors=1, cv=0.05)).context_effects
    assert "aligned on the factor levels" in say(aligned.method)
