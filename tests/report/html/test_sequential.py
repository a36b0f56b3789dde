"""Sequential stopping (report/html/sequential.py): where the experiment stopped, its looks, each
test's decision; and the report of a real sequential experiment."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import markupsafe
import pytest

from benchsage.analyze.verdict import Analysis
from benchsage.report.html import render_report
from benchsage.report.html.numbers import fmt_p
from benchsage.store.table import TrialTable

import browser
from reports import Page, needs_chromium, row_text, section_of


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
    assert text.index('<section id="tables">') < text.index('<section id="sequential">') < text.index('<section id="diagnostics">')
    assert 'href="#sequential"' in text
    section = section_of(text, "sequential")
    shown = Page(section).all_text
    assert "stopped early at 20 runs per arm (at most 50 runs per arm): every test decided" in shown
    assert "group-sequential Mann-Whitney <b>test</b>" in shown and "<b>" not in section
    assert "planned looks (runs per arm)10, 20, 30, 40, 50" in shown and "min effect (%)2.0" in shown
    assert row_text(section, "1") == [["1", "10", "1", "1.50e-05"]] and row_text(section, "2") == [["2", "20", "3", "0.0074"]]
    assert "2 with an order effect, 1 without one worth finding, 9 undecided." in shown
    rows = re.findall(r'<tr[^>]*><td class="name">([^<]*)</td><td class="text">wall_time</td><td class="text(?: yes)?">([^<]*)</td><td[^>]*>([^<]*)</td>', section)
    assert rows[:3] == [(markupsafe.escape(names[2]), "effect", "10"), (markupsafe.escape(names[1]), "effect", "20"),
                        (markupsafe.escape(names[0]), "no-effect", "10")]
    assert len(rows) == 12 and {r[1] for r in rows[3:]} == {"undecided"}


def test_sequential_stopping_not_yet_stopped_and_run_to_the_end(small_analysis: Analysis, small_table: TrialTable) -> None:
    running = Page(sequential_section(_sequential(small_analysis, None, {}), small_table)).all_text
    assert "not stopped: no look has decided every test yet (at most 50 runs per arm)" in running
    ended = Page(sequential_section(_sequential(small_analysis, 50, {}), small_table)).all_text
    assert "ran to the most runs, 50 per arm; 12 tests undecided" in ended


def sequential_section(analysis: Analysis, table: TrialTable) -> str:
    """The report's sequential section, the report rendered with that section alone."""
    return section_of(render_report(analysis, table, sections=("sequential",)), "sequential")


def test_sequential_stopping_on_a_settled_verdict(small_analysis: Analysis, small_table: TrialTable) -> None:
    names = [v.test for v in small_analysis.tests]
    decisions = {(names[1], "wall_time"): ("effect", 20)}
    verdict = {"decide": "verdict", "verdict": "effect", "stopped_because": "verdict-settled",
               "undecided": [{"test": n, "metric": "wall_time"} for n in (names[0], *names[2:])]}
    analysis = _sequential(small_analysis, 20, decisions)
    analysis = dataclasses.replace(analysis, sequential=dataclasses.replace(analysis.sequential, summary={**analysis.sequential.summary, **verdict}))
    shown = Page(sequential_section(analysis, small_table)).all_text
    assert (f"stopped early at 20 runs per arm (at most 50 runs per arm): the verdict is settled: an order effect in {names[1]} "
            f"(11 tests undecided: {names[0]}, {names[2]}, {names[3]}, {names[4]}, {names[5]} and 6 more)") in shown
    assert "stopped once its verdict was settled" in shown and "tests not decided by then are undecided" in shown
    assert "stops whenthe verdict is settled" in shown and "stopped becausethe verdict was settled" in shown
    assert "1 with an order effect, 0 without one worth finding, 11 undecided." in shown
    running = dataclasses.replace(analysis.sequential, summary={**analysis.sequential.summary, "stopped_at_runs": None,
                                                                "stopped_because": None, "verdict": None})
    text = Page(sequential_section(dataclasses.replace(analysis, sequential=running), small_table)).all_text
    assert "not stopped: no look has settled the verdict yet (at most 50 runs per arm)" in text


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
    section = section_of(done.stdout.decode("utf-8"), "sequential")
    looks = doc["sequential"]["looks"]
    assert len(looks) >= 1
    for i, look in enumerate(looks, 1):
        assert row_text(section, str(i)) == [[str(i), str(look["runs"]), str(look["decided"]), fmt_p(look["alpha_spent"])]]
    decided = {(r["test"], r["decided"] or "undecided") for r in doc["tests"] if r["primary"]}
    shown = {(c[0], c[2]) for c in row_text(section, "a") + row_text(section, "b") + row_text(section, "d <b>&</b>")}
    assert shown == decided and len(shown) == 3
