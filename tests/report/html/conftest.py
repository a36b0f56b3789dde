"""The reports the HTML tests read, each rendered once for the whole run (by the first worker to
ask, tests/conftest.py `built_once`): data whose names, units, spec and output try to inject
markup (xss, amp), a small synthetic experiment, a tiny one with hand-made diagnostics, and a
treatment experiment."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from benchsage.analyze.verdict import Analysis
from benchsage.design.plan import make_plan
from benchsage.report.html import write_report
from benchsage.store.table import TrialTable

from reports import AMP_SCRIPT_TEST, BOLD_TEST, SCRIPT_METRIC, SCRIPT_TEST, SPEC_TEXT, STDOUT, XSS_TEST, treatment_table


@pytest.fixture(scope="session")
def xss_table(make_table) -> TrialTable:  # type: ignore[no-untyped-def]
    names = [XSS_TEST, SCRIPT_TEST, BOLD_TEST, "./plain.sh"]
    prov = {
        "name": "demo <i>italic</i>",
        "spec": SPEC_TEXT,
        "seed": 7,
        "tool_version": "0.1.0",
        "plan": make_plan(names, 8, 7),
        "snapshots": {
            run: {"host": "node1", "kernel": "6.1", "stdout": STDOUT, "hashes": {"run.sh": "abc" if run < 10 else "<u>def</u>"}}
            for run in range(16)
        },
        "stdout_tail": STDOUT,
    }
    table = make_table(4, 8, seed=2, names=names, metric=SCRIPT_METRIC, unit="<u>ops/s</u>", better="higher", provenance=prov)
    return dataclasses.replace(table, warnings=(f"3 rows of {SCRIPT_TEST} were not ok",))


@pytest.fixture(scope="session")
def xss_analysis(xss_table: TrialTable, analyze, make_diagnostics) -> Analysis:  # type: ignore[no-untyped-def]
    return analyze(xss_table, make_diagnostics(xss_table.test_names[:3], SCRIPT_METRIC))


@pytest.fixture(scope="session")
def xss_report(xss_analysis: Analysis, xss_table: TrialTable, built_once) -> Path:  # type: ignore[no-untyped-def]
    return built_once("xss.html", lambda path: write_report(xss_analysis, xss_table, path))


@pytest.fixture(scope="session")
def small_report(small_analysis: Analysis, small_table: TrialTable, built_once) -> Path:  # type: ignore[no-untyped-def]
    return built_once("small.html", lambda path: write_report(small_analysis, small_table, str(path)))


@pytest.fixture(scope="session")
def tiny(make_table, analyze, make_diagnostics) -> tuple[Analysis, TrialTable]:  # type: ignore[no-untyped-def]
    table = make_table(3, 6, seed=8)
    return analyze(table, make_diagnostics(table.test_names[:1])), table


@pytest.fixture(scope="session")
def amp_report(make_table, analyze, make_diagnostics, built_once) -> Path:  # type: ignore[no-untyped-def]
    table = make_table(2, 8, seed=6, names=[AMP_SCRIPT_TEST, "./other.sh"])
    return built_once("amp.html", lambda path: write_report(analyze(table, make_diagnostics([AMP_SCRIPT_TEST])), table, path))


@pytest.fixture(scope="session")
def treated(analyze, built_once) -> tuple[Analysis, TrialTable, Path]:  # type: ignore[no-untyped-def]
    table = treatment_table()
    analysis = analyze(table)
    return analysis, table, built_once("treated.html", lambda path: write_report(analysis, table, path))
