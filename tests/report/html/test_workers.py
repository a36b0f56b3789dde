"""A fleet's workers (report/html/workers.py): each worker's verdict and rows, whether they ran
the same software, and which workers' values differ."""

from __future__ import annotations

from pathlib import Path

import markupsafe

from benchsage.analyze.verdict import Analysis
from benchsage.report.html import write_report

from reports import Page, SCRIPT_TEST, assert_nothing_injected, section_of

HOSTILE_WORKER = "<img src=x onerror=\"document.title='w'\">"


def _fleet_report(tmp_path: Path, levels: dict[str, float], **snapshots: dict) -> tuple[str, Analysis]:
    import sys

    from benchsage.api import analyze_sources

    sys.path.insert(0, str(Path(__file__).parents[2] / "analyze"))
    from fleet_data import write_fleet

    write_fleet(tmp_path, levels, effect=0.15, seed=1, snapshots=snapshots)
    analysis, table = analyze_sources([str(tmp_path)], format="benchsage")
    path = tmp_path / "report.html"
    write_report(analysis, table, path)
    return path.read_text(encoding="utf-8"), analysis


def test_a_fleets_workers_section(tmp_path: Path) -> None:
    levels = {"node1": 1.0, "node2": 1.0, HOSTILE_WORKER: 1.6}
    text, analysis = _fleet_report(tmp_path, levels, **{HOSTILE_WORKER: {"kernel": SCRIPT_TEST, "files": {"/srv/exp/bin/app": "<b>x</b>"}}})
    for raw in (HOSTILE_WORKER, SCRIPT_TEST, "<b>x</b>"):
        assert raw not in text, raw
    page = Page(text)
    assert_nothing_injected(page)
    section = section_of(text, "workers")
    shown = Page(section).all_text
    assert "stratified by worker: van Elteren's stratified Wilcoxon test" in shown
    assert "order matters on 3 of 3 workers" in shown
    for literal in (HOSTILE_WORKER, f"{SCRIPT_TEST} on {HOSTILE_WORKER}", "sha256:<b>x</b>", "6.1.0-18-amd64 on node1, node2",
                    "The workers' results differ in 3 of 3 tests."):
        assert literal in shown, literal
    # One verdict row per worker with its runs and boots, and each worker's own test table.
    rows = [r for r in section.split("<tr")[1:] if "boots" not in r and "runs" not in r]
    assert sum(1 for r in rows if ">16</td><td data-v=\"16.0\">16</td></tr>" in r) == 3
    assert section.count("<details><summary>tests on ") == 3
    assert [a["href"] for a in page.tags("a") if a.get("href") == "#workers"] == ["#workers"]
    # The combined rows carry van Elteren's statistic; each worker's own rows Kruskal-Wallis H.
    tables = section_of(text, "tables")
    assert "van Elteren χ²" in tables and "KW H" not in tables
    assert section.count(">KW H</th>") == 4  # each worker's table and the test across workers
    fleet_rows = section[section.index("median per worker"):]
    assert fleet_rows.count(f"{markupsafe.escape(HOSTILE_WORKER)}</td></tr>") == 3  # the outlier of every test


def test_an_identical_fleet_and_a_single_worker_report(tmp_path: Path, small_report: Path) -> None:
    text, _ = _fleet_report(tmp_path, {"a": 1.0, "b": 1.0})
    assert "The 2 workers ran the same software on the same kind of machine" in Page(text).all_text
    single = small_report.read_text(encoding="utf-8")
    assert '<section id="workers">' not in single and 'href="#workers"' not in single
