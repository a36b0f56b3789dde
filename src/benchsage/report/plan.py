"""Print a plan (from design.estimate.describe_plan) for `benchsage plan`."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from benchsage.execute.progress import format_duration


def render_plan(doc: dict[str, Any], console: Console) -> None:
    seed_note = "" if doc["seed_recorded"] else " (drawn now; the spec names none, so `run` will draw another and record it)"
    console.print(f"Experiment {doc['name']!r}: {len(doc['tests'])} tests, {doc['runs_per_arm']} runs per arm, "
                  f"{doc['total_runs']} runs, {doc['total_trials']} trials; seed {doc['seed']}{seed_note}", markup=False, highlight=False)
    console.print(f"Reset before every run: {doc['reset'] or '(none: runs will not start from a clean state)'}", markup=False, highlight=False)
    table = Table(show_edge=False, header_style="bold" if console.is_terminal else "")
    table.add_column("run", justify="right")
    table.add_column("arm")
    table.add_column("order")
    for r in doc["runs"]:
        table.add_row(str(r["run"]), r["arm"], " → ".join(r["order"]))
    console.print(table)
    est = doc["estimate"]
    parts = []
    if "expected_seconds" in est:
        parts.append(f"about {format_duration(est['expected_seconds'])} (median durations measured in {est['from']})")
    if "upper_bound_seconds" in est:
        parts.append(f"at most {format_duration(est['upper_bound_seconds'])} (every trial and reset at its timeout)")
    if not parts:
        parts.append("unknown: no earlier experiment of this spec in results/, and not every test has a timeout to bound it")
    console.print("Duration: " + "; ".join(parts), markup=False, highlight=False)
