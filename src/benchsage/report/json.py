"""The analysis JSON: what `benchsage analyze --json` prints and the notebook API's to_json()
returns, encoded from an Analysis.

Numbers are plain JSON numbers (no NaN, no Infinity: they become null; numpy scalars become
Python numbers), a field that cannot be computed is null, and every sentence in it (notes,
warnings, details, methods) comes from report/words/. The diagnostic rows of a paper-scale
analysis (tens of thousands) are encoded a column at a time, without a dict per row.
"""

from __future__ import annotations

import json
import math
import secrets
from dataclasses import replace
from typing import Any

from benchsage.analyze.identity import Identity
from benchsage.analyze.verdict import Analysis, CellArms, FailedTest, FleetRow, Rows, TestVerdict, WorkerVerdicts
from benchsage.report.curves_json import curves_json
from benchsage.report.treatments_json import TREATMENT_JSON
from benchsage.report.words import said, say


def analysis_json(analysis: Analysis) -> dict[str, Any]:
    """The analysis JSON as a dict: plain numbers, null for what cannot be computed."""
    out: dict[str, Any] = {
        "tool": {"name": "benchsage", "version": analysis.tool_version},
        "alpha": analysis.alpha,
        "correction": analysis.correction,
        "alpha_corrected": analysis.alpha_corrected,
        "ci_method": analysis.ci_method,
        "ci_level": analysis.ci_level,
        "ci_case_rule": analysis.ci_case_rule,
        "order_matters": analysis.order_matters,
        "verdict": analysis.verdict,
        "failed_tests": [failed_json(f) for f in analysis.failed_tests],
        "sources": list(analysis.sources),
        "excluded_trials": analysis.excluded,
        "tests": [verdict_json(v) for v in analysis.tests],
        "warnings": said(analysis.warnings, once=True),
    }
    if analysis.combined is not None:
        c = analysis.combined
        out["combined"] = {"workers": c.workers, "cells": c.cells, "method": c.method}
    if analysis.fleet:
        out["workers"] = [worker_json(w) for w in analysis.workers]
    for name in TREATMENT_JSON:
        rows = getattr(analysis, name)
        if rows is not None:
            out[name] = [TREATMENT_JSON[name](row) for row in rows]
    if analysis.curves is not None:
        out.update(curves_json(analysis.curves))
    if analysis.sequential is not None:
        out["sequential"] = dict(analysis.sequential.summary)
        for row in out["tests"]:
            row.update(analysis.sequential.row(row["test"], row["metric"]))
    if analysis.diagnostics is not None:
        d = analysis.diagnostics
        out["diagnostics"] = {
            "interleaving": said_record(d.interleaving) if d.interleaving is not None else None,
            "position_effects": [record(x) for x in d.position_effects],
            "carryover": [record(x) for x in d.carryover],
            "trends": [record(x) for x in d.trends],
            "workers": d.workers,
            "carryover_balance": said_record(d.carryover_balance) if d.carryover_balance is not None else None,
        }
        if d.fleet is not None:
            out["diagnostics"]["identity"] = identity_json(d.identity) if d.identity is not None else None
            out["diagnostics"]["fleet"] = [fleet_json(x) for x in d.fleet]
    return clean(out)


def analysis_json_text(analysis: Analysis, extra: dict[str, Any] | None = None, indent: int | None = None) -> str:
    """json.dumps(analysis_json() updated with `extra`) as text, compact unless `indent` is given.

    Compact output encodes the diagnostic rows a column at a time (rows_json_text) instead of
    building a dict per row: on a paper-scale analysis (tens of thousands of rows) this is the
    larger part of the JSON's cost. The text is the same either way.
    """
    if indent is not None or analysis.diagnostics is None:
        doc = analysis_json(analysis)
        doc.update(extra or {})
        return json.dumps(doc, indent=indent, allow_nan=False, separators=None if indent is not None else (",", ":"))
    d = analysis.diagnostics
    lists = {name: getattr(d, name) for name in ("position_effects", "carryover", "trends")}
    doc = analysis_json(replace(analysis, diagnostics=replace(d, position_effects=(), carryover=(), trends=())))
    doc.update(extra or {})
    # Each list is written in place of a marker string, random so that no string of the data
    # can be mistaken for it.
    nonce = secrets.token_hex(16)
    marks = {}
    for name, rows in lists.items():
        mark = f"\x00{name}-{nonce}\x00"
        doc["diagnostics"][name] = mark
        marks[json.dumps(mark)] = rows_json_text(rows) if isinstance(rows, Rows) else json.dumps(
            [clean(record(x)) for x in rows], allow_nan=False, separators=(",", ":"))
    text = json.dumps(doc, allow_nan=False, separators=(",", ":"))
    for mark, rows_text in marks.items():
        text = text.replace(mark, rows_text, 1)
    return text


