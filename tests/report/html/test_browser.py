"""The report in a real headless Chromium (tests/report/browser.py): markup from data stays text,
the sorter runs, the figures are drawn, and the page logs no errors."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.verdict import Analysis
from benchsage.report.html import render_report
from benchsage.report.html.numbers import fmt, fmt_pct
from benchsage.store.table import TrialTable
from benchsage.report.treatments_json import factorial_json
from benchsage.report.words import comparison_sentence

import browser
from reports import (
    AMP_SCRIPT_TEST, CLAIM_A, CLAIM_B, MEASURED_HEADINGS, Page, SCRIPT_METRIC, SCRIPT_TEST, SPEC_TEXT, STDOUT, XSS_TEST,
    assert_nothing_injected, measured_report, needs_chromium, row_text, section_of,
)


@pytest.mark.browser
@needs_chromium
def test_browser_shows_injected_markup_as_text_and_runs_nothing(xss_report: Path) -> None:
    dom = browser.dump_dom(xss_report)
    page = Page(dom)
    (title,) = re.findall(r"<title>(.*?)</title>", dom)
    assert "pwned" not in title and title == "benchsage report: demo &lt;i&gt;italic&lt;/i&gt;"
    assert_nothing_injected(page)
    for literal in (XSS_TEST, SCRIPT_TEST, SCRIPT_METRIC, STDOUT, SPEC_TEXT.strip()):
        assert literal in page.all_text, literal
    # The sorter, allowed by the policy's hash, did run.
    assert re.search(r'<html[^>]* data-sortable="\d+"', dom)


@pytest.mark.browser
@needs_chromium
def test_browser_shows_a_name_with_script_and_ampersand_as_text(amp_report: Path) -> None:
    dom = browser.dump_dom(amp_report)
    page = Page(dom)
    assert "pwned" not in re.findall(r"<title>(.*?)</title>", dom)[0]
    assert_nothing_injected(page)
    shown = page.all_text
    assert shown.count(AMP_SCRIPT_TEST) >= 6  # table, detail, diagnostics rows: all text
    # Chromium serialises the text node back with only what must be escaped in text.
    cells = [c for c in re.findall(r'<td class="name">(?:<a [^>]*>)?(.*?)(?:</a>)?</td>', dom) if "pwned" in c]
    assert len(cells) >= 5
    assert set(cells) == {"&lt;script&gt;document.title='pwned'&lt;/script&gt; &amp; &lt;b&gt;co&lt;/b&gt; &amp;amp;"}


@pytest.mark.browser
@needs_chromium
def test_browser_draws_the_report(small_report: Path, small_analysis: Analysis, tmp_path: Path) -> None:
    import matplotlib.image

    dom = browser.dump_dom(small_report)
    assert len(re.findall(r"<svg\b", dom)) == 5 + len(small_analysis.tests) + 1  # summary, detail, timeline
    # Every section unfolded, as a reader opens them (the figures' is folded when the page opens).
    opened = tmp_path / "opened.html"
    opened.write_text(small_report.read_text(encoding="utf-8").replace('<details class="section">', '<details class="section" open>'),
                      encoding="utf-8")
    png = browser.screenshot(opened, tmp_path / "shot.png", 1280, 2400)
    pixels = matplotlib.image.imread(png)[:, :, :3]
    assert pixels.shape[:2] == (2400, 1280)
    assert float(pixels.std()) > 0.05
    colours = np.unique((pixels * 255).round().astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 200
    # The p-value figure is in view: its points are drawn in the fixed arm's blue and in red.
    for rgb in ((0x00, 0x72, 0xB2), (0xD5, 0x5E, 0x00)):
        near = np.abs(pixels * 255 - np.array(rgb)).max(axis=2) < 12
        assert near.sum() > 30, rgb


@pytest.mark.browser
@needs_chromium
def test_browser_sorts_the_table_by_a_clicked_column(tmp_path: Path, analyze) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(4)
    tests = [f"t{i}" for i in range(6) for _ in range(20)] + ["few"] * 4
    arms = (["fixed"] * 10 + ["random"] * 10) * 6 + ["fixed", "random"] * 2
    table = TrialTable.from_columns(test=tests, arm=arms, value=rng.uniform(1, 2, len(tests)))
    text = render_report(analyze(table), table)
    # Click the Δ% means heading once, then the p heading twice, the way a reader would.
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    clicks = """<script>
      var heads = document.querySelector("table.sortable").tHead.rows[0].cells, by = {};
      Array.prototype.forEach.call(heads, function (h) { by[h.textContent] = h; });
      by["Δ% means"].click();
      document.body.setAttribute("data-delta", Array.prototype.map.call(
        document.querySelector("table.sortable").tBodies[0].rows, function (r) { return r.cells[0].textContent; }).join("|"));
      by["p"].click(); by["p"].click();
    </script></body>"""
    page = tmp_path / "sorted.html"
    page.write_text(text.replace("</body>", clicks), encoding="utf-8")
    dom = browser.dump_dom(page)
    analysis = analyze(table)
    by_delta = [v.test for v in sorted(analysis.tests, key=lambda v: v.delta_pct)]
    (after_delta,) = re.findall(r'<body[^>]* data-delta="([^"]*)"', dom)
    assert after_delta.split("|") == by_delta  # ascending on the first click
    body = dom[dom.index("<tbody>"): dom.index("</tbody>")]
    order = re.findall(r'<td class="name">(?:<a [^>]*>)?([^<]*)', body)
    by_p_desc = [v.test for v in sorted((v for v in analysis.tests if v.kw_p is not None), key=lambda v: -v.kw_p)]
    assert order == by_p_desc + ["few"]  # descending on the second click, unknown still last
    assert re.search(r'<th[^>]*aria-sort="descending"[^>]*>p</th>', dom)


@pytest.mark.browser
@needs_chromium
def test_browser_draws_the_treatment_sections_without_console_errors(treated: tuple[Analysis, TrialTable, Path]) -> None:
    analysis, _, path = treated
    # Chromium prints the page's console (script errors, policy violations) with this logging.
    done = browser._run(["--enable-logging=stderr", "--v=0", "--dump-dom"], path.resolve().as_uri())
    console = [line for line in done.stderr.decode(errors="replace").splitlines() if ":CONSOLE" in line]
    assert console == []
    dom = done.stdout.decode("utf-8")
    sortable = path.read_text(encoding="utf-8").count('<table class="sortable">')
    assert re.search(rf'<html[^>]* data-sortable="{sortable}"', dom)  # the sorter ran to its end
    for name, figure in (("contexts", "fig-contexts"), ("observer", "fig-observer"), ("factorial", "fig-allocation")):
        section = section_of(dom, name)
        assert re.search(rf'<figure id="{figure}"><h3>[^<]*</h3>\s*<svg\b', section), name
    shown = Page(dom).all_text
    assert comparison_sentence(analysis.comparisons[0]) in shown
    claim = analysis.comparisons[0]
    assert row_text(section_of(dom, "comparisons"), f"{CLAIM_A} vs {CLAIM_B}")[0][2] == (
        f"{fmt(claim.ratio)}[{fmt(claim.ci[0])}, {fmt(claim.ci[1])}]")
    for effect in analysis.context_effects:
        assert row_text(section_of(dom, "contexts"), effect.test)[0][3] == fmt(effect.kw_h)
    for effect in analysis.observer:
        assert row_text(section_of(dom, "observer"), effect.test)[0][7] == fmt_pct(effect.effect_pct)
    for row in analysis.factorial:
        shares = [c[4] for c in row_text(section_of(dom, "factorial"), row.test)]
        assert shares == [fmt(t["variation_pct"], 3) for t in factorial_json(row)["terms"]]


@pytest.mark.browser
@needs_chromium
def test_browser_shows_the_new_metrics_and_warnings(tmp_path: Path) -> None:
    path, _ = measured_report(tmp_path)
    page = Page(browser.dump_dom(path))
    shown = page.all_text
    for heading in MEASURED_HEADINGS.values():
        assert heading in shown, heading
    assert "server: 6 of 12 trials left processes running (12 in all)" in shown
    assert shown.count("is at the floor of what wait4 can show") == 4  # two notes in the table, two warnings
    assert_nothing_injected(page)
