"""`benchsage time`'s answer on the terminal, hyperfine's shape with benchsage's content: a block
per command (its median with the interval, range, CPU times), each command against the fastest,
then whether the order mattered and how much could have been seen.
"""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.text import Text

from benchsage.analyze.timings import Timings, fastest
from benchsage.analyze.treatments import ComparisonRow
from benchsage.analyze.verdict import Analysis
from benchsage.report.quantity import interval, quantity
from benchsage.report.terminal import curves_section, make_styles, print_lines
from benchsage.report.words.answer import claim_lines, failure_lines, how_line, order_lines


def against_fastest(analysis: Analysis, rows: Sequence[Timings]) -> list[ComparisonRow]:
    """The claims that set the fastest command against each other one, in the commands' order."""
    best = fastest(tuple(rows))
    if best is None:
        return []
    out = []
    for r in rows:
        if r.test == best.test or r.median is None:  # a command without a successful trial is said with the failures
            continue
        row = next((c for c in analysis.comparisons or () if {c.a, c.b} == {best.test, r.test}), None)
        if row is not None:
            out.append(row)
    return out


def render_timing(analysis: Analysis, rows: Sequence[Timings], console: Console) -> None:
    """Print the answer of `benchsage time`."""
    st = make_styles(console)
    for i, r in enumerate(rows, 1):
        shown = f"{r.test} ({r.command})" if r.command != r.test else r.test
        console.print(Text(f"Benchmark {i}: {shown}", style=st.title), soft_wrap=True)
        if r.median is None:  # every trial failed: said below, with the reason
            console.print("  no successful trial")
            console.print()
            continue
        arms = (f"    fixed order {quantity(r.median_fixed, r.unit)}, random orders {quantity(r.median_random, r.unit)}"
                if r.median_fixed is not None and r.median_random is not None else "")
        console.print(f"  Time (median [95% CI]):  {interval(r.median, *(r.ci or (None, None)), r.unit)}{arms}", soft_wrap=True)
        cpu = (f"    [User: {quantity(r.user, r.cpu_unit)}, System: {quantity(r.system, r.cpu_unit)}]"
               if r.user is not None and r.system is not None else "")
        console.print(f"  Range (min … max):       {quantity(r.min, r.unit)} … {quantity(r.max, r.unit)}    "
                      f"{r.n} runs{cpu}", soft_wrap=True)
        console.print()
    claims = claim_lines(analysis, against_fastest(analysis, rows))
    if claims:
        console.print(Text("Summary", style=st.title))
        print_lines(console, claims, st, indent=1)
        console.print()
    failures = failure_lines(analysis)
    if failures:
        print_lines(console, failures, st)
        console.print()
    print_lines(console, [*order_lines(analysis), how_line(analysis)], st)
    console.print()
    curves_section(analysis, console)

