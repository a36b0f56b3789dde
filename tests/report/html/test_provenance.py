"""Provenance (report/html/provenance.py, values.py): shown, folded, and small for a large journal."""

from __future__ import annotations

import dataclasses
import re
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


def test_provenance_values_are_written_for_a_reader() -> None:
    from benchsage.report.html.values import NOT_RECORDED, node, scalar, utc

    assert utc(1795885785.5380971) == "2026-11-28 17:09:45 UTC"
    assert scalar(1795885785.5380971, "created") == scalar(1795885785, "time") == "2026-11-28 17:09:45 UTC"
    assert scalar(3.5, "time") == "3.5"  # OrderSage's run clock, restarting each run: not a date
    assert scalar(None) == scalar(float("nan")) == NOT_RECORDED == "not recorded"
    assert (scalar(True), scalar(False)) == ("yes", "no")
    assert scalar(0.05) == "0.05" and scalar(0.3969893904799469) == "0.397" and scalar(5.138676369999985) == "5.14"
    assert scalar(2023) == "2023" and scalar(16.0) == "16"  # seeds, ids and counts stay exact
    assert scalar(2.384185791015625e-07, "offset") == "238 ns" and scalar(5.138676369999985, "seconds") == "5.14 s"
    assert scalar(11200, "max_rss_floor_kib") == "10.9 MiB"
    assert scalar([0.44, 0.69, 0.38]) == "0.44, 0.69, 0.38" and scalar([]) == "none"
    deep = node({"a": {"b": {"c": {"d": None, "e": [], "time": 1.7e9}}}})
    text = str(deep)
    for raw in ("null", "None", "[]", "{}", "1700000000"):
        assert raw not in text, raw
    assert "d: not recorded" in text and "time: 2023-11-14 22:13:20 UTC" in text


def test_provenance_leaves_out_what_was_not_recorded_and_sums_up_what_each_run_recorded(tiny: tuple[Analysis, TrialTable]) -> None:
    analysis, table = tiny
    snapshots = {r: {"time": 1.7e9 + 60 * r, "governor": None, "load": [0.5, 0.4, 0.3 + r / 100], "cpu_share": {"own": 0.1 * (r + 1)}}
                 for r in range(12)}
    prov = {"name": None, "created": 1.7e9, "seed": 3, "run_starts": {r: 1.7e9 + 60 * r for r in range(12)},
            "run_workers": {r: "local" for r in range(12)}, "snapshots": snapshots, "reset": "", "contexts": {}}
    text = render_report(analysis, dataclasses.replace(table, provenance=prov))
    section = section_of(text, "provenance")
    shown = Page(section).all_text
    assert "12 runs, 2023-11-14 22:13:20 UTC to 22:24:20 UTC" in shown  # run starts
    assert "2023-11-14 22:13:20 UTC to 22:24:20 UTC, one per run" in shown  # the snapshots' clock
    assert "local, in every run (12)" in shown
    assert "from 0.1 to 1.2 (median 0.65)" in shown  # a number that differs in every run: its range
    assert "not recorded" in shown  # the governor, recorded as null
    for key in ("name", "reset", "contexts"):  # recorded as nothing: left out
        assert f"<h3>{key}</h3>" not in section, key
    assert not re.search(r"\b(null|None)\b|1700000000|\[\]|\{\}", shown)
    summary = re.search(r'<section id="provenance"><details class="section"><summary>(.*?)</summary>', text).group(1)
    assert Page(summary).all_text == "Provenancebenchsage 0.1.0, created 2023-11-14 22:13:20 UTC; 12 environment snapshots"


def test_env_values_whose_names_look_like_secrets_are_masked_and_said_so(tiny: tuple[Analysis, TrialTable]) -> None:
    """The spec as written with the value masked and a line under it; an env recorded as a table
    (a probe's) masked in place; a spec whose value cannot be masked in place left out, saying why;
    each source part of a merged report alike."""
    analysis, table = tiny
    spec = '[experiment]\nname = "s"\nenv = { API_TOKEN = "tok-123456", PLAIN = "visible" }\n'
    escaped = '[experiment]\nname = "s"\nenv = { "DB\\u005FPASSWORD" = "pw" }\n'
    prov = {"spec": spec, "probe": {"env": {"aws_secret_access_key": "key-123456", "MONKEY": "banana"}},
            "parts": [{"spec": escaped}]}
    section = section_of(render_report(analysis, dataclasses.replace(table, provenance=prov)), "provenance")
    shown = Page(section).all_text
    for secret in ("tok-123456", "key-123456", '"pw"'):
        assert secret not in shown and secret not in section, secret
    assert 'API_TOKEN = "••••••", PLAIN = "visible"' in shown
    assert "API_TOKEN = •••••• (masked: its name looks like a secret)" in shown
    assert "•••••• (masked: its name looks like a secret)" in shown and "banana" in shown  # the probe's env table
    assert ("the spec is not shown: it holds values whose names look like secrets (DB_PASSWORD) that could not be masked in place"
            in shown)
