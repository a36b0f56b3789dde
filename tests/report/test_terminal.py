"""render_analysis and make_console: content of the tables and sections, and no ANSI escapes
unless the console is a colour terminal."""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from benchsage.analyze.diagnostics.notes import ArmFirst, InterleavingDetail
from benchsage.analyze.order import analyze_table
from benchsage.analyze.verdict import Carryover, Diagnostics, Interleaving, PositionEffect, Trend
from benchsage.report.terminal import make_console, render_analysis
from benchsage.store.table import MetricInfo, TrialTable

ARTIFACT = Path(os.environ.get("BENCHSAGE_TEST_ARTIFACT") or "/nonexistent")  # the OrderSage artifact data; .ci/run sets it
ANSI = re.compile(r"\x1b\[")


@pytest.fixture(scope="module")
def memcached():
    with open(ARTIFACT / "memcached-table3" / "all_exp_results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    table = TrialTable.from_columns(
        test=[r["exp_command"] for r in rows],
        arm=[r["order_type"] for r in rows],
        value=[float(r["result"]) for r in rows],
        metric=["result"] * len(rows),
        metrics_info={"result": MetricInfo("result", "ops/s", "higher")},
        warnings=("2 trials were excluded: status Failure",),
    )
    return analyze_table(table)


def _diagnostics(significant: bool) -> Diagnostics:
    return Diagnostics(
        interleaving=Interleaving(False, InterleavingDetail((ArmFirst("fixed", 50, "random", 50),)), 50, 50),
        position_effects=(
            PositionEffect("./get_hits_test.sh", "result", 0, 24, 26, 67000.0, 70000.0, -4.5, 0.0019, 0.0058, significant),
            PositionEffect("./cmd_set_test.sh", "result", 0, 25, 25, 50000.0, 50010.0, -0.02, 0.8, 1.0, False),
        ),
        carryover=(
            Carryover("./get_hits_test.sh", "result", "./cmd_set_test.sh", 17, 33, 71000.0, 68900.0, 3.1, 0.01, 0.03, significant),
            Carryover("./get_hits_test.sh", "result", "./cmd_get_test.sh", 16, 34, 68000.0, 69000.0, -1.4, 0.4, 1.0, False),
            Carryover("./cmd_get_test.sh", "result", "./cmd_set_test.sh", 16, 34, 131000.0, 131100.0, -0.1, 0.9, 1.0, False),
        ),
        trends=(
            Trend("./get_hits_test.sh", "result", "fixed", 50, 0.62, 1e-6, 6e-6, significant),
            Trend("./get_hits_test.sh", "result", "random", 50, 0.05, 0.7, 1.0, False),
        ),
    )


def _render(analysis, everything: bool = False, **console_args) -> str:
    console = Console(file=io.StringIO(), width=console_args.pop("width", 160), **console_args)
    render_analysis(analysis, console, everything=everything)
    return console.file.getvalue()


