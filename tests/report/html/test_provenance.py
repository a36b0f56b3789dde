"""Provenance (report/html/provenance.py, values.py): shown, folded, and small for a large journal."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from benchsage.analyze.verdict import Analysis
from benchsage.design.plan import make_plan
from benchsage.report.html import render_report
from benchsage.store.table import TrialTable

from reports import Page, section_of


def test_provenance_is_shown(xss_report: Path, xss_table: TrialTable) -> None:
    text = xss_report.read_text(encoding="utf-8")
    prov = Page(section_of(text, "provenance")).all_text
    assert "tool version" in prov and "0.1.0" in prov
    assert "seed" in prov and "7" in prov
    plan = make_plan(xss_table.test_names, 8, 7)
    arms = "".join(r.arm[0].upper() for r in plan.runs)
    assert arms in prov  # the interleaving of the plan, run by run
    # Snapshots are folded: a setting all runs share once, a setting that differs with its runs.
    assert "16 snapshots." in prov
    assert "2 different values" in prov and "(runs 0–9)" in prov and "(runs 10–15)" in prov
    assert prov.count("node1") == 1


def test_provenance_of_a_large_journal_stays_small(tiny: tuple[Analysis, TrialTable]) -> None:
    analysis, table = tiny
    names = [f"./bench_{i:04d}.sh --with a long argument list" for i in range(1880)]
    rng = np.random.default_rng(0)
    plan = [{"run": r, "arm": "fixed" if r % 2 else "random", "order": list(rng.permutation(names)), "status": "done"} for r in range(372)]
    snapshots = {r: {"host": "n1", "load": f"{r % 9}", "hashes": {n: "abc" for n in names[:300]}} for r in range(372)}
    prov = {"plan": plan, "snapshots": snapshots, "run_starts": {r: 1.7e9 + r for r in range(372)}, "blob": "x" * 10**6}
    text = render_report(analysis, dataclasses.replace(table, provenance=prov))
    section = section_of(text, "provenance")
    assert len(section) < 400_000, len(section)
    shown = Page(section).all_text
    assert "… 332 more runs" in shown
    assert "… (1,868 more)" in shown  # each order names its first tests only
    assert "9 different values" in shown and "372 snapshots." in shown
    assert "372 runs, 2023-11-14 22:13:20 UTC to 22:19:31 UTC" in shown  # run starts fold away, their span said
    assert "more characters not shown" in shown
