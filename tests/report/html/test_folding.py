"""The page folds (report/html/page.py, templates/report.html, sort.js): every section below the
verdict is a <details> whose <summary> says what is inside and its count; the answer's sections
are open, the rest folded; a link into a folded section opens it, printing opens everything, and
the page's one script still runs under its Content-Security-Policy, alone. The browser tests
read a real experiment's report as Chromium leaves it."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchsage.analyze.verdict import Analysis
from benchsage.report.html import page
from benchsage.report.treatments_json import factorial_json
from benchsage.report.words import said
from benchsage.store.table import TrialTable

import browser
from reports import Page, needs_chromium, section_of

# The answer: open when the page opens. Everything else is folded.
OPEN = {"comparisons", "curves", "tables", "factorial", "contexts", "observer", "sequential"}
FOLDED = {"workers", "diagnostics", "figures", "detail", "warnings", "provenance"}
SUMMARY = re.compile(r'<section id="([a-z]+)"><details class="section"( open(?:="")?)?><summary><h2>([^<]*)</h2>'
                     r'(?:<span class="gist">([^<]*)</span>)?</summary>')
EPOCH = re.compile(r"(?<![\w.])1[0-9]{9}(?:\.[0-9]+)?(?![\w.])")  # seconds since 1970, as JSON would print them
ISO_UTC = re.compile(r"\b20[0-9]{2}-[01][0-9]-[0-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-5][0-9] UTC\b")


def folds(text: str) -> dict[str, tuple[bool, str, str]]:
    """Each folded section: (open, heading, gist), in page order."""
    return {key: (bool(is_open), heading, gist) for key, is_open, heading, gist in SUMMARY.findall(text)}


def test_the_verdict_stays_as_it_is_and_every_other_section_folds(treated: tuple[Analysis, TrialTable, Path]) -> None:
    analysis, _, path = treated
    text = path.read_text(encoding="utf-8")
    shown = re.findall(r'<section id="([a-z]+)">', text)
    assert shown[0] == "verdict" and '<section id="verdict"><h2>Verdict</h2>' in text
    found = folds(text)
    assert list(found) == shown[1:]  # every section but the verdict, in page order
    assert {k for k, (is_open, _, _) in found.items() if is_open} == OPEN & set(found)
    assert {k for k, (is_open, _, _) in found.items() if not is_open} == FOLDED & set(found)
    # The summary says what is inside and its headline count.
    assert found["comparisons"][1:] == ("Comparisons", "2 claims: 1 decided, 1 undecided; the winner flips in 1")
    assert found["diagnostics"][1] == "Where the effect comes from"
    primary = [v for v in analysis.tests if v.primary]
    tables = f"{len(primary)} tests, {sum(1 for v in primary if v.significant)} where the order matters"
    assert found["tables"][2].startswith(tables)
    effects = sum(1 for row in analysis.factorial for t in factorial_json(row)["terms"]
                  if t["term"] != "error" and (t["ci"][0] > 0 or t["ci"][1] < 0))
    assert effects >= 4  # smt and governor in each test
    assert found["factorial"][2] == f"{len(analysis.factorial)} tests; {effects} terms with an effect"
    assert found["warnings"][2] == (f"{len(said(analysis.warnings, once=True))} warnings" if analysis.warnings else "none")


def test_the_header_links_every_section_and_the_other_metrics_fold_inside_the_tests(tmp_path: Path) -> None:
    from reports import measured_report

    path, _ = measured_report(tmp_path)
    text = path.read_text(encoding="utf-8")
    links = re.findall(r'<nav>(.*?)</nav>', text, re.S)[0]
    assert re.findall(r'href="#([^"]+)"', links) == re.findall(r'<section id="([a-z]+)">', text)
    tables = section_of(text, "tables")
    others = tables[tables.index('<details class="others">'):]
    assert "metric wall_time" in tables[: tables.index('<details class="others">')]  # the primary metric, open
    assert "metric peak_memory" in others and "metric max_rss" in others  # the harness metrics, folded
    assert re.search(r"<summary>\d+ other metrics, not in the correction family: [a-z_, ]+</summary>", others)


def test_sections_and_their_folding_are_declared_once() -> None:
    for section in page.SECTIONS:
        if section is page.TOP:
            continue
        assert isinstance(section.HEADING, str) and section.HEADING and isinstance(section.OPEN, bool)
        assert (section.KEY in OPEN) == section.OPEN, section.KEY
    keys = [s.KEY for s in page.SECTIONS]
    assert keys.index("curves") == keys.index("comparisons") + 1  # a sweep's curves come right after the claims


# -- a real experiment in a real browser ---------------------------------------------------------

SPEC = """\
[experiment]
name = "tiny"
runs = 4
seed = 5

[[factor]]
name = "mode"
levels = ["a", "b"]
env = "MODE"

[[sweep]]
name = "n"
levels = [1, 4, 16]

[[test]]
name = "spin"
command = "python3 -c 'sum(range({n} * 20000))'"