def _rows_after(out: str, heading: str) -> list[list[str]]:
    """The cells of the rows of the table under the line that starts with `heading`."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rule = next(i for i in range(start, len(lines)) if lines[i].startswith("───"))
    end = next((i for i in range(rule, len(lines)) if not lines[i].strip()), len(lines))
    return [line.split() for line in lines[rule + 1 : end]]


@pytest.mark.artifact
@pytest.mark.parametrize("width", [80, 160])
def test_primary_table_holds_paper_table3(memcached, width):
    out = _render(memcached, everything=True, width=width)  # 80 columns: the paper's table one line per test
    assert "Primary metric: result (higher is better); F: the fixed order, R: random orders" in out
    # The everyday table: medians in the metric's unit, the effect as a factor.
    if width >= 160:
        hits = next(row for row in _rows_after(out, "Primary metric") if row[0] == "./get_hits_test.sh")
        assert hits[:6] == ["./get_hits_test.sh", "50/50", "70.2k", "ops/s", "67.7k", "ops/s"]
        assert hits[-3:] == ["2.55e-4", "yes", "3"]
    # The paper's Table 3, with Δ% of the means under its own name.
    paper = _rows_after(out, "Paper-style table")
    assert "Δ% means" in out and "KW p" in out and "eta²" in out
    assert next(row for row in paper if row[0] == "./get_hits_test.sh") == [
        "./get_hits_test.sh", "50/50", "8.51e-5", "2.55e-4", "yes", "0.147", "+5.26", "3"]
    assert next(row for row in paper if row[0] == "./cmd_set_test.sh")[-1] == "2"
    # Table rows keep the analysis' order of tests.
    assert out.index("./cmd_set_test.sh") < out.index("./cmd_get_test.sh") < out.index("./get_hits_test.sh", out.index("Primary metric"))
    assert max(len(line) for line in out.splitlines() if not line.startswith(("Order", "  ./", "Kruskal", "Each", "Paper", "Primary"))) <= width


@pytest.mark.artifact
def test_the_answer_first_then_tables_then_warnings(memcached):
    out = _render(memcached)
    first = out.splitlines()[0]
    assert first == "Order matters: 1 of 3 tests (./get_hits_test.sh) differ between fixed and random order."
    effect = out.splitlines()[1]
    assert effect.startswith("  ./get_hits_test.sh: ") and "× higher in the fixed order than in random orders" in effect
    assert "Kruskal-Wallis, Bonferroni family-wise α = 0.05, corrected α = 0.0167" in out
    assert "Warnings (1):" in out and "2 trials were excluded: status Failure" in out
    assert out.index("Order matters") < out.index("Primary metric") < out.index("Warnings (1):")
    assert "Where the effect comes from" not in out  # no diagnostics in this analysis
    assert "Paper-style" not in out and "Other metrics" not in out


@pytest.mark.artifact
def test_plain_output_has_no_ansi_codes(memcached):
    analysis = dataclasses.replace(memcached, diagnostics=_diagnostics(True))
    assert not ANSI.search(_render(analysis))  # not a terminal
    assert not ANSI.search(_render(analysis, force_terminal=True, no_color=True))
    assert not ANSI.search(_render(analysis, force_terminal=True, color_system=None))
    # The check above can fail: a colour terminal does get styles.
    assert ANSI.search(_render(analysis, force_terminal=True, color_system="standard"))


@pytest.mark.artifact
def test_make_console_respects_no_color(monkeypatch, memcached):
    monkeypatch.setenv("NO_COLOR", "1")
    console = make_console(force_terminal=True)
    console.file = io.StringIO()
    render_analysis(memcached, console)
    assert "Order matters" in console.file.getvalue()
    assert not ANSI.search(console.file.getvalue())
    # Even renderers that ask for bold get plain text from this console.
    console.file = io.StringIO()
    console.print("[bold]x[/bold]")
    assert console.file.getvalue() == "x\n"
    monkeypatch.delenv("NO_COLOR")
    coloured = make_console(force_terminal=True)
    assert not coloured.no_color


@pytest.mark.artifact
def test_make_console_is_plain_when_not_a_tty(capsys, memcached):
    console = make_console()
    assert not console.is_terminal
    render_analysis(memcached, console)
    out = capsys.readouterr().out
    assert "./get_hits_test.sh" in out and not ANSI.search(out)
    err_console = make_console(stderr=True)
    err_console.print("to stderr")
    assert capsys.readouterr().err == "to stderr\n"


@pytest.mark.artifact
def test_where_an_effect_comes_from_is_said_with_it(memcached):
    out = _render(dataclasses.replace(memcached, diagnostics=_diagnostics(True)))
    effect = next(line for line in out.splitlines() if line.startswith("  ./get_hits_test.sh: "))
    assert "comes from: first in its run, right after the reset: 1.05× lower" in effect
    assert "right after ./cmd_set_test.sh: 1.03× higher" in effect
    assert "drifts over time in the fixed arm (Spearman ρ 0.62)" in effect
    assert "Where the effect comes from" not in out  # the tables of every diagnostic: --all


@pytest.mark.artifact
def test_diagnostics_section_with_significant_findings(memcached):
    out = _render(dataclasses.replace(memcached, diagnostics=_diagnostics(True)), everything=True)
    section = out[out.index("Where the effect comes from"):]
    assert "NOT interleaved: all 50 fixed runs precede all 50 random runs" in section
    position_row = next(line for line in section.splitlines() if line.startswith("./get_hits_test.sh") and "24/26" in line).split()
    assert position_row == ["./get_hits_test.sh", "result", "0", "24/26", "-4.50", "0.0058"]
    carry_row = next(line for line in section.splitlines() if "./cmd_set_test.sh" in line and "17/33" in line).split()
    assert carry_row == ["./get_hits_test.sh", "result", "./cmd_set_test.sh", "17/33", "+3.10", "0.03"]
    trend_row = next(line for line in section.splitlines() if line.startswith("./get_hits_test.sh") and " fixed " in line).split()
    assert trend_row == ["./get_hits_test.sh", "result", "fixed", "50", "0.62", "6.00e-6"]
    assert "none significant" not in section
    assert section.index("Where the effect comes from") < section.index("Warnings (1):")


@pytest.mark.artifact
def test_binned_positions_show_as_a_range(memcached):
    d = _diagnostics(True)
    binned = dataclasses.replace(d.position_effects[0], position=10, position_last=19)
    out = _render(dataclasses.replace(memcached, diagnostics=dataclasses.replace(d, position_effects=(binned,))), everything=True)
    assert "at positions 11-20 of its run: 1.05× lower" in out
    row = next(line for line in out.splitlines() if line.startswith("./get_hits_test.sh") and "24/26" in line).split()
    assert row[2] == "10-19"


@pytest.mark.artifact
def test_diagnostics_section_without_significant_findings(memcached):
    out = _render(dataclasses.replace(memcached, diagnostics=_diagnostics(False)), everything=True)
    assert "Position effects: none significant (2 examined)." in out
    assert "Carry-over: none significant (3 examined)." in out
    assert "Trends over time: none significant (2 examined)." in out


def test_other_metrics_table_and_nulls():
    rng = np.random.default_rng(3)
    n = 20
    table = TrialTable.from_columns(
        test=["a"] * (2 * n) + ["a"] * (2 * n) + ["b"] * 4,
        metric=["result"] * (2 * n) + ["max_rss"] * (2 * n) + ["result"] * 4,
        arm=(["fixed"] * n + ["random"] * n) * 2 + ["fixed", "random"] * 2,
        value=np.r_[rng.normal(10, 1, 2 * n), rng.normal(500, 5, 2 * n), [1.0, 2.0, 3.0, 4.0]],
        primary=[True] * (2 * n) + [False] * (2 * n) + [True] * 4,
    )
    out = _render(analyze_table(table), everything=True)
    assert "Other metrics (corrected within their own family; they do not decide the verdict)" in out
    other = next(line for line in out.splitlines() if "max_rss" in line).split()
    assert other[:3] == ["a", "max_rss", "20/20"] and other[4] == "KiB"  # each value with its unit
    b_row = next(row for row in _rows_after(out, "Primary metric") if row[0] == "b")
    assert b_row == ["b", "2/2", "2.00", "3.00", "1.50×", "lower", "–", "–", "–"]
    paper_b = next(row for row in _rows_after(out, "Paper-style") if row[0] == "b")
    assert paper_b == ["b", "2/2", "–", "–", "–", "–", "-50.00", "–"]
    assert "1 test could not have shown one: at 2 values per arm Kruskal-Wallis gives no p-value (it needs 5)" in out
    plain = _render(analyze_table(table))
    assert "Other metrics (" not in plain and "1 row of other metrics" in plain


def test_strings_from_data_are_not_markup():
    names = ["[bold red]x[/bold red]", ":thumbs_up: test"]
    table = TrialTable.from_columns(test=names * 20, arm=(["fixed"] * 2 + ["random"] * 2) * 10, value=np.arange(40.0))
    out = _render(analyze_table(table), force_terminal=True, color_system="standard")
    assert "[bold red]x[/bold red]" in out and ":thumbs_up: test" in out


@pytest.mark.parametrize("width", [80, 100, 200])
def test_numbers_are_never_cut_and_names_fold_whole(width):
    """On a narrow terminal long test names fold over lines; every number stays whole."""
    long = "./bench/run--with-a-rather-long-option=value--and-another-one"
    names = [long + "-a", long + "-b"]
    rng = np.random.default_rng(4)
    table = TrialTable.from_columns(
        test=names * 40, arm=(["fixed"] * 2 + ["random"] * 2) * 20, value=np.round(rng.normal(70000, 3000, 80), 1)
    )
    analysis = analyze_table(table)
    out = _render(analysis, everything=True, width=width)
    lines = out.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("Paper-style")))
    body = lines[next(i for i in range(start, len(lines)) if lines[i].startswith("───")) + 1 :]
    body = body[: body.index(next(line for line in body if line.startswith("Each arm")))]
    assert max(len(line) for line in body) <= width
    for v in analysis.tests:
        assert f"{v.n_fixed}/{v.n_random}" in out
        assert f"{v.kw_p:.3g}" in out
        assert f"{v.delta_pct:+.2f}" in out
    # The first column, read back across the folded lines, holds both names whole.
    assert "".join(line.split()[0] for line in body) == "".join(names)
    if width >= 160:
        assert len(body) == 2  # room enough: one line per test


# -- fleets ---------------------------------------------------------------------------------------


def _fleet_analysis(tmp_path: Path, **snapshots):
    import sys

    from benchsage.api import analyze_sources

    sys.path.insert(0, str(Path(__file__).parents[1] / "analyze"))
    from fleet_data import write_fleet

    write_fleet(tmp_path, {"node1": 1.0, "node2": 1.0, "node3": 1.6}, effect=0.15, seed=1, snapshots=snapshots)
    return analyze_sources([str(tmp_path)], format="benchsage")[0]


def test_a_fleet_on_the_terminal(tmp_path: Path) -> None:
    analysis = _fleet_analysis(tmp_path, node3={"kernel": "6.1.0-21-amd64", "files": {"/srv/exp/bin/app": "9" * 64}})
    text = _render(analysis, everything=True, width=120)
    assert "van Elteren's test stratified by 3 workers, Bonferroni family-wise α = 0.05" in text
    assert "Workers: 3; the tables above are stratified by worker" in text
    assert "vE p" in text and "KW p" not in text
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["worker", "order", "matters"])
    assert [line.split()[0] for line in lines[header + 2 : header + 5]] == ["node1", "node2", "node3"]
    assert "Identity: the workers differ in 3 respects:" in text  # bin/app, python3 (missing on node3), kernel
    assert "sha256:111111111111 on node1, node2; sha256:999999999999 on node3" in text
    assert "6.1.0-18-amd64 on node1, node2; 6.1.0-21-amd64 on node3" in text
    assert "Results by worker (Kruskal-Wallis across workers, corrected over tests): 3 of 3 tests differ." in text
    row = next(line for line in lines if line.startswith("b ") and "node3=" in line)
    assert row.split()[-1] == "node3"
    assert not ANSI.search(text)


@pytest.mark.artifact
def test_an_identical_fleet_and_one_worker_say_so_or_nothing(tmp_path: Path, memcached) -> None:
    text = _render(_fleet_analysis(tmp_path), width=120)
    assert "Identity: the 3 workers ran the same software on the same kind of machine" in text
    single = _render(memcached, width=120)
    assert "Workers:" not in single and "Fleet" not in single and "Identity" not in single


# -- harness metrics of measurement control --------------------------------------------------------


def _measured(tmp_path: Path, **kw):
    import sys

    from benchsage.api import analyze_sources

    sys.path.insert(0, str(Path(__file__).parents[1] / "analyze"))
    from measured_data import write_measured

    return analyze_sources([str(write_measured(tmp_path, **kw))], format="benchsage")[0]


def _other_lines(out: str) -> list[str]:
    """The lines of the table of other metrics: heading, rule, rows."""
    lines = out.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("Other metrics"))) + 1
    return lines[start : lines.index("", start)]


def _other_rows(out: str) -> dict[tuple[str, str], list[str]]:
    return {(cells[0], cells[1]): cells[2:] for cells in (line.split() for line in _other_lines(out)[2:])}


@pytest.mark.parametrize("width", [80, 160])
def test_peak_memory_cpu_time_and_energy_rows_with_their_units(tmp_path: Path, width: int) -> None:
    analysis = _measured(tmp_path)
    out = _render(analysis, everything=True, width=width)
    rows = _other_rows(out)
    units = {"peak_memory": ("B", "KiB", "MiB", "GiB"), "cpu_time": ("ns", "µs", "ms", "s"), "energy": ("nJ", "µJ", "mJ", "J", "kJ")}
    for test in ("server", "tiny", "big"):
        for metric, shown in units.items():
            cells = rows[(test, metric)]
            assert cells[0] == "6/6" and cells[2] in shown and cells[4] in shown  # each median with its readable unit
        assert rows[(test, "max_rss")][2] in ("KiB", "MiB")
    assert _other_lines(out)[0].split()[:4] == ["test", "metric", "n", "F/R"]
    assert max(len(line) for line in _other_lines(out)) <= width
    # The leftovers and the max_rss floor are in the warnings, once per test.
    warnings = out[out.index("Warnings ("):]
    assert warnings.count("server: 6 of 12 trials left processes running (12 in all)") == 1
    assert warnings.count("(max_rss): median") == 2 and "tiny (max_rss): median" in warnings and "big (max_rss)" not in warnings
    # Without --all: each kind of warning once, the notes on rows not shown left out.
    plain = _render(analysis, width=width)
    assert plain.count("left processes running") == 1 and "(max_rss): median" not in plain
    assert "Also measured and checked:" in plain and "add --all" in plain


def test_the_secondary_table_without_the_optional_metrics(tmp_path: Path) -> None:
    """A host without cgroups or RAPL (or a journal written before them): four harness rows per test."""
    out = _render(_measured(tmp_path, measured=()), everything=True, width=120)
    rows = _other_rows(out)
    assert {metric for _, metric in rows} == {"user_time", "sys_time", "max_rss"}
    assert "peak_memory would show it (a cgroup per trial: see `benchsage env`)" in out
