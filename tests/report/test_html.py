"""The HTML report: one self-contained file whose every string from data is escaped, checked
by parsing the HTML here and by opening it in a real headless Chromium."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import itertools
import re
from html.parser import HTMLParser
from pathlib import Path

import markupsafe
import numpy as np
import pytest

from benchsage.analyze.verdict import Analysis
from benchsage.design.plan import make_plan
from benchsage.errors import UsageError
from benchsage.report import plots
from benchsage.report.html import contexts, jinja, render_report, write_report
from benchsage.report.html.detail import choose_detail
from benchsage.report.html.numbers import fmt, fmt_p, fmt_pct
from benchsage.report.html.rows import DIAGNOSTIC_ROWS
from benchsage.store.table import TrialTable

import browser

XSS_TEST = "<img src=x onerror=\"document.title='pwned'\">"
SCRIPT_TEST = "<script>document.title='pwned'</script>"
SCRIPT_METRIC = "ops</title><script>document.title='pwned'</script>"

ARTIFACT = Path(__file__).resolve().parents[3] / "shared" / "data" / "ordersage-artifact"
SECTIONS = ("verdict", "tables", "figures", "detail", "diagnostics", "provenance", "warnings")
BOLD_TEST = "cost $x^2$ & <b>bold</b>"
SPEC_TEXT = "[experiment]\nname = \"</pre><script>document.title='pwned'</script>\"\n"
STDOUT = "<img src=x onerror=\"document.title='pwned'\">"
needs_chromium = pytest.mark.skipif(not browser.available(), reason="chromium is not installed")


class Page(HTMLParser):
    """Every element (tag, attributes) and the text of a page, entities decoded."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        self._in_script = tag == "script"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)

    def tags(self, name: str) -> list[dict[str, str]]:
        return [attrs for tag, attrs in self.elements if tag == name]

    @property
    def all_text(self) -> str:
        return "".join(self.text)


def assert_nothing_injected(page: Page) -> None:
    """Only the report's own sorter runs; no markup from data became an element."""
    handlers = [(tag, a) for tag, attrs in page.elements for a in attrs if a.lower().startswith("on")]
    assert handlers == []
    assert len(page.tags("script")) == 1
    for tag in ("img", "iframe", "object", "embed", "link", "base", "form", "b", "i", "u"):
        assert page.tags(tag) == [], tag


@pytest.fixture(scope="module")
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


@pytest.fixture(scope="module")
def xss_analysis(xss_table: TrialTable, analyze, make_diagnostics) -> Analysis:  # type: ignore[no-untyped-def]
    return analyze(xss_table, make_diagnostics(xss_table.test_names[:3], SCRIPT_METRIC))


