"""Any value of the provenance (spec, plan, environment snapshots, software hashes, ...) as a
tree of nodes that templates/values.html draws: short scalars inline, mappings as key/value
tables, lists of records as tables, long text as preformatted blocks, all bounded so that the
provenance of a large journal stays small.

Values are written for a reader, never as JSON: wall-clock times in ISO 8601 UTC, numbers with
three significant digits (in their unit where the key names one, through report/quantity.py),
yes/no, and "not recorded" for a value the data does not have.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

import numpy as np

from benchsage.report.quantity import quantity, sig3
from benchsage.store.secrets import MASK, WHY, looks_secret, mask_spec_text

TEXT_MAX = 200_000  # characters of one provenance text (spec, plan) before it is cut
NESTED_TEXT_MAX = 5_000  # ... and of a value inside a table
PLAN_ROWS = 40  # runs listed in the plan table
ORDER_NAMES = 12  # tests named per run in the plan table
NOT_RECORDED = "not recorded"
# Keys whose number is a wall-clock time (seconds since the epoch), when it is one: between
# EPOCH_FROM and EPOCH_UP_TO (2001 to 2286); OrderSage's run clock, restarting each run, is not.
TIME_KEYS = frozenset({"time", "created", "started", "ended", "start", "end", "finished", "run_starts"})
EPOCH_FROM, EPOCH_UP_TO = 1e9, 1e10
# The unit of a number, by the end of its key: seconds of a clock offset or of CPU, bytes sent.
_UNIT_SUFFIXES = (("seconds", "s"), ("offset", "s"), ("bound", "s"), ("_s", "s"), ("_ms", "ms"), ("_kib", "KiB"),
                  ("bytes", "B"), ("bytes_sent", "B"))


def utc(seconds: float) -> str:
    """A wall-clock time as ISO 8601 in UTC: '2026-11-28 17:03:22 UTC'."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def utc_span(first: float, last: float) -> str:
    """'2026-11-28 17:03:22 UTC to 17:04:01 UTC' (the date once when both share it)."""
    a, b = utc(first), utc(last)
    return f"{a} to {b[11:] if a[:10] == b[:10] else b}"


def is_time(key: str, value: Any) -> bool:
    return (key in TIME_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool)
            and EPOCH_FROM <= value < EPOCH_UP_TO)


def scalar(value: Any, key: str = "") -> str:
    """One value as the report writes it (`key`: the name it is recorded under, which says
    whether a number is a time or has a unit): never null, None or JSON."""
    if value is None:
        return NOT_RECORDED
    if isinstance(value, bool):
        return "yes" if value else "no"
    if is_time(key, value):
        return utc(float(value))
    if isinstance(value, float) and not math.isfinite(value):
        return NOT_RECORDED
    unit = next((u for suffix, u in _UNIT_SUFFIXES if key.lower().endswith(suffix)), "")
    if unit and isinstance(value, (int, float)):
        return quantity(float(value), unit)
    if isinstance(value, int):
        return str(value)  # ids, seeds, pids, counts: exact
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        text = sig3(value)
        # 0.05 is written 0.05, not 0.0500: trailing zeros only where digits were rounded away
        # (0.32999999999999996 is 0.33 written in binary: nothing was).
        exact = float(text) == float(f"{value:.12g}")
        return text.rstrip("0").rstrip(".") if "." in text and exact else text
    if isinstance(value, (list, tuple)):
        return ", ".join(scalar(v, key) for v in value) or "none"
    if isinstance(value, Mapping):
        return "; ".join(f"{k} {scalar(v, str(k))}" for k, v in value.items()) or "none"
    return str(value)


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


def _outline(obj: Any, key: str = "", indent: str = "") -> str:
    """A deep value as indented 'key: value' lines, each value as scalar() writes it."""
    if isinstance(obj, Mapping):
        return "\n".join(f"{indent}{k}:\n{_outline(v, str(k), indent + '  ')}" if isinstance(v, (Mapping, list)) and v
                         else f"{indent}{k}: {scalar(v, str(k))}" for k, v in obj.items()) or f"{indent}none"
    if isinstance(obj, list) and any(isinstance(v, (Mapping, list)) for v in obj):
        return "\n".join(f"{indent}-\n{_outline(v, key, indent + '  ')}" for v in obj)
    return f"{indent}{scalar(obj, key)}"


def node(obj: Any, depth: int = 0, key: str = "") -> dict[str, Any]:
    """Any provenance value as a node: short scalars inline, mappings as key/value tables,
    lists of records as tables, long text as preformatted blocks (all bounded). `key`: the
    name the value is recorded under (scalar)."""
    obj = _plain(obj)
    if key == "env" and isinstance(obj, Mapping):  # an env recorded as a table (a probe's, a test's)
        obj = {k: f"{MASK} ({WHY})" if looks_secret(str(k)) else v for k, v in obj.items()}
    limit = TEXT_MAX if depth == 0 else NESTED_TEXT_MAX
    if obj is None or isinstance(obj, (bool, int, float)):
        return _text(scalar(obj, key))
    if isinstance(obj, str):
        return _text(obj) if len(obj) <= 200 and "\n" not in obj else _pre(obj, limit)
    if not obj:
        return _text("none")
    if depth >= 3:
        return _pre(_outline(obj, key), limit)
    if isinstance(obj, Mapping):
        if key == "run_starts" or key.startswith("run_"):
            return _per_run_node(obj, key)
        entries = list(obj.items())
        # Long mappings (a start time per run, ...) fold away until asked for.
        return {"kind": "map", "rows": [(k, node(v, depth + 1, str(k))) for k, v in entries[:200]],
                "total": len(entries), "more": max(0, len(entries) - 200), "fold": len(entries) > 12, "label": ""}
    if isinstance(obj, list):
        if obj and all(isinstance(x, Mapping) for x in obj):
            names: list[str] = []
            for x in obj[:50]:
                names.extend(k for k in x if k not in names)
            rows = [[node(x.get(k, ""), depth + 2, k) for k in names] for x in obj[:50]]
            return {"kind": "records", "names": names, "rows": rows, "more": max(0, len(obj) - 50)}
        if all(x is None or isinstance(x, (bool, int, float, str)) for x in obj):
            text = scalar(obj, key)
            return _text(text) if len(text) <= 200 else _pre(text, limit)
        return _pre(_outline(obj, key), limit)
    return _text(str(obj))


