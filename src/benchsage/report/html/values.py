"""Any value of the provenance (spec, plan, environment snapshots, software hashes, ...) as a
tree of nodes that templates/values.html draws: short scalars inline, mappings as key/value
tables, lists of records as tables, long text as preformatted blocks, all bounded so that the
provenance of a large journal stays small."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping, Sequence

import numpy as np

TEXT_MAX = 200_000  # characters of one provenance text (spec, plan) before it is cut
NESTED_TEXT_MAX = 5_000  # ... and of a value inside a table
PLAN_ROWS = 40  # runs listed in the plan table
ORDER_NAMES = 12  # tests named per run in the plan table


def _plain(obj: Any) -> Any:
    """Dataclasses, numpy values and tuples as plain JSON-able Python values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain(dataclasses.asdict(obj))
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _text(text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text}


def _pre(text: str, limit: int = TEXT_MAX) -> dict[str, Any]:
    cut = ""
    if len(text) > limit:
        cut = f"\n… ({len(text) - limit:,} more characters not shown)"
        text = text[:limit]
    return {"kind": "pre", "text": text + cut}


def _json_text(obj: Any) -> str:
    return json.dumps(_plain(obj), indent=1, default=str, ensure_ascii=False)


def node(obj: Any, depth: int = 0) -> dict[str, Any]:
    """Any provenance value as a node: short scalars inline, mappings as key/value tables,
    lists of records as tables, long text as preformatted blocks (all bounded)."""
    obj = _plain(obj)
    limit = TEXT_MAX if depth == 0 else NESTED_TEXT_MAX
    if obj is None or isinstance(obj, (bool, int, float)):
        return _text(json.dumps(obj, default=str))
    if isinstance(obj, str):
        return _text(obj) if len(obj) <= 200 and "\n" not in obj else _pre(obj, limit)
    if depth >= 3:
        return _pre(_json_text(obj), limit)
    if isinstance(obj, Mapping):
        entries = list(obj.items())
        # Long mappings (a start time per run, ...) fold away until asked for.
        return {"kind": "map", "rows": [(k, node(v, depth + 1)) for k, v in entries[:200]],
                "total": len(entries), "more": max(0, len(entries) - 200), "fold": len(entries) > 12}
    if isinstance(obj, list):
        if obj and all(isinstance(x, Mapping) for x in obj):
            names: list[str] = []
            for x in obj[:50]:
                names.extend(k for k in x if k not in names)
            rows = [[node(x.get(k, ""), depth + 2) for k in names] for x in obj[:50]]
            return {"kind": "records", "names": names, "rows": rows, "more": max(0, len(obj) - 50)}
        if all(x is None or isinstance(x, (bool, int, float, str)) for x in obj):
            text = ", ".join(str(x) for x in obj)
            return _text(text) if len(text) <= 200 else _pre(text, limit)
        return _pre(_json_text(obj), limit)
    return _text(str(obj))


