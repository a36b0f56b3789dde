"""The declared claims "a is better than b": who wins, where it holds, and where it flips."""

from __future__ import annotations

from typing import Any, Mapping

from benchsage.report.html.material import Material
from benchsage.report.html.numbers import DASH, counted
from benchsage.report.words import comparison_sentence
from benchsage.report.words.comparisons import flip_text

KEY = "comparisons"
TITLE = "Comparisons"
HEADING = "Comparisons"
OPEN = True  # the questions the experiment declared: their answers come first


def view(material: Material) -> dict[str, Any] | None:
    """Each row of the JSON with its winner named, and the analysis's sentence for it (the
    headline the terminal prints too); None without claims."""
    analysis, doc = material.analysis, material.doc
    rows = doc.get("comparisons")
    if rows is None:
        return None
    out = []
    # The JSON rows are the analysis's rows, in order: each has its sentence.
    for c, claim in zip(rows, analysis.comparisons or ()):
        contexts = c.get("contexts")
        winner = {"a": c["a"], "b": c["b"]}.get(c.get("better") or "")
        out.append({
            "row": c,
            "sentence": comparison_sentence(claim),
            "winner": winner or ("undecided" if c.get("p") is not None else DASH),
            "contexts": _strata_won(c, contexts),
            "flip": "; ".join(flip_text(claim, claim.contexts)) if claim.contexts is not None else "",
            "flips": None if not contexts else contexts.get("flips"),
            "holds": [(c.get("holds_in") or {}).get(arm) for arm in ("fixed", "random")],
            "workers": _strata_won(c, c.get("workers")),
            "worker_flips": bool((c.get("workers") or {}).get("flips")),
            "cells": _strata_won(c, c.get("factor_cells")),
            "cell_flips": bool((c.get("factor_cells") or {}).get("flips")),
        })
    return {"rows": out, "reasons": any(c.get("p") is None for c in rows), "fleet": any(c.get("workers") for c in rows),
            "factors": any(c.get("factor_cells") for c in rows)}


def gist(shown: dict[str, Any]) -> str:
    """'2 claims: 1 decided, 1 undecided'."""
    rows = shown["rows"]
    decided = sum(1 for c in rows if c["row"].get("better"))
    flips = sum(1 for c in rows if c["flips"] or c["worker_flips"] or c["cell_flips"])
    text = f"{counted(len(rows), 'claim')}: {decided:,} decided, {len(rows) - decided:,} undecided"
    return text + (f"; the winner flips in {flips:,}" if flips else "")


def _strata_won(row: Mapping[str, Any], strata: Mapping[str, Any] | None) -> str:
    """Where each test of a claim wins (contexts, a fleet's workers): "o3 2 · o2 1 · undecided 0 of 3"."""
    if not strata:
        return DASH
    return f"{row['a']} {strata['a_better']:,} · {row['b']} {strata['b_better']:,} · undecided {strata['undecided']:,} of {strata['n']:,}"