def _per_run_node(per_run: Mapping[str, Any], key: str) -> dict[str, Any]:
    """A value per run (its start, worker, context, boot): one line when the runs agree, each
    value with its runs otherwise; start times as the span they cover, each run's folded."""
    values = {str(run): v for run, v in per_run.items()}
    if all(is_time(key, v) for v in values.values()):
        times = sorted(float(v) for v in values.values())
        rows = [(run, _text(utc(float(v)))) for run, v in list(values.items())[:200]]
        return {"kind": "map", "rows": rows, "total": len(values), "more": max(0, len(values) - 200), "fold": True,
                "label": f"{len(values):,} runs, {utc_span(times[0], times[-1])}"}
    by_value: dict[str, list[str]] = {}
    for run, v in values.items():
        by_value.setdefault(scalar(v, key), []).append(run)
    if len(by_value) == 1:
        (value,) = by_value
        return _text(f"{value}, in every run ({len(values):,})")
    ranked = sorted(by_value.items(), key=lambda kv: -len(kv[1]))
    return _text("; ".join(f"{v} ({'runs' if len(rs) > 1 else 'run'} {_ranges(rs)})" for v, rs in ranked[:20])
                 + (f"; … {len(ranked) - 20:,} more values" if len(ranked) > 20 else ""))


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """A nested mapping as {'a.b.c': leaf value}."""
    out: dict[str, Any] = {}
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    else:
        out[prefix or "value"] = obj
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
        leaf = name.rsplit(".", 1)[-1]
        raw = {run: f.get(name) for run, f in flat.items()}
        by_value: dict[str, list[str]] = {}
        for run, v in raw.items():  # a value not recorded and a setting missing read the same
            by_value.setdefault(scalar(v, leaf), []).append(run)
        if len(by_value) == 1:
            (value,) = by_value
            rows.append({"name": name, "same": _text(value) if len(value) <= 300 else _pre(value)})
            continue
        spread = _spread(list(raw.values()), leaf)
        if spread is not None and len(by_value) > 8:  # a clock, a load: its range says more than its values
            rows.append({"name": name, "same": _text(spread)})
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


def _spread(values: list[Any], key: str) -> str | None:
    """'2026-11-28 17:03:22 UTC to 17:04:01 UTC, one per run' for times, 'from 0.0557 to 0.397
    (median 0.2)' for numbers; None when they are not all numbers."""
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) != len(values) or not numbers:
        return None
    if all(is_time(key, v) for v in numbers):
        return f"{utc_span(min(numbers), max(numbers))}, one per run"
    median = float(np.median(numbers))
    return f"from {scalar(min(numbers), key)} to {scalar(max(numbers), key)} (median {scalar(median, key)})"


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
    facts = [(k, node(v, 2, k)) for k, v in plan.items() if k not in ("runs", "test_names") and v is not None]
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


def _spec_node(spec: Any) -> dict[str, Any]:
    """The spec as written, but for the values of env entries whose names look like secrets:
    masked, each named under the text (or the text left out when they cannot be masked)."""
    if not isinstance(spec, str):
        return node(spec)
    shown = mask_spec_text(spec)
    if shown.text is None:
        return _text(shown.notes()[0])
    return {**_pre(shown.text), "notes": shown.notes()}


def _recorded(value: Any) -> bool:
    return value is not None and not (isinstance(value, (str, list, tuple, Mapping)) and len(value) == 0)


def provenance_node(prov: Mapping[str, Any]) -> dict[str, Any]:
    """Labelled blocks: the well-known keys first, drawn their own way, then the rest as they
    are, then the provenance of each source part."""
    special = {
        "tool_version": ("tool version", node),
        "seed": ("seed", node),
        "spec": ("spec", _spec_node),
        "plan": ("plan", _plan_node),
        "snapshots": ("environment snapshots", _snapshots_node),
    }
    # A value that was not recorded is left out; the rest is written for a reader.
    blocks = [(label, fn(prov[key])) for key, (label, fn) in special.items() if key in prov and _recorded(prov[key])]
    blocks += [(key.replace("_", " "), node(value, key=key)) for key, value in prov.items()
               if key not in special and key != "parts" and _recorded(value)]
    parts = prov.get("parts")
    nested = []
    if isinstance(parts, list):
        nested = [(i + 1, provenance_node(part)) for i, part in enumerate(parts) if isinstance(part, Mapping) and part]
    return {"kind": "provenance", "blocks": blocks, "parts": nested}
