"""Per-test detail (report/html/detail.py): bounded for many tests, over time by run or by trial,
and the paper's own data."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from benchsage.report.html import render_report
from benchsage.report.html.detail import choose_detail
from benchsage.store.table import TrialTable

from reports import Page, assert_nothing_injected, section_of

ARTIFACT = Path(os.environ.get("BENCHSAGE_TEST_ARTIFACT") or "/nonexistent")  # the OrderSage artifact data; .ci/run sets it


def test_detail_is_bounded_for_many_tests(monkeypatch: pytest.MonkeyPatch, make_table, analyze) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("benchsage.report.html.detail.DETAIL_ALL_MAX", 4)
    monkeypatch.setattr("benchsage.report.html.detail.DETAIL_MAX", 7)
    monkeypatch.setattr("benchsage.report.html.detail.TOP_EFFECTS", 3)
    table = make_table(40, 10, seed=5, affected_share=0.4)
    analysis = analyze(table)
    sig = sorted((v for v in analysis.tests if v.significant), key=lambda v: v.p_adjusted)
    assert len(sig) > 7, "the data should have more significant tests than detail places"
    chosen, note = choose_detail(analysis.tests)
    assert len(chosen) == 7
    largest = sorted(analysis.tests, key=lambda v: -abs(v.delta_pct))[:3]
    assert all(v in chosen for v in largest)
    assert all(v in chosen for v in sig[:4])  # the smallest p fill the other places
    text = render_report(analysis, table)
    assert text.count('<article class="detail"') == 7
    assert note in Page(text).all_text
    assert "of 40 tests" in note


def test_over_time_uses_trial_starts_when_runs_are_unknown(analyze) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    n = 40
    table = TrialTable.from_columns(test=["a"] * n, arm=["fixed", "random"] * (n // 2), value=rng.uniform(1, 2, n),
                                    time=1.7e9 + 90.0 * np.arange(n))
    text = render_report(analyze(table), table)
    assert "trial start, time since the first trial (minutes)" in text
    assert "position in run" not in text[text.index('<section id="detail">'):]


@pytest.mark.skipif(not (ARTIFACT / "memcached-table3" / "all_exp_results.csv").is_file(), reason="the OrderSage artifact data is not here")
def test_report_of_the_paper_artifact(analyze) -> None:  # type: ignore[no-untyped-def]
    from benchsage.store.importers.detect import load_sources

    table = load_sources([ARTIFACT / "memcached-table3" / "all_exp_results.csv"])
    analysis = analyze(table)
    text = render_report(analysis, table)
    page = Page(text)
    for name in ("./cmd_get_test.sh", "./cmd_set_test.sh", "./get_hits_test.sh"):
        assert name in page.all_text
    assert text.count('<article class="detail"') == 3
    assert '<figure id="fig-timeline">' in text
    # OrderSage times trials on a clock that restarts each run: over time means run starts,
    # which span the experiment's 12 hours, not the seconds of one run.
    detail = section_of(text, "detail")
    assert detail.count("run start, time since the first run (hours)") == 3
    assert "all_exp_results.csv" in page.all_text
    assert_nothing_injected(page)
