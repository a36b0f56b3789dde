"""Sequential stopping: where the experiment stopped, its looks, and each test's decision."""

from __future__ import annotations

import math
from typing import Any, Mapping

from benchsage.report.html.material import Material
from benchsage.report.html.numbers import DASH
from benchsage.report.html.rows import TREATMENT_ROWS

KEY = "sequential"
TITLE = "Sequential stopping"

_SEQUENTIAL_LABELS = {
    "planned_looks": "planned looks (runs per arm)",
    "tests": "tests in the family",
    "min_effect": "min effect (%)",
    "spending": "alpha spending",
    "correction": "correction over tests",
}


def _stopping_text(stopped: int | None, most: int | None, undecided: int) -> str:
    """Where the experiment stopped, in words: early (every test decided), at the most runs, or not yet."""
    at_most = f" (at most {most:,} runs per arm)" if most is not None else ""
    if stopped is None:
        return f"not stopped: no look has decided every test yet{at_most}"
    if most is not None and stopped >= most:
        left = f"; {undecided:,} test{'s' if undecided != 1 else ''} undecided" if undecided else ""
        return f"ran to the most runs, {most:,} per arm{left}"
    return f"stopped early at {stopped:,} runs per arm{at_most}: every test decided"


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
    facts = [("stopping", _stopping_text(seq.get("stopped_at_runs"), seq.get("max_runs"), undecided)),
             ("method", str(seq.get("method") or DASH))]
    facts += [(_SEQUENTIAL_LABELS.get(k, k.replace("_", " ")), ", ".join(str(x) for x in v) if isinstance(v, list) else str(v))
              for k, v in seq.items()
              if k not in ("looks", "stopped_at_runs", "max_runs", "method") and v is not None and not isinstance(v, Mapping)]
    return {"facts": facts, "looks": list(seq.get("looks") or ()), "decisions": decisions[:TREATMENT_ROWS],
            "total": len(decisions), "counts": counts, "undecided": undecided}
