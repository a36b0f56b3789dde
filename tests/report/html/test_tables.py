"""The tests tables (report/html/tables.py): sorted by p with numeric sort keys, a dash for what
cannot be computed, and a table per metric, the harness metrics of measurement control included."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from benchsage.analyze.verdict import Analysis
from benchsage.report.html import render_report
from benchsage.report.words import say
from benchsage.store.table import TrialTable

from reports import MEASURED_HEADINGS, Page, measured_report, section_of


def test_tests_table_is_sorted_by_p_and_carries_numeric_sort_keys(small_report: Path, small_analysis: Analysis) -> None:
    text = small_report.read_text(encoding="utf-8")
    table = section_of(text, "tables")
    rows = re.findall(r"<tr( class=\"sig\")?><td class=\"name\">(.*?)</td>(.*?)</tr>", table)
    assert len(rows) == len(small_analysis.tests)
    p_adjusted = [float(re.findall(r'data-v="([^"]*)"', cells)[3]) for _, _, cells in rows]
    assert p_adjusted == sorted(p_adjusted)
    by_name = {v.test: v for v in small_analysis.tests}
    for sig, name, _ in rows:
        name = re.sub(r"<[^>]+>", "", name)
        assert bool(sig) == bool(by_name[name].significant)
    assert "<th" in table and 'class="sortable"' in table


def test_fields_that_cannot_be_computed_are_shown_as_missing(analyze) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    tests = ["few"] * 6 + ["enough"] * 40
    arms = ["fixed", "random"] * 3 + ["fixed"] * 20 + ["random"] * 20
    table = TrialTable.from_columns(test=tests, arm=arms, value=rng.uniform(1, 2, 46))
    analysis = analyze(table)
    few = next(v for v in analysis.tests if v.test == "few")
    assert few.kw_p is None and few.notes
    text = render_report(analysis, table)
    page = Page(text)
    row = re.search(r'<td class="name">(?:<a [^>]*>)?few(?:</a>)?</td>(.*?)</tr>', text)
    assert row is not None and row.group(1).count("—") >= 5
    assert say(few.notes[0]) in page.all_text
    assert "The data does not say when runs started." in page.all_text


def test_the_new_harness_metrics_leftovers_and_the_max_rss_floor(tmp_path: Path) -> None:
    path, analysis = measured_report(tmp_path)
    text = path.read_text(encoding="utf-8")
    tables = Page(section_of(text, "tables")).all_text
    for heading in MEASURED_HEADINGS.values():
        assert heading in tables, heading
    # The max_rss table has a notes column; the floor is noted on the two tests at it.
    rss = section_of(text, "tables")
    rss = rss[rss.index("metric max_rss"):]
    rss = rss[: rss.index("</table>")]
    assert '<th class="text" scope="col">notes</th>' in rss
    assert Page(rss).all_text.count("is at the floor of what wait4 can show") == 2
    warnings = Page(section_of(text, "warnings")).all_text
    assert "server: 6 of 12 trials left processes running (12 in all), killed before the next trial" in warnings
    assert "tiny (max_rss): median" in warnings and "read peak_memory for the trial's own memory" in warnings


def test_a_report_without_the_new_metrics(tmp_path: Path) -> None:
    path, _ = measured_report(tmp_path, measured=(), leftovers={"server": None, "tiny": None, "big": None})
    text = path.read_text(encoding="utf-8")
    tables = Page(section_of(text, "tables")).all_text
    assert not any(f"metric {m} " in tables for m in MEASURED_HEADINGS)
    assert "metric max_rss (max_rss (KiB), lower is better" in tables
    assert "left processes running" not in text
