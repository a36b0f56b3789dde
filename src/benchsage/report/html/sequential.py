"""Sequential stopping: where the experiment stopped, its looks, and each test's decision."""

from __future__ import annotations

import math
from typing import Any, Mapping

from benchsage.report.html.material import Material
from benchsage.report.html.numbers import DASH, counted
from benchsage.report.html.rows import TREATMENT_ROWS
from benchsage.report.words.sequential import html_stopping, stopped_because, stopping_note, undecided_names

KEY = "sequential"
TITLE = "Sequential stopping"
HEADING = "Sequential stopping"
OPEN = True  # why the experiment stopped where it did belongs beside its verdict

_SEQUENTIAL_LABELS = {
    "planned_looks": "planned looks (runs per arm)",
    "tests": "tests in the family",
    "min_effect": "min effect (%)",
    "spending": "alpha spending",
    "correction": "correction over tests",
    "decide": "stops when",
    "verdict": "the experiment's verdict",
    "stopped_because": "stopped because",
    "undecided": "undecided tests",
}
_DECIDE = {"each": "every test is decided", "verdict": "the verdict is settled"}
_VERDICT = {"effect": "an order effect in some test", "no-effect": "no order effect worth finding in any test"}


def gist(shown: dict[str, Any]) -> str:
    """'1 test with an order effect, 3 without, 0 undecided'."""
    counts = shown["counts"]
    return f"{counted(counts['effect'], 'test')} with an order effect, {counts['no-effect']:,} without, {shown['undecided']:,} undecided"


def view(material: Material) -> dict[str, Any] | None:
    """None for an experiment of a fixed number of runs."""
    doc = material.doc
    seq = doc.get("sequential")
    if seq is None:
        return None
    order = {"effect": 0, "no-effect": 1}
    decisions = sorted((r for r in doc.get("tests", ()) if r.get("primary") and "decided" in r),
                       key=lambda r: (order.get(r.get("decided") or "", 2), r.get("decided_at_runs") or math.inf, r["test"]))
    counts = {name: sum(1 for r in decisions if r.get("decided") == name) for name in ("effect", "no-effect")}
    undecided = len(decisions) - sum(counts.values())
    effects = [r["test"] for r in decisions if r.get("decided") == "effect"]
    facts = [("stopping", html_stopping(seq, effects, undecided)), ("method", str(seq.get("method") or DASH))]
    facts += [(_SEQUENTIAL_LABELS.get(k, k.replace("_", " ")), _fact(k, v)) for k, v in seq.items()
              if k not in ("looks", "stopped_at_runs", "max_runs", "method") and v is not None and not isinstance(v, Mapping)]
    return {"facts": facts, "looks": list(seq.get("looks") or ()), "decisions": decisions[:TREATMENT_ROWS],
            "total": len(decisions), "counts": counts, "undecided": undecided, "note": stopping_note(seq.get("decide"))}


def _fact(key: str, value: Any) -> str:
    """A fact of the "sequential" object as the report shows it."""
    if key == "decide":
        return _DECIDE.get(value, str(value))
    if key == "verdict":
        return _VERDICT.get(value, str(value))
    if key == "undecided":
        return ", ".join(undecided_names(value)) if value else "none"
    if key == "stopped_because":
        return stopped_because(value)
    if isinstance(value, list):
        return ", ".join(str(x) for x in value)
    return str(value)