[[test]]
name = "echo"
command = "echo hi"
"""
REAL_ORDER = ["verdict", "curves", "tables", "factorial", "diagnostics", "figures", "detail", "warnings", "provenance"]


@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report `benchsage report` writes of a real experiment with a factor and a sweep."""
    folder = tmp_path_factory.mktemp("real")
    (folder / "spec.toml").write_text(SPEC)
    for args in (("run", "spec.toml", "-o", "out"), ("report", "out", "-o", "report.html")):
        done = subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=folder, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=600)
        assert done.returncode == 0, done.stderr
    return folder / "report.html"


def console_and_dom(path: Path, fragment: str = "") -> tuple[list[str], str]:
    """What the page logged to the console (script errors, policy violations) and its DOM."""
    url = path.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    done = browser._run(["--enable-logging=stderr", "--v=0", "--dump-dom"], url)
    console = [line for line in done.stderr.decode(errors="replace").splitlines() if ":CONSOLE" in line]
    return console, done.stdout.decode("utf-8")


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_browser_shows_the_answer_first_and_folds_the_rest(real_report: Path) -> None:
    console, dom = console_and_dom(real_report)
    assert console == []
    assert re.findall(r'<section id="([a-z]+)">', dom) == REAL_ORDER
    found = folds(dom)
    assert [k for k, (is_open, _, _) in found.items() if is_open] == ["curves", "tables", "factorial"]
    assert found["curves"][1] == "Response curves"
    assert re.fullmatch(r"1 figure; the series differ at \d of 3 levels", found["curves"][2])  # spin along n, mode a vs b
    assert re.search(r'<html[^>]* data-folds="8"', dom)  # the script ran to its end
    # Every link of the header leads to a section of the page.
    nav = re.findall(r"<nav>(.*?)</nav>", dom, re.S)[0]
    targets = re.findall(r'href="#([^"]+)"', nav)
    assert targets == REAL_ORDER
    ids = set(re.findall(r'\bid="([^"]+)"', dom))
    assert set(targets) <= ids
    # Provenance is written for a reader: no null, None, JSON or seconds since 1970.
    provenance = Page(section_of(dom, "provenance")).all_text
    for word in ("null", "None", "NaN", "[]", "{}", "true", "false"):
        assert not re.search(rf"(?<![\w/]){re.escape(word)}(?![\w/])", provenance), word
    assert not EPOCH.search(provenance), EPOCH.search(provenance)
    # Times as ISO 8601 in UTC: when the report was created, and the snapshots' (one value, in a
    # row of its own, when the whole experiment fell within one second; a row per value else).
    assert re.search(r"created " + ISO_UTC.pattern, provenance)
    assert len(ISO_UTC.findall(provenance)) >= 2
    assert "not recorded" in provenance  # e.g. a governor a virtual machine does not have
    shown = Page(dom).all_text
    assert not re.search(r"\b(null|None)\b", shown)


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_browser_opens_a_folded_section_a_link_leads_into(real_report: Path) -> None:
    console, dom = console_and_dom(real_report, "provenance")
    assert console == []
    found = folds(dom)
    assert found["provenance"][0] is True  # opened by the script for the link's target
    assert found["diagnostics"][0] is False and found["warnings"][0] is False
    # A link inside a folded section (a test's detail, from its row in the table) opens it too.
    console, dom = console_and_dom(real_report, "d-0")
    assert console == [] and folds(dom)["detail"][0] is True


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_browser_clicks_and_printing_open_sections(real_report: Path, tmp_path: Path) -> None:
    text = real_report.read_text(encoding="utf-8")
    # A reader's clicks, replayed by a script of the test's (the page's policy would stop it).
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    reader = """<script>
      var html = document.documentElement, all = function () { return document.querySelectorAll("details").length; };
      var open = function () { return document.querySelectorAll("details[open]").length; };
      document.querySelector("nav a[href='#warnings']").click();
      html.setAttribute("data-after-click", document.querySelector("#warnings > details").open);
      var before = open();
      window.dispatchEvent(new Event("beforeprint"));
      html.setAttribute("data-printing", open() === all());
      window.dispatchEvent(new Event("afterprint"));
      html.setAttribute("data-after-print", open() === before);
    </script></body>"""
    page_ = tmp_path / "clicked.html"
    page_.write_text(text.replace("</body>", reader), encoding="utf-8")
    dom = browser.dump_dom(page_)
    for name in ("data-after-click", "data-printing", "data-after-print"):
        assert re.search(rf'<html[^>]* {name}="true"', dom), name


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_browser_runs_the_pages_script_and_nothing_else(real_report: Path, tmp_path: Path) -> None:
    text = real_report.read_text(encoding="utf-8")
    policy = [html.unescape(p) for p in re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', text)]
    assert len(policy) == 1 and "script-src 'sha256-" in policy[0] and "'unsafe-inline'" not in policy[0].split("script-src")[1]
    assert len(re.findall(r"<script\b", text)) == 1
    # A script that is not the page's own, added to the page, is refused by its policy.
    planted = tmp_path / "planted.html"
    planted.write_text(text.replace("</body>", "<script>document.documentElement.setAttribute('data-planted', 'ran')</script></body>"),
                       encoding="utf-8")
    console, dom = console_and_dom(planted)
    assert not re.search(r"<html[^>]* data-planted=", dom)
    assert any("Content Security Policy" in line for line in console), console
    assert re.search(r'<html[^>]* data-sortable="\d+"', dom) and re.search(r'<html[^>]* data-folds="\d+"', dom)
