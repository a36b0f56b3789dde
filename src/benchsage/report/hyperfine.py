"""hyperfine's export formats of an experiment, so that scripts written for hyperfine read
benchsage's runs: its JSON ("results", in seconds, plus a "benchsage" object with what hyperfine
does not know: each test's arms, the order verdict, the claims, the runs' orders), its Markdown
table and its CSV, in the shapes hyperfine 1.15 writes (its real output: tests/report/data/hyperfine/).
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from benchsage.analyze.timings import WALL, Timings, per_test_timings
from benchsage.analyze.verdict import Analysis, TestVerdict
from benchsage.parsers.units import convert
from benchsage.report.json import clean, failed_json
from benchsage.report.words import verdict_sentence
from benchsage.store.table import TrialTable

if TYPE_CHECKING:
    from benchsage.analyze.treatments import ComparisonRow

_STATISTICS = ("mean", "stddev", "median", "user", "system", "min", "max")  # hyperfine's order, in every format
NULL = "–"  # a cell the data cannot fill (a test without a successful trial)


def hyperfine_json(analysis: Analysis, table: TrialTable) -> dict[str, Any]:
    """hyperfine's JSON: {"results": [...], "benchsage": {...}}.

    One result per test (per expanded test of a sweep), in the tests' declared order: its
    command; mean, stddev (sample; null with one value), median, min and max of its wall times,
    user and system the means of its CPU times, all in seconds; times, every successful trial's
    wall time of both arms in the order they ran, and exit_codes, one 0 for each; parameters,
    a swept test's levels as strings, left out for a test that sweeps nothing, as hyperfine
    leaves it out. "benchsage" holds the arms of each test, the order verdict, the declared
    comparisons, the runs' orders, the seed and the experiment's directory."""
    timings = [_in_seconds(t) for t in per_test_timings(table)]
    return {"results": [_result(t) for t in timings], "benchsage": _benchsage(analysis, table, timings)}


def hyperfine_json_text(analysis: Analysis, table: TrialTable) -> str:
    """hyperfine_json as hyperfine writes it: indented by two spaces, UTF-8 text, a final newline."""
    return json.dumps(hyperfine_json(analysis, table), indent=2, ensure_ascii=False) + "\n"


def hyperfine_markdown(analysis: Analysis, table: TrialTable) -> str:
    """hyperfine's Markdown table (Command | Mean | Min | Max | Relative, in the unit hyperfine
    picks from the first command's mean), Relative being each test's median over the fastest
    test's median with the interval of the ratio where a declared comparison gives one; then a
    line on what Relative is and one with the order verdict."""
    timings = [_in_seconds(t) for t in per_test_timings(table)]
    scale, unit = _table_unit(timings)
    relative, level = _relative(analysis, timings)
    lines = [
        f"| Command | Mean [{unit}] | Min [{unit}] | Max [{unit}] | Relative |",
        "|:---|---:|---:|---:|---:|",
    ]
    for t, rel in zip(timings, relative):
        mean = _fixed(t.mean, scale) + (f" ± {_fixed(t.stddev, scale)}" if t.stddev is not None else "")
        command = "`" + t.command.replace("|", "\\|") + "`"
        lines.append(f"| {command} | {mean} | {_fixed(t.min, scale)} | {_fixed(t.max, scale)} | {rel} |")
    interval = f", [{level * 100:.4g}% interval] where the two were compared" if level is not None else ""
    return "\n".join([
        *lines,
        "",
        f"Relative: each median over the fastest's{interval} (hyperfine divides the means).",
        f"Order: {verdict_sentence(analysis)}",
        "",
    ])


def hyperfine_csv(analysis: Analysis, table: TrialTable) -> str:
    """hyperfine's CSV: command, mean, stddev, median, user, system, min, max (seconds; a
    stddev of one value is 0, as hyperfine writes it), then parameter_NAME for each sweep
    (empty for a test that does not sweep NAME). Numbers as hyperfine prints them: the shortest
    text that reads back as the same double, never in exponent notation ("0", "0.00004")."""
    timings = [_in_seconds(t) for t in per_test_timings(table)]
    names = sorted({name for t in timings for name in t.parameters})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["command", *_STATISTICS, *(f"parameter_{name}" for name in names)])
    for t in timings:
        values = [getattr(t, s) for s in _STATISTICS]
        if t.stddev is None and t.mean is not None:
            values[_STATISTICS.index("stddev")] = 0.0  # one value: hyperfine writes 0 where its JSON has null
        writer.writerow([t.command, *(_number(v) for v in values), *(t.parameters.get(name, "") for name in names)])
    return out.getvalue()


def _in_seconds(t: Timings) -> Timings:
    """t with its numbers in seconds (hyperfine's unit); a table without units holds seconds."""
    wall = _to_seconds(t.unit)
    cpu = _to_seconds(t.cpu_unit)
    if wall == 1.0 and cpu == 1.0:
        return t
    walls = {s: None if getattr(t, s) is None else getattr(t, s) * wall for s in ("mean", "stddev", "median", "min", "max")}
    cpus = {s: None if getattr(t, s) is None else getattr(t, s) * cpu for s in ("user", "system")}
    return replace(t, times=tuple(x * wall for x in t.times), unit="s", cpu_unit="s", **walls, **cpus)


def _to_seconds(unit: str) -> float:
    return convert(1, unit, "s") if unit and unit != "s" else 1.0


def _result(t: Timings) -> dict[str, Any]:
    out: dict[str, Any] = {"command": t.command}
    out.update({s: getattr(t, s) for s in _STATISTICS})
    out["times"] = list(t.times)
    out["exit_codes"] = [0] * len(t.times)  # the times are those of trials that succeeded
    if t.parameters:
        out["parameters"] = dict(t.parameters)
    return out


def _benchsage(analysis: Analysis, table: TrialTable, timings: Sequence[Timings]) -> dict[str, Any]:
    prov = table.provenance
    rows = {v.test: v for v in analysis.tests if v.metric == WALL}
    return clean({
        "version": analysis.tool_version,
        "directory": prov.get("directory"),
        "seed": prov.get("seed"),
        "runs_per_arm": prov.get("runs_per_arm"),
        "verdict": analysis.verdict,
        "order_matters": analysis.order_matters,
        "alpha": analysis.alpha,
        "correction": analysis.correction,
        "alpha_corrected": analysis.alpha_corrected,
        "ci_level": analysis.ci_level,
        "arms": [_arms(t, rows.get(t.test)) for t in timings],
        "comparisons": [_comparison(row) for row in analysis.comparisons or ()],
        "runs": [{"run": r["run"], "arm": r["arm"], "order": list(r["order"])} for r in prov.get("plan") or ()],
        "failed_tests": [failed_json(f) for f in analysis.failed_tests],
    })


def _arms(t: Timings, v: TestVerdict | None) -> dict[str, Any]:
    """A test's arms as the order analysis saw them (wall time, seconds), and its verdict."""
    factor = _to_seconds(v.unit) if v is not None else 1.0

    def arm(n: int, median: float | None, ci: tuple[float, float] | None) -> dict[str, Any]:
        return {"n": n, "median": None if median is None else median * factor,
                "ci": None if ci is None else [ci[0] * factor, ci[1] * factor]}

    out: dict[str, Any] = {"test": t.test, "command": t.command}
    if v is None:
        return {**out, "fixed": arm(0, None, None), "random": arm(0, None, None), "kw_p": None, "p_adjusted": None,
                "significant": None, "ci_case": None, "min_detectable_pct": None}
    return {**out, "fixed": arm(v.n_fixed, v.median_fixed, v.ci_fixed), "random": arm(v.n_random, v.median_random, v.ci_random),
            "kw_p": v.kw_p, "p_adjusted": v.p_adjusted, "significant": v.significant, "ci_case": v.ci_case,
            "min_detectable_pct": v.min_detectable_pct}


def _comparison(row: ComparisonRow) -> dict[str, Any]:
    """A declared claim: the ratio of medians a/b with its interval, p, and which is better."""
    c = row.overall
    return {"a": row.a, "b": row.b, "metric": row.metric, "ratio": c.ratio, "ci": None if c.ci is None else list(c.ci),
            "p": c.p, "p_adjusted": row.p_adjusted, "better": row.better, "method": c.method, "holds_in": dict(row.holds_in)}


def _table_unit(timings: Sequence[Timings]) -> tuple[float, str]:
    """hyperfine's unit of a table (its scale, its name): the first mean's, milliseconds below a
    second (hyperfine 1.15 knows no smaller unit)."""
    first = next((t.mean for t in timings if t.mean is not None), None)
    return (1e3, "ms") if first is not None and first < 1.0 else (1.0, "s")


def _fixed(x: float | None, scale: float) -> str:
    """hyperfine's number in a table: one decimal in milliseconds, three in seconds."""
    if x is None:
        return NULL
    return f"{x * scale:.1f}" if scale != 1.0 else f"{x:.3f}"


def _relative(analysis: Analysis, timings: Sequence[Timings]) -> tuple[list[str], float | None]:
    """Each test's Relative cell, and the level of the intervals shown (None: none shown)."""
    medians = [t.median for t in timings]
    known = [i for i, m in enumerate(medians) if m is not None and m > 0]
    if not known:
        return [NULL] * len(timings), None
    fastest = min(known, key=lambda i: medians[i])  # type: ignore[arg-type, return-value]
    cells, level = [], None
    for i, t in enumerate(timings):
        if i == fastest:
            cells.append("1.00")
            continue
        if i not in known:
            cells.append(NULL)
            continue
        ratio, ci, row_level = _ratio_to(analysis, t.test, timings[fastest].test)
        ratio = ratio if ratio is not None else medians[i] / medians[fastest]  # type: ignore[operator]
        text = f"{ratio:.2f}"
        if ci is not None and all(math.isfinite(x) for x in ci):
            text += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
            level = row_level
        cells.append(text)
    return cells, level


def _ratio_to(analysis: Analysis, test: str, fastest: str) -> tuple[float | None, tuple[float, float] | None, float | None]:
    """test's median over fastest's, with its interval and level, from a declared comparison of
    the two on wall time (either way round); (None, None, None) when there is none."""
    for row in analysis.comparisons or ():
        if row.metric != WALL or {row.a, row.b} != {test, fastest} or row.ratio is None or row.ratio <= 0:
            continue
        c = row.overall
        if row.a == test:
            return c.ratio, c.ci, c.level
        flipped = None if c.ci is None or c.ci[0] <= 0 else (1.0 / c.ci[1], 1.0 / c.ci[0])
        return 1.0 / c.ratio, flipped, c.level  # type: ignore[operator]
    return None, None, None


def _number(x: float | None) -> str:
    """A number as hyperfine's CSV prints it (Rust's Display of an f64): the shortest digits that
    read back as the same double, positional, no trailing ".0"; empty when unknown."""
    if x is None or not math.isfinite(x):
        return ""
    return np.format_float_positional(x, unique=True, trim="-")