def rows_json_text(rows: Rows[Any]) -> str:
    """Diagnostic rows as a compact JSON array of objects, exactly as
    json.dumps(rows.records(), separators=(",", ":")) writes it, encoded a column at a time."""
    if len(rows) == 0:
        return "[]"
    encoded = [_encode_column(c) for c in rows.columns]
    template = "{" + ",".join(json.dumps(name) + ":%s" for name in rows.names) + "}"
    return "[" + ",".join([template % values for values in zip(*encoded)]) + "]"


_LITERALS = {None: "null", True: "true", False: "false"}


def _encode_column(column: list[Any]) -> list[str]:
    """Each value of a column as json.dumps would write it (compact, no NaN allowed)."""
    kinds = {type(v) for v in column} - {type(None)}
    if kinds <= {float}:
        isfinite, as_text = math.isfinite, float.__repr__
        for v in column:
            if v is not None and not isfinite(v):
                raise ValueError(f"Out of range float values are not JSON compliant: {v!r}")
        return [as_text(v) if v is not None else "null" for v in column]
    if kinds <= {int}:
        return [int.__repr__(v) if v is not None else "null" for v in column]
    if kinds <= {bool}:
        return [_LITERALS[v] for v in column]
    if kinds <= {str}:
        encode = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]
        text = {v: encode(v) for v in set(column) if v is not None}
        text[None] = "null"  # type: ignore[index]
        return [text[v] for v in column]
    return [json.dumps(clean(v), separators=(",", ":"), allow_nan=False) for v in column]


def record(obj: Any) -> dict[str, Any]:
    """A flat frozen dataclass's fields as a dict."""
    # vars(): asdict() deep-copies and is ~20x slower, which matters for the tens of thousands
    # of diagnostic rows of a paper-scale dataset.
    return dict(vars(obj))


def said_record(obj: Any) -> dict[str, Any]:
    """A diagnostic's fields as a dict (record), its `detail` in words."""
    d = record(obj)
    d["detail"] = say(obj.detail)
    return d


def verdict_json(v: TestVerdict) -> dict[str, Any]:
    """One row of "tests"."""
    d = record(v)
    d["ci_fixed"] = list(v.ci_fixed) if v.ci_fixed is not None else None
    d["ci_random"] = list(v.ci_random) if v.ci_random is not None else None
    d["notes"] = said(v.notes)
    d["shift_ci"] = list(v.shift_ci) if v.shift_ci is not None else None
    if v.cells is None:
        del d["cells"]
    else:
        d["cells"] = [cell_json(c) for c in v.cells]
    return d


def failed_json(f: FailedTest) -> dict[str, Any]:
    """One test of "failed_tests": its trials that did not succeed, by status, and the first one's
    reason and output."""
    return {"test": f.test, "failed": f.failed, "trials": f.trials, "statuses": dict(f.statuses), "reason": f.reason,
            "output_tail": f.output_tail}


def cell_json(c: CellArms) -> dict[str, Any]:
    """One treatment cell of a test row, in its "cells"."""
    return {
        "cell": dict(c.cell),
        "n_fixed": c.n_fixed,
        "n_random": c.n_random,
        "median_fixed": c.median_fixed,
        "median_random": c.median_random,
        "ci_fixed": list(c.ci_fixed) if c.ci_fixed is not None else None,
        "ci_random": list(c.ci_random) if c.ci_random is not None else None,
    }


def worker_json(w: WorkerVerdicts) -> dict[str, Any]:
    """One worker's own verdict, in "workers"."""
    return {
        "worker": w.worker,
        "order_matters": w.order_matters,
        "alpha_corrected": w.alpha_corrected,
        "tests": [verdict_json(v) for v in w.tests],
    }


def identity_json(identity: Identity) -> dict[str, Any]:
    """diagnostics.identity: did every worker run the same software on the same kind of machine?"""
    return {
        "identical": identity.identical,
        "differences": [{"what": d.what, "values": dict(d.values)} for d in identity.differences],
        "workers": list(identity.workers),
        "missing": list(identity.missing),
    }


def fleet_json(row: FleetRow) -> dict[str, Any]:
    """One row of diagnostics.fleet."""
    d = record(row)
    d["medians"] = dict(row.medians)
    d["n"] = dict(row.n)
    d["outliers"] = list(row.outliers)
    return d


def clean(obj: Any) -> Any:
    """JSON has no NaN or Infinity: they become null. numpy scalars become Python numbers."""
    kind = type(obj)
    if kind is float:
        return obj if math.isfinite(obj) else None
    if kind is dict:
        return {k: clean(v) for k, v in obj.items()}
    if kind is list or kind is tuple:
        return [clean(v) for v in obj]
    if kind is str or kind is int or kind is bool or obj is None:
        return obj
    if hasattr(obj, "item"):
        return clean(obj.item())
    return obj
