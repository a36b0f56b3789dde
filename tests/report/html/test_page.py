"""The page as a whole (report/html/page.py): its sections in order and linked from the header,
one self-contained file that needs no network, runs only its own sorter and escapes every string
that came from data; written atomically and the same every time."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
import re
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.verdict import Analysis
from benchsage.errors import UsageError
from benchsage.report.html import jinja, render_report, write_report
from benchsage.store.table import TrialTable

from reports import (
    AMP_SCRIPT_TEST, BOLD_TEST, CLAIM_A, Page, SCRIPT_METRIC, SCRIPT_TEST, SPEC_TEXT, STDOUT, XSS_TEST,
    assert_nothing_injected, section_of,
)

# The answer first: the verdict, the claims, the tests of the primary metrics and the treatments
# the spec varied on purpose; then where an effect comes from, the figures, the detail, the
# warnings and the provenance (tests/report/html/test_folding.py: which of them fold).
SECTIONS = ("verdict", "tables", "diagnostics", "figures", "detail", "warnings", "provenance")
TREATMENT_SECTIONS = ("verdict", "comparisons", "tables", "factorial", "contexts", "observer", "diagnostics", "figures",
                      "detail", "warnings", "provenance")


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


def test_templates_autoescape_every_place_a_test_name_is_printed(amp_report: Path) -> None:
    text = amp_report.read_text(encoding="utf-8")
    escaped = "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt; &amp; &lt;b&gt;co&lt;/b&gt; &amp;amp;"
    # Tests table, detail heading, position, carry-over (as test and as predecessor) and trend rows.
    assert text.count(escaped) >= 6
    assert "</script> &" not in text and "& <b>" not in text
    page = Page(text)
    assert_nothing_injected(page)
    assert AMP_SCRIPT_TEST in page.all_text  # decoded, the name reads exactly as written


def test_treatment_sections_escape_test_names(treated: tuple[Analysis, TrialTable, Path]) -> None:
    text = treated[2].read_text(encoding="utf-8")
    assert "<i>fast</i>" not in text
    page = Page(text)
    assert_nothing_injected(page)
    for name in ("comparisons", "contexts", "observer", "factorial"):
        assert CLAIM_A in Page(section_of(text, name)).all_text, name


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


def test_templates_ship_with_the_package() -> None:
    import fnmatch
    import tomllib

    root = Path(__file__).resolve().parents[3]
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


def test_sections_renders_those_sections_alone(tiny: tuple[Analysis, TrialTable]) -> None:
    whole = render_report(*tiny)
    part = render_report(*tiny, sections=("tables",))
    assert re.findall(r'<section id="([^"]+)"', part) == ["tables"]
    assert len(re.findall(r'<section id="([^"]+)"', whole)) > 3
    assert section_of(part, "tables") == section_of(whole, "tables")


def test_write_report_replaces_atomically_and_reports_bad_paths(tiny: tuple[Analysis, TrialTable], tmp_path: Path) -> None:
    analysis, table = tiny
    dest = tmp_path / "r.html"
    dest.write_text("old")
    write_report(analysis, table, dest)
    assert dest.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]
    with pytest.raises(UsageError, match="cannot write the report to .*missing"):
        write_report(analysis, table, tmp_path / "missing" / "r.html")


def test_write_report_never_writes_through_a_file_planted_where_its_temporary_file_goes(
        tiny: tuple[Analysis, TrialTable], tmp_path: Path) -> None:
    analysis, table = tiny
    victim = tmp_path / "victim"
    victim.write_text("precious")
    # Where a report was written before: a name anybody who can write the folder could guess.
    (tmp_path / f".r.html.{os.getpid()}.tmp").symlink_to(victim)
    dest = tmp_path / "r.html"
    write_report(analysis, table, dest)
    assert victim.read_text() == "precious"
    assert not dest.is_symlink() and dest.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert oct(dest.stat().st_mode & 0o777) == oct(0o666 & ~_umask_now())
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".r.html.{os.getpid()}.tmp", "r.html", "victim"]


def _umask_now() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_a_device_or_a_pipe_is_written_into_never_replaced(tiny: tuple[Analysis, TrialTable], tmp_path: Path) -> None:
    import stat
    import threading

    analysis, table = tiny
    # `-o /dev/stdout` or a FIFO: the page goes through it, and it stays what it was.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_report(analysis, table, fifo)
    reader.join(30)
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and got[0].startswith(b"<!DOCTYPE html>")
    if os.geteuid() == 0:  # a /dev/null of its own: still the device after the report went into it
        null = tmp_path / "null"
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        write_report(analysis, table, null)
        assert stat.S_ISCHR(null.lstat().st_mode) and null.read_bytes() == b""
    # A link to a file keeps pointing at it; a folder is refused in one line.
    (tmp_path / "kept.html").write_text("old")
    (tmp_path / "link.html").symlink_to(tmp_path / "kept.html")
    write_report(analysis, table, tmp_path / "link.html")
    assert (tmp_path / "link.html").is_symlink() and (tmp_path / "kept.html").read_text(encoding="utf-8").startswith("<!DOCTYPE")
    (tmp_path / "folder").mkdir()
    with pytest.raises(UsageError, match="cannot write the report to .*folder: it is a directory"):
        write_report(analysis, table, tmp_path / "folder")