def _flatten(obj: Any, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    else:
        out[prefix or "value"] = obj if isinstance(obj, str) else json.dumps(obj, default=str)
    return out


def _ranges(runs: Sequence[str]) -> str:
    """'0-4, 7, 9' for run ids that are integers; a plain list otherwise (bounded)."""
    try:
        ids = sorted(int(r) for r in runs)
    except ValueError:
        text = ", ".join(sorted(runs))
        return text if len(text) < 300 else text[:300] + " …"
    parts: list[str] = []
    start = prev = ids[0]
    for i in ids[1:] + [None]:  # type: ignore[list-item]
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        if i is not None:
            start = prev = i
    text = ", ".join(parts)
    return text if len(text) < 300 else text[:300] + " …"


def _snapshots_node(snapshots: Any) -> dict[str, Any]:
    """Environment snapshots of many runs, folded: one row per setting, its value when all runs
    agree, and otherwise each distinct value with the runs that had it (differences stand out)."""
    snapshots = _plain(snapshots)
    if isinstance(snapshots, list):
        snapshots = {str(i): s for i, s in enumerate(snapshots)}
    if not isinstance(snapshots, Mapping) or not snapshots:
        return node(snapshots)
    flat = {str(run): _flatten(s) for run, s in snapshots.items()}
    names: list[str] = []
    for f in flat.values():
        names.extend(k for k in f if k not in names)
    rows = []
    for name in names:
        by_value: dict[str, list[str]] = {}
        for run, f in flat.items():
            by_value.setdefault(f.get(name, "(missing)"), []).append(run)
        if len(by_value) == 1:
            (value,) = by_value
            rows.append({"name": name, "same": _text(value) if len(value) <= 300 else _pre(value)})
            continue
        ranked = sorted(by_value.items(), key=lambda kv: -len(kv[1]))
        rows.append({
            "name": name,
            "same": None,
            "distinct": len(ranked),
            "shown": [(v[:300], "runs" if len(rs) > 1 else "run", _ranges(rs)) for v, rs in ranked[:8]],
            "more": max(0, len(ranked) - 8),
        })
    return {"kind": "snapshots", "count": len(flat), "rows": rows}


def _plan_node(plan: Any) -> dict[str, Any]:
    """The plan: how the arms alternate in time, and each run's order (bounded, so that a
    plan of hundreds of runs over thousands of tests stays readable and small)."""
    plan = _plain(plan)
    if isinstance(plan, list):  # a journal's plan: one record per run
        plan = {"runs": plan}
    runs = plan.get("runs") if isinstance(plan, Mapping) else None
    if not isinstance(runs, list) or not all(isinstance(r, Mapping) for r in runs):
        return _pre(plan) if isinstance(plan, str) else node(plan)
    names = plan.get("test_names") or []
    facts = [(k, node(v, 2)) for k, v in plan.items() if k not in ("runs", "test_names")]
    arms = "".join({"fixed": "F", "random": "R"}.get(str(r.get("arm")), "?") for r in runs)
    facts.append(("runs", _text(f"{len(runs):,}")))
    facts.append(("arms in time order (F fixed, R random)", _pre(arms) if len(arms) > 100 else _text(arms)))
    statuses: dict[str, int] = {}
    for r in runs:
        if "status" in r:
            statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    if statuses:
        facts.append(("run status", _text(", ".join(f"{n:,} {s}" for s, n in statuses.items()))))

    def order_text(order: Any) -> str:
        order = order if isinstance(order, list) else []
        shown = [str(names[i]) if isinstance(i, int) and 0 <= i < len(names) else str(i) for i in order[:ORDER_NAMES]]
        return ", ".join(shown) + (f", … ({len(order) - ORDER_NAMES:,} more)" if len(order) > ORDER_NAMES else "")

    rows = [(r.get("index", r.get("run", i)), r.get("arm", ""), r.get("status", ""), order_text(r.get("order")))
            for i, r in enumerate(runs[:PLAN_ROWS])]
    return {"kind": "plan", "facts": facts, "rows": rows, "more": max(0, len(runs) - PLAN_ROWS)}


def provenance_node(prov: Mapping[str, Any]) -> dict[str, Any]:
    """Labelled blocks: the well-known keys first, drawn their own way, then the rest as they
    are, then the provenance of each source part."""
    special = {
        "tool_version": ("tool version", node),
        "seed": ("seed", node),
        "spec": ("spec", lambda s: _pre(s) if isinstance(s, str) else node(s)),
        "plan": ("plan", _plan_node),
        "snapshots": ("environment snapshots", _snapshots_node),
    }
    blocks = [(label, fn(prov[key])) for key, (label, fn) in special.items() if key in prov and prov[key] is not None]
    blocks += [(key, node(value)) for key, value in prov.items() if key not in special and key != "parts"]
    parts = prov.get("parts")
    nested = []
    if isinstance(parts, list):
        nested = [(i + 1, provenance_node(part)) for i, part in enumerate(parts) if isinstance(part, Mapping) and part]
    return {"kind": "provenance", "blocks": blocks, "parts": nested}