@pytest.fixture(scope="module")
def xss_report(xss_analysis: Analysis, xss_table: TrialTable, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("xss") / "report.html"
    write_report(xss_analysis, xss_table, path)
    return path


@pytest.fixture(scope="module")
def small_report(small_analysis: Analysis, small_table: TrialTable, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("small") / "report.html"
    write_report(small_analysis, small_table, str(path))
    return path


# -- the file -------------------------------------------------------------------------------------


def test_report_has_every_section_in_order(small_report: Path) -> None:
    text = small_report.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    at = [text.index(f'<section id="{s}">') for s in SECTIONS]
    assert at == sorted(at)
    page = Page(text)
    assert [a["href"] for a in page.tags("a") if a.get("href", "").startswith("#")][: len(SECTIONS)] == [f"#{s}" for s in SECTIONS]


def test_report_needs_no_network(xss_report: Path) -> None:
    text = xss_report.read_text(encoding="utf-8")
    page = Page(text)
    for tag, attrs in page.elements:
        for name in ("src", "href", "xlink:href", "action", "formaction", "poster", "data"):
            if name in attrs:
                assert attrs[name].startswith(("#", "data:")), (tag, name, attrs[name][:80])
    # The only http URLs are XML namespace names, which nothing fetches.
    for url in re.findall(r"https?://[^\s\"'<>)]*", text):
        assert url in ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"), url
    assert "@import" not in text and not re.search(r"url\((?!#|data:)", text)


def test_content_security_policy_allows_only_the_sorter(xss_report: Path) -> None:
    page = Page(xss_report.read_text(encoding="utf-8"))
    (meta,) = [m for m in page.tags("meta") if m.get("http-equiv") == "Content-Security-Policy"]
    (script,) = page.scripts
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    policy = dict(part.strip().split(" ", 1) for part in meta["content"].split(";"))
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == f"'sha256-{digest}'"
    assert policy["img-src"] == "data:"


def test_strings_from_data_are_escaped(xss_report: Path, xss_table: TrialTable) -> None:
    text = xss_report.read_text(encoding="utf-8")
    for raw in (XSS_TEST, SCRIPT_TEST, SCRIPT_METRIC, "<b>bold</b>", "<u>ops/s</u>", "<i>italic</i>", "</pre><script>"):
        assert raw not in text, raw
    page = Page(text)
    assert_nothing_injected(page)
    shown = page.all_text
    # Shown as text: test names, metric, unit, spec, plan, snapshots, stdout, warnings.
    for literal in (XSS_TEST, SCRIPT_TEST, BOLD_TEST, SCRIPT_METRIC, "<u>ops/s</u>", SPEC_TEXT.strip(), STDOUT,
                    "demo <i>italic</i>", "<u>def</u>", f"3 rows of {SCRIPT_TEST} were not ok", "<b>not bold</b>"):
        assert literal in shown, literal
    (title,) = re.findall(r"<title>(.*?)</title>", text)
    assert title == "benchsage report: demo &lt;i&gt;italic&lt;/i&gt;"


def test_tests_table_is_sorted_by_p_and_carries_numeric_sort_keys(small_report: Path, small_analysis: Analysis) -> None:
    text = small_report.read_text(encoding="utf-8")
    table = text[text.index('<section id="tables">'): text.index('<section id="figures">')]
    rows = re.findall(r"<tr( class=\"sig\")?><td class=\"name\">(.*?)</td>(.*?)</tr>", table)
    assert len(rows) == len(small_analysis.tests)
    p_adjusted = [float(re.findall(r'data-v="([^"]*)"', cells)[3]) for _, _, cells in rows]
    assert p_adjusted == sorted(p_adjusted)
    by_name = {v.test: v for v in small_analysis.tests}
    for sig, name, _ in rows:
        name = re.sub(r"<[^>]+>", "", name)
        assert bool(sig) == bool(by_name[name].significant)
    assert "<th" in table and 'class="sortable"' in table


def test_figures_and_detail_are_inline_svg(small_report: Path, small_analysis: Analysis) -> None:
    text = small_report.read_text(encoding="utf-8")
    figures = text[text.index('<section id="figures">'): text.index('<section id="detail">')]
    for key in ("fig-pvalues", "fig-eta2", "fig-delta", "fig-ci-cases", "fig-median-ci"):
        assert f'<figure id="{key}">' in figures
    assert figures.count("<svg") == 5
    detail = text[text.index('<section id="detail">'): text.index('<section id="diagnostics">')]
    # Few tests: every test gets its detail, most significant first, linked from the table.
    assert detail.count('<article class="detail"') == detail.count("<svg") == len(small_analysis.tests)
    first = min(small_analysis.tests, key=lambda v: v.kw_p)
    assert detail.index(first.test) < detail.index("<svg")
    assert text.count('href="#d-') == len(small_analysis.tests)
    ids = re.findall(r'\bid="([^"]*)"', text)
    assert len(ids) == len(set(ids))  # inlined figures do not collide
    assert '<figure id="fig-timeline">' in text  # runs have start times


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
    assert few.notes[0] in page.all_text
    assert "The data does not say when runs started." in page.all_text


def test_over_time_uses_trial_starts_when_runs_are_unknown(analyze) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    n = 40
    table = TrialTable.from_columns(test=["a"] * n, arm=["fixed", "random"] * (n // 2), value=rng.uniform(1, 2, n),
                                    time=1.7e9 + 90.0 * np.arange(n))
    text = render_report(analyze(table), table)
    assert "trial start, time since the first trial (minutes)" in text
    assert "position in run" not in text[text.index('<section id="detail">'):]


def test_any_text_and_non_finite_values_render(recwarn: pytest.WarningsRecorder, make_table, analyze) -> None:  # type: ignore[no-untyped-def]
    names = ["测试 一", "emoji 🚀 test", "rtl עברית", "nul\x00byte\x1b[31m"]
    table = make_table(4, 6, seed=1, names=names)
    value = table.value.copy()
    value[:2] = [np.inf, np.nan]
    table = dataclasses.replace(table, value=value)
    text = render_report(analyze(table), table)
    assert "\x00" not in text and "\x1b" not in text
    shown = Page(text).all_text
    assert all(name in shown for name in names[:3]) and "nul\ufffdbyte\ufffd[31m" in shown
    assert not [w for w in recwarn if "Glyph" in str(w.message)]


def test_an_analysis_without_tests_still_renders() -> None:
    table = TrialTable.from_columns(test=[], arm=[], value=[])
    analysis = Analysis("0.1.0", 0.05, "bonferroni", None, "exact-binomial", 0.95, "paper", False, ())
    page = Page(render_report(analysis, table))
    assert "No tests were compared." in page.all_text
    assert "No test had enough values to plot." in page.all_text
    assert len(page.tags("svg")) == 0


def test_provenance_is_shown(xss_report: Path, xss_table: TrialTable) -> None:
    text = xss_report.read_text(encoding="utf-8")
    prov = Page(text[text.index('<section id="provenance">'): text.index('<section id="warnings">')]).all_text
    assert "tool version" in prov and "0.1.0" in prov
    assert "seed" in prov and "7" in prov
    plan = make_plan(xss_table.test_names, 8, 7)
    arms = "".join(r.arm[0].upper() for r in plan.runs)
    assert arms in prov  # the interleaving of the plan, run by run
    # Snapshots are folded: a setting all runs share once, a setting that differs with its runs.
    assert "16 snapshots." in prov
    assert "2 different values" in prov and "(runs 0–9)" in prov and "(runs 10–15)" in prov
    assert prov.count("node1") == 1


@pytest.fixture(scope="module")
def tiny(make_table, analyze, make_diagnostics) -> tuple[Analysis, TrialTable]:  # type: ignore[no-untyped-def]
    table = make_table(3, 6, seed=8)
    return analyze(table, make_diagnostics(table.test_names[:1])), table


def test_provenance_of_a_large_journal_stays_small(tiny: tuple[Analysis, TrialTable]) -> None:
    analysis, table = tiny
    names = [f"./bench_{i:04d}.sh --with a long argument list" for i in range(1880)]
    rng = np.random.default_rng(0)
    plan = [{"run": r, "arm": "fixed" if r % 2 else "random", "order": list(rng.permutation(names)), "status": "done"} for r in range(372)]
    snapshots = {r: {"host": "n1", "load": f"{r % 9}", "hashes": {n: "abc" for n in names[:300]}} for r in range(372)}
    prov = {"plan": plan, "snapshots": snapshots, "run_starts": {r: 1.7e9 + r for r in range(372)}, "blob": "x" * 10**6}
    text = render_report(analysis, dataclasses.replace(table, provenance=prov))
    section = text[text.index('<section id="provenance">'): text.index('<section id="warnings">')]
    assert len(section) < 400_000, len(section)
    shown = Page(section).all_text
    assert "372 runs" not in shown and "… 332 more runs" in shown
    assert "… (1,868 more)" in shown  # each order names its first tests only
    assert "9 different values" in shown and "372 snapshots." in shown
    assert "372 entries" in shown  # run starts fold away
    assert "more characters not shown" in shown


AMP_SCRIPT_TEST = "<script>document.title='pwned'</script> & <b>co</b> &amp;"


@pytest.fixture(scope="module")
def amp_report(make_table, analyze, make_diagnostics, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    table = make_table(2, 8, seed=6, names=[AMP_SCRIPT_TEST, "./other.sh"])
    path = tmp_path_factory.mktemp("amp") / "report.html"
    write_report(analyze(table, make_diagnostics([AMP_SCRIPT_TEST])), table, path)
    return path


def test_templates_autoescape_every_place_a_test_name_is_printed(amp_report: Path) -> None:
    text = amp_report.read_text(encoding="utf-8")
    escaped = "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt; &amp; &lt;b&gt;co&lt;/b&gt; &amp;amp;"
    # Tests table, detail heading, position, carry-over (as test and as predecessor) and trend rows.
    assert text.count(escaped) >= 6
    assert "</script> &" not in text and "& <b>" not in text
    page = Page(text)
    assert_nothing_injected(page)
    assert AMP_SCRIPT_TEST in page.all_text  # decoded, the name reads exactly as written


def test_templates_ship_with_the_package() -> None:
    import fnmatch
    import tomllib

    root = Path(__file__).resolve().parents[2]
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["benchsage"]
    package = root / "src" / "benchsage"
    templates = sorted((package / "report" / "html" / "templates").iterdir())
    assert templates
    for path in templates:
        relative = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(relative, g) for g in globs), relative
    assert jinja.environment().autoescape is True


def test_report_is_deterministic(tiny: tuple[Analysis, TrialTable]) -> None:
    assert render_report(*tiny) == render_report(*tiny)


def test_write_report_replaces_atomically_and_reports_bad_paths(tiny: tuple[Analysis, TrialTable], tmp_path: Path) -> None:
    analysis, table = tiny
    dest = tmp_path / "r.html"
    dest.write_text("old")
    write_report(analysis, table, dest)
    assert dest.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]
    with pytest.raises(UsageError, match="cannot write the report to .*missing"):
        write_report(analysis, table, tmp_path / "missing" / "r.html")


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
    detail = text[text.index('<section id="detail">'): text.index('<section id="diagnostics">')]
    assert detail.count("run start, time since the first run (hours)") == 3
    assert "all_exp_results.csv" in page.all_text
    assert_nothing_injected(page)


# -- in a real browser ------------------------------------------------------------------------------


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
    png = browser.screenshot(small_report, tmp_path / "shot.png", 1280, 2400)
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
    # Click the Δ% heading once, then the p heading twice, the way a reader would.
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    clicks = """<script>
      var heads = document.querySelector("table.sortable").tHead.rows[0].cells, by = {};
      Array.prototype.forEach.call(heads, function (h) { by[h.textContent] = h; });
      by["Δ%"].click();
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


def test_diagnostics_are_shown(small_report: Path, small_analysis: Analysis) -> None:
    text = small_report.read_text(encoding="utf-8")
    section = text[text.index('<section id="diagnostics">'): text.index('<section id="provenance">')]
    diag = small_analysis.diagnostics
    assert diag is not None and diag.interleaving is not None
    shown = Page(section).all_text
    assert diag.interleaving.detail in shown
    assert '<figure id="fig-timeline">' in section
    # Position bins print as ranges; every computed row is listed (fewer than the cap).
    rows = re.findall(r"<tr[^>]*><td class=\"name\">", section)
    assert len(rows) == len(diag.position_effects) + len(diag.carryover) + len(diag.trends)
    binned = [d for d in diag.position_effects if d.position_last not in (None, d.position)]
    assert binned and all(f"{d.position}–{d.position_last}" in shown for d in binned)


def test_long_diagnostics_tables_show_the_significant_rows_first(tiny: tuple[Analysis, TrialTable], make_diagnostics) -> None:  # type: ignore[no-untyped-def]
    analysis, table = tiny
    names = [f"./t{i}.sh" for i in range(DIAGNOSTIC_ROWS + 10)]
    diag = make_diagnostics(names)
    effects = tuple(dataclasses.replace(d, significant=i % 7 == 0, p_adjusted=0.5 if i % 7 else 0.01) for i, d in enumerate(diag.position_effects))
    text = render_report(dataclasses.replace(analysis, diagnostics=dataclasses.replace(diag, position_effects=effects)), table)
    shown = Page(text).all_text
    assert f"showing {DIAGNOSTIC_ROWS} of {len(names)} position effects, significant first." in shown
    section = text[text.index("<h3>Position effects</h3>"): text.index("<h3>Carry-over")]
    flags = re.findall(r'<td class="text(?: yes)?">(yes|no)</td></tr>', section)
    n_sig = sum(1 for d in effects if d.significant)
    assert flags[:n_sig] == ["yes"] * n_sig and set(flags[n_sig:]) == {"no"}


def test_the_confidence_level_of_the_analysis_is_the_one_shown(make_table, analyze) -> None:  # type: ignore[no-untyped-def]
    table = make_table(3, 12, seed=8)
    text = render_report(analyze(table, ci_level=0.9), table)
    assert "median fixed [90% CI]" in text and "Median and 90% CI per test" in text
    assert "by arm (black: median, 90% CI)" in text
    assert "95%" not in Page(text).all_text


# -- treatments: comparisons, context effects, observer effect, factorial designs -----------------

CLAIM_A = "o3 <i>fast</i> & co"
CLAIM_B = "o2"
TREATMENT_SECTIONS = ("verdict", "comparisons", "tables", "figures", "detail", "contexts", "observer", "factorial",
                      "diagnostics", "provenance", "warnings")


def treatment_table(seed: int = 0, contexts: int = 8, reps: int = 3) -> TrialTable:
    """o3 vs o2 measured in `contexts` contexts (env_bytes, cpus), with and without strace, on a
    2^2 design (smt, governor), in both arms. o3 is 7% faster, except in contexts with 2,600
    environment bytes or more, where it is 10% slower (Mytkowicz et al.'s flip); strace adds 35%;
    smt on saves 10%, the performance governor 3%."""
    rng = np.random.default_rng(seed)
    env = rng.integers(0, 4096, contexts)
    env[:3] = (3000, 3800, 100)  # contexts on both sides of the flip
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "context", "env", "cpus", "observer", "smt", "gov")}
    run = 0
    for c, obs, smt, gov, arm, _ in itertools.product(range(contexts), ("none", "strace"), ("off", "on"), ("powersave", "performance"),
                                                      ("fixed", "random"), range(reps)):
        order = [CLAIM_A, CLAIM_B] if arm == "fixed" or rng.random() < 0.5 else [CLAIM_B, CLAIM_A]
        for pos, test in enumerate(order):
            value = 1.0 if test == CLAIM_B else (0.93 if env[c] < 2600 else 1.1)
            value *= (1.35 if obs == "strace" else 1.0) * (0.9 if smt == "on" else 1.0) * (0.97 if gov == "performance" else 1.0)
            value *= 1 + 0.01 * rng.standard_normal()
            for k, x in zip(cols, (test, arm, value, run, pos, f"c{c}", str(env[c]), str(c % 2), obs, smt, gov)):
                cols[k].append(x)
        run += 1
    return TrialTable.from_columns(
        test=cols["test"], arm=cols["arm"], value=cols["value"], run=cols["run"], position=cols["position"],
        metric=["wall_time"] * len(cols["test"]),
        treatments={"context": cols["context"], "context:env_bytes": cols["env"], "context:cpus": cols["cpus"],
                    "observer": cols["observer"], "factor:smt": cols["smt"], "factor:governor": cols["gov"]},
        provenance={"compare": [{"a": CLAIM_A, "b": CLAIM_B, "metric": "wall_time"}, {"a": CLAIM_A, "b": "gone"}],
                    "factors": [{"name": "smt", "levels": ["off", "on"]}, {"name": "governor", "levels": ["powersave", "performance"]}],
                    "observer_baseline": "none"},
    )


@pytest.fixture(scope="module")
def treated(analyze, tmp_path_factory: pytest.TempPathFactory) -> tuple[Analysis, TrialTable, Path]:  # type: ignore[no-untyped-def]
    table = treatment_table()
    analysis = analyze(table)
    path = tmp_path_factory.mktemp("treated") / "report.html"
    write_report(analysis, table, path)
    return analysis, table, path


def _row_text(section: str, first_cell: str) -> list[str]:
    """The text of each cell of the rows whose first cell reads `first_cell`."""
    out = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", section, re.S):
        cells = [Page(c).all_text for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if cells and cells[0] == first_cell:
            out.append(cells)
    return out


def test_treatment_sections_come_in_order_and_are_linked(treated: tuple[Analysis, TrialTable, Path]) -> None:
    text = treated[2].read_text(encoding="utf-8")
    at = [text.index(f'<section id="{s}">') for s in TREATMENT_SECTIONS]
    assert at == sorted(at)
    page = Page(text)
    assert [a["href"] for a in page.tags("a") if a.get("href", "").startswith("#")][: len(TREATMENT_SECTIONS)] == [f"#{s}" for s in TREATMENT_SECTIONS]
    assert '<section id="sequential">' not in text  # rendered only when the analysis has it


def test_a_report_without_treatments_has_none_of_their_sections(small_report: Path) -> None:
    text = small_report.read_text(encoding="utf-8")
    for name in ("comparisons", "contexts", "observer", "factorial", "sequential"):
        assert f'id="{name}"' not in text and f'href="#{name}"' not in text, name


def test_comparisons_state_each_claim_its_winner_and_where_it_flips(treated: tuple[Analysis, TrialTable, Path]) -> None:
    analysis, _, path = treated
    section = _section(path.read_text(encoding="utf-8"), "comparisons")
    claim, missing = analysis.comparisons
    assert claim.better == "a" and claim.contexts.flips and claim.contexts.b_better >= 1  # the data flips
    shown = Page(section).all_text
    assert claim.sentence() in shown and missing.sentence() in shown
    (row,) = _row_text(section, f"{CLAIM_A} vs {CLAIM_B}")
    assert row[1] == "wall_time"
    assert row[2] == f"{fmt(claim.ratio)}[{fmt(claim.ci[0])}, {fmt(claim.ci[1])}]"
    assert row[3:5] == [fmt_p(claim.p), fmt_p(claim.p_adjusted)]
    assert row[5] == "mann-whitneyCI: bonett-price"
    assert row[6] == CLAIM_A  # the winner, by name
    assert row[7:9] == ["yes", "yes"]
    s = claim.contexts
    assert row[9] == f"{CLAIM_A} {s.a_better} · {CLAIM_B} {s.b_better} · undecided {s.undecided} of {s.n}"
    assert row[10] == "yes"
    cells = claim.factor_cells  # the table has two factors: smt and governor
    assert cells.n == 4 and row[11] == f"{CLAIM_A} {cells.a_better} · {CLAIM_B} {cells.b_better} · undecided {cells.undecided} of 4"
    assert row[12] == ("yes" if cells.flips else "no") and row[13] == ""
    (gone,) = _row_text(section, f"{CLAIM_A} vs gone")
    assert gone[2:5] == ["—"] * 3 and gone[6] == "—" and gone[11:13] == ["—", "—"]
    assert "no test 'gone' in the data" in gone[13]


def test_context_effects_table_and_figure(treated: tuple[Analysis, TrialTable, Path]) -> None:
    import xml.etree.ElementTree as ET

    analysis, _, path = treated
    section = _section(path.read_text(encoding="utf-8"), "contexts")
    for effect in analysis.context_effects:
        (row,) = _row_text(section, effect.test)
        assert row[2:8] == [str(len(effect.medians)), fmt(effect.kw_h), fmt_p(effect.kw_p),
                            fmt_p(effect.p_adjusted), "yes" if effect.significant else "no", fmt(effect.spread_pct, 3)]
        assert row[8].startswith(fmt_p(effect.by["env_bytes"])) and row[9].startswith(fmt_p(effect.by["cpus"]))
        assert row[10].startswith(", ".join(f"{c} {fmt(m)}" for c, m in list(effect.medians.items())[:3]))
    assert [e.significant for e in analysis.context_effects if e.test == CLAIM_A] == [True]
    figure = re.search(r'<figure id="fig-contexts">.*?</figure>', section, re.S).group(0)
    svg = ET.fromstring(re.search(r"<svg\b.*?</svg>", figure, re.S).group(0))
    labels = ["".join(t.itertext()) for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    # One panel for the claim (the ratio per context), one per test (its median per context),
    # contexts placed by their environment size.
    assert f"{CLAIM_A} / {CLAIM_B} (wall_time)" in labels and f"{CLAIM_A} (wall_time)" in labels and "o2 (wall_time)" in labels
    assert labels.count("env_bytes") == 3
    assert len(re.findall(r'id="fig-contexts-axes_\d+"', figure)) == 3


def test_the_context_figure_draws_each_context_median_and_its_exact_interval(treated: tuple[Analysis, TrialTable, Path]) -> None:
    from scipy import stats

    from benchsage.analyze.treatments import order_rows

    analysis, table, _ = treated
    settings = contexts._context_settings(table)
    assert settings["c0"] == {"env_bytes": "3000", "cpus": "0"}
    panels = contexts._test_panels(analysis.context_effects, table, settings)
    examined = order_rows(table)  # the lightest observer level, as the context analysis
    names, codes = examined.levels("context")
    for effect, panel in zip(analysis.context_effects, panels):
        test = examined.test == examined.test_names.index(effect.test)
        for i, context in enumerate(panel.labels):
            x = np.sort(examined.value[test & (codes == names.index(context))])
            n = len(x)
            # Largest l whose interval [x(l), x(n-l+1)] still covers the median with >= 95%.
            l = max(k for k in range(1, n // 2 + 1) if stats.binom.cdf(n - k, n, 0.5) - stats.binom.cdf(k - 1, n, 0.5) >= 0.95)
            assert panel.y[i] == pytest.approx(np.median(x), rel=1e-12)
            assert (panel.low[i], panel.high[i]) == (x[l - 1], x[n - l])
        assert list(panel.x) == [float(settings[c]["env_bytes"]) for c in panel.labels]
    claim = contexts._comparison_panel(analysis.comparisons[0].to_json(), settings)
    per = analysis.comparisons[0].per_context
    assert list(claim.y) == [s.comparison.ratio for s in per] and claim.reference == 1.0
    assert claim.colours == [{"a": plots.A_BETTER_COLOUR, "b": plots.SIGNIFICANT_COLOUR}.get(s.better, plots.UNDECIDED_COLOUR) for s in per]


def test_observer_effect_table_and_figure(treated: tuple[Analysis, TrialTable, Path]) -> None:
    analysis, _, path = treated
    section = _section(path.read_text(encoding="utf-8"), "observer")
    assert len(analysis.observer) == 2
    for effect in analysis.observer:
        (row,) = _row_text(section, effect.test)
        assert row[1:5] == ["wall_time", "strace", "none", f"{effect.n_level} / {effect.n_baseline}"]
        assert row[7] == fmt_pct(effect.effect_pct) and 30 < effect.effect_pct < 40
        assert row[8] == f"{fmt(effect.ratio)}[{fmt(effect.ci[0])}, {fmt(effect.ci[1])}]"
        assert row[11] == "yes"
    assert '<figure id="fig-observer">' in section
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", section)
    assert f"{CLAIM_A} [strace]".replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in labels and "o2 [strace]" in labels


def test_factorial_terms_and_allocation_of_variation(treated: tuple[Analysis, TrialTable, Path]) -> None:
    analysis, _, path = treated
    section = _section(path.read_text(encoding="utf-8"), "factorial")
    assert "Levels (low → high): smt: off → on; governor: powersave → performance" in Page(section).all_text
    for row in analysis.factorial:
        lines = _row_text(section, row.test)
        terms = row.to_json()["terms"]
        assert [cells[2] for cells in lines] == ["smt", "governor", "smt:governor", "error"] == [t["term"] for t in terms]
        for cells, term in zip(lines, terms):
            assert cells[4] == fmt(term["variation_pct"], 3)
            if term["term"] != "error":
                assert cells[3] == f"{fmt(term['effect'])}[{fmt(term['ci'][0])}, {fmt(term['ci'][1])}]"
        assert [cells[5] for cells in lines[:2]] == ["yes", "yes"]  # smt and governor matter
        assert lines[3][3] == "—" and lines[3][5] == "—"
    figure = re.search(r'<figure id="fig-allocation">.*?</figure>', section, re.S).group(0)
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", figure)
    assert {"smt", "governor", "smt:governor", "error", "o2"} <= set(labels)


def test_treatment_sections_escape_test_names(treated: tuple[Analysis, TrialTable, Path]) -> None:
    text = treated[2].read_text(encoding="utf-8")
    assert "<i>fast</i>" not in text
    page = Page(text)
    assert_nothing_injected(page)
    for name in ("comparisons", "contexts", "observer", "factorial"):
        assert CLAIM_A in Page(_section(text, name)).all_text, name


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
        section = _section(dom, name)
        assert re.search(rf'<figure id="{figure}"><h3>[^<]*</h3>\s*<svg\b', section), name
    shown = Page(dom).all_text
    assert analysis.comparisons[0].sentence() in shown
    claim = analysis.comparisons[0]
    assert _row_text(_section(dom, "comparisons"), f"{CLAIM_A} vs {CLAIM_B}")[0][2] == (
        f"{fmt(claim.ratio)}[{fmt(claim.ci[0])}, {fmt(claim.ci[1])}]")
    for effect in analysis.context_effects:
        assert _row_text(_section(dom, "contexts"), effect.test)[0][3] == fmt(effect.kw_h)
    for effect in analysis.observer:
        assert _row_text(_section(dom, "observer"), effect.test)[0][7] == fmt_pct(effect.effect_pct)
    for row in analysis.factorial:
        shares = [c[4] for c in _row_text(_section(dom, "factorial"), row.test)]
        assert shares == [fmt(t["variation_pct"], 3) for t in row.to_json()["terms"]]


# -- sequential stopping ----------------------------------------------------------------------------


def _sequential(analysis: Analysis, stopped: int | None, decisions: dict[tuple[str, str], tuple[str | None, int | None]]) -> Analysis:
    from benchsage.analyze.verdict import Sequential

    summary = {
        "looks": [{"runs": 10, "decided": 1, "alpha_spent": 1.5e-05}, {"runs": 20, "decided": 3, "alpha_spent": 0.0074}],
        "stopped_at_runs": stopped, "max_runs": 50, "method": "group-sequential Mann-Whitney <b>test</b>",
        "planned_looks": [10, 20, 30, 40, 50], "tests": 12, "min_effect": 2.0, "spending": "obrien-fleming", "correction": "bonferroni",
    }
    return dataclasses.replace(analysis, sequential=Sequential(summary=summary, decisions=decisions))


def test_sequential_stopping_section(small_analysis: Analysis, small_table: TrialTable) -> None:
    names = [v.test for v in small_analysis.tests]
    decisions = {(names[0], "wall_time"): ("no-effect", 10), (names[1], "wall_time"): ("effect", 20), (names[2], "wall_time"): ("effect", 10)}
    text = render_report(_sequential(small_analysis, 20, decisions), small_table)
    assert text.index('<section id="detail">') < text.index('<section id="sequential">') < text.index('<section id="diagnostics">')
    assert 'href="#sequential"' in text
    section = _section(text, "sequential")
    shown = Page(section).all_text
    assert "stopped early at 20 runs per arm (at most 50 runs per arm): every test decided" in shown
    assert "group-sequential Mann-Whitney <b>test</b>" in shown and "<b>" not in section
    assert "planned looks (runs per arm)10, 20, 30, 40, 50" in shown and "min effect (%)2.0" in shown
    assert _row_text(section, "1") == [["1", "10", "1", "1.50e-05"]] and _row_text(section, "2") == [["2", "20", "3", "0.0074"]]
    assert "2 with an order effect, 1 without one worth finding, 9 undecided." in shown
    rows = re.findall(r'<tr[^>]*><td class="name">([^<]*)</td><td class="text">wall_time</td><td class="text(?: yes)?">([^<]*)</td><td[^>]*>([^<]*)</td>', section)
    assert rows[:3] == [(markupsafe.escape(names[2]), "effect", "10"), (markupsafe.escape(names[1]), "effect", "20"),
                        (markupsafe.escape(names[0]), "no-effect", "10")]
    assert len(rows) == 12 and {r[1] for r in rows[3:]} == {"undecided"}


def test_sequential_stopping_not_yet_stopped_and_run_to_the_end(small_analysis: Analysis, small_table: TrialTable) -> None:
    running = Page(_section(render_report(_sequential(small_analysis, None, {}), small_table), "sequential")).all_text
    assert "not stopped: no look has decided every test yet (at most 50 runs per arm)" in running
    ended = Page(_section(render_report(_sequential(small_analysis, 50, {}), small_table), "sequential")).all_text
    assert "ran to the most runs, 50 per arm; 12 tests undecided" in ended


SEQUENTIAL_SPEC = """
[experiment]
name = "sequential-report"
runs = 12
seed = 5
stop = "sequential"
looks = 2
min_effect = 10.0

[reset]
command = ": > trace"

[[test]]
name = "a"
command = "sleep 0.01; printf a >> trace"

[[test]]
name = "b"
command = "sleep 0.01; printf b >> trace"

[[test]]
name = "d <b>&</b>"
command = "if [ \\"$(cat trace)\\" = ab ]; then sleep 0.005; else sleep 0.04; fi"
"""


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_report_of_a_real_sequential_experiment(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    (tmp_path / "spec.toml").write_text(SEQUENTIAL_SPEC)

    def bench(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=tmp_path, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=600)

    assert bench("run", "spec.toml", "-o", "out").returncode == 0
    doc = json.loads(bench("analyze", "out", "--json").stdout)
    assert bench("report", "out", "-o", "report.html").returncode == 0
    done = browser._run(["--enable-logging=stderr", "--v=0", "--dump-dom"], (tmp_path / "report.html").as_uri())
    assert [line for line in done.stderr.decode(errors="replace").splitlines() if ":CONSOLE" in line] == []
    section = _section(done.stdout.decode("utf-8"), "sequential")
    looks = doc["sequential"]["looks"]
    assert len(looks) >= 1
    for i, look in enumerate(looks, 1):
        assert _row_text(section, str(i)) == [[str(i), str(look["runs"]), str(look["decided"]), fmt_p(look["alpha_spent"])]]
    decided = {(r["test"], r["decided"] or "undecided") for r in doc["tests"] if r["primary"]}
    shown = {(c[0], c[2]) for c in _row_text(section, "a") + _row_text(section, "b") + _row_text(section, "d <b>&</b>")}
    assert shown == decided and len(shown) == 3


# -- fleets ---------------------------------------------------------------------------------------

HOSTILE_WORKER = "<img src=x onerror=\"document.title='w'\">"


def _fleet_report(tmp_path: Path, levels: dict[str, float], **snapshots: dict) -> tuple[str, Analysis]:
    import sys

    from benchsage.analyze.pipeline import analyze_sources

    sys.path.insert(0, str(Path(__file__).parents[1] / "analyze"))
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
    section = text[text.index('<section id="workers">'): text.index('<section id="diagnostics">')]
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
    tables = text[text.index('<section id="tables">'): text.index('<section id="workers">')]
    assert "van Elteren χ²" in tables and "KW H" not in tables
    assert section.count(">KW H</th>") == 4  # each worker's table and the test across workers
    fleet_rows = section[section.index("median per worker"):]
    assert fleet_rows.count(f"{markupsafe.escape(HOSTILE_WORKER)}</td></tr>") == 3  # the outlier of every test


def test_an_identical_fleet_and_a_single_worker_report(tmp_path: Path, small_report: Path) -> None:
    text, _ = _fleet_report(tmp_path, {"a": 1.0, "b": 1.0})
    assert "The 2 workers ran the same software on the same kind of machine" in Page(text).all_text
    single = small_report.read_text(encoding="utf-8")
    assert '<section id="workers">' not in single and 'href="#workers"' not in single


# -- harness metrics of measurement control --------------------------------------------------------


def _measured_report(tmp_path: Path, **kw) -> tuple[Path, Analysis]:
    import sys

    from benchsage.analyze.pipeline import analyze_sources

    sys.path.insert(0, str(Path(__file__).parents[1] / "analyze"))
    from measured_data import write_measured

    analysis, table = analyze_sources([str(write_measured(tmp_path / "exp", **kw))], format="benchsage")
    path = tmp_path / "report.html"
    write_report(analysis, table, path)
    return path, analysis


MEASURED_HEADINGS = {
    "peak_memory": "metric peak_memory (peak_memory (KiB), lower is better; not in the correction family; 3 tests)",
    "cpu_time": "metric cpu_time (cpu_time (s), lower is better; not in the correction family; 3 tests)",
    "energy": "metric energy (energy (J), lower is better; not in the correction family; 3 tests)",
}


def _section(text: str, name: str) -> str:
    start = text.index(f'<section id="{name}">')
    return text[start: text.index("</section>", start)]


def test_the_new_harness_metrics_leftovers_and_the_max_rss_floor(tmp_path: Path) -> None:
    path, analysis = _measured_report(tmp_path)
    text = path.read_text(encoding="utf-8")
    tables = Page(_section(text, "tables")).all_text
    for heading in MEASURED_HEADINGS.values():
        assert heading in tables, heading
    # The max_rss table has a notes column; the floor is noted on the two tests at it.
    rss = _section(text, "tables")
    rss = rss[rss.index("metric max_rss"):]
    rss = rss[: rss.index("</table>")]
    assert '<th class="text" scope="col">notes</th>' in rss
    assert Page(rss).all_text.count("is at the floor of what wait4 can show") == 2
    warnings = Page(_section(text, "warnings")).all_text
    assert "server: 6 of 12 trials left processes running (12 in all), killed before the next trial" in warnings
    assert "tiny (max_rss): median" in warnings and "read peak_memory for the trial's own memory" in warnings


def test_a_report_without_the_new_metrics(tmp_path: Path) -> None:
    path, _ = _measured_report(tmp_path, measured=(), leftovers={"server": None, "tiny": None, "big": None})
    text = path.read_text(encoding="utf-8")
    tables = Page(_section(text, "tables")).all_text
    assert not any(f"metric {m} " in tables for m in MEASURED_HEADINGS)
    assert "metric max_rss (max_rss (KiB), lower is better" in tables
    assert "left processes running" not in text


@pytest.mark.browser
@needs_chromium
def test_browser_shows_the_new_metrics_and_warnings(tmp_path: Path) -> None:
    path, _ = _measured_report(tmp_path)
    page = Page(browser.dump_dom(path))
    shown = page.all_text
    for heading in MEASURED_HEADINGS.values():
        assert heading in shown, heading
    assert "server: 6 of 12 trials left processes running (12 in all)" in shown
    assert shown.count("is at the floor of what wait4 can show") == 4  # two notes in the table, two warnings
    assert_nothing_injected(page)


def test_a_fleets_comparison_counts_the_workers_each_test_wins_on(tmp_path: Path) -> None:
    # Two machines where o3 beats o2, and one that runs another build of o3 (10% slower).
    from benchsage.analyze.pipeline import analyze_loaded
    from benchsage.analyze.treatments import CompareRequest, TreatmentOptions

    rng = np.random.default_rng(4)
    medians = {"w1": {"o3": 0.093, "o2": 0.100}, "w2": {"o3": 0.093, "o2": 0.100}, "w3": {"o3": 0.110, "o2": 0.100}}
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "worker")}
    for w, (worker, tests) in enumerate(medians.items()):
        for run in range(40):
            for position, test in enumerate(tests if run % 2 == 0 else list(rng.permutation(list(tests)))):
                cols["test"].append(test)
                cols["arm"].append(("fixed", "random")[run % 2])
                cols["value"].append(tests[test] * (1 + 0.01 * rng.standard_normal()))
                cols["run"].append(w * 100 + run)
                cols["position"].append(position)
                cols["worker"].append(worker)
    table = TrialTable.from_columns(**cols)
    analysis = analyze_loaded(table, treatments=TreatmentOptions(compare=(CompareRequest("o3", "o2"),)))
    path = tmp_path / "fleet.html"
    write_report(analysis, table, path)
    section = _section(path.read_text(encoding="utf-8"), "comparisons")
    (claim,) = analysis.comparisons
    assert "flips on 1 of 3 workers" in claim.sentence() and claim.sentence() in Page(section).all_text
    (row,) = _row_text(section, "o3 vs o2")
    assert row[11:13] == ["o3 2 · o2 1 · undecided 0 of 3", "yes"]  # workers won, flips on workers
    assert "workers count the same on each machine" in Page(section).all_text
    # One worker's report has no workers columns.
    alone = TrialTable.from_columns(**{k: [v for v, w in zip(col, cols["worker"]) if w == "w1"] for k, col in cols.items()})
    write_report(analyze_loaded(alone, treatments=TreatmentOptions(compare=(CompareRequest("o3", "o2"),))), alone, path)
    assert "workers won" not in _section(path.read_text(encoding="utf-8"), "comparisons")
