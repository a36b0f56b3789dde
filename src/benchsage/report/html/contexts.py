"""Context effects (Mytkowicz et al.): settings that should not matter (environment size,
working directory, CPU pinning, ASLR, link order), varied on purpose."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from benchsage.analyze.treatments import CONTEXT, CONTEXT_PREFIX, NUMERIC_DIMENSIONS, ContextEffect
from benchsage.report import plots
from benchsage.report.html.material import Material
from benchsage.report.html.numbers import counted
from benchsage.report.html.rows import TREATMENT_ROWS, floats, medians_text, notable_first
from benchsage.store.table import TrialTable

KEY = "contexts"
TITLE = "Context effects"
HEADING = "Context effects"
OPEN = True  # the contexts the spec varied on purpose: a question the experiment asked
CONTEXT_PANELS = 9  # panels of the per-context figure: the claims first, then the tests


def _context_settings(table: TrialTable) -> dict[str, dict[str, str]]:
    """Each context's own settings (env_bytes, cpus, ...): the most common level of each
    "context:NAME" dimension among the context's rows."""
    found = table.levels(CONTEXT)
    if found is None:
        return {}
    names, codes = found
    out: dict[str, dict[str, str]] = {name: {} for name in names}
    known = codes >= 0
    for k, dim in enumerate(table.dims):
        if not dim.startswith(CONTEXT_PREFIX):
            continue
        levels = table.treatment[:, k]
        ok = known & (levels >= 0)
        width = len(table.dim_levels[k])
        counts = np.bincount(codes[ok].astype(np.int64) * width + levels[ok], minlength=len(names) * width).reshape(len(names), width)
        for c, name in enumerate(names):
            if counts[c].any():
                out[name][dim[len(CONTEXT_PREFIX):]] = table.dim_levels[k][int(counts[c].argmax())]
    return out


def _numeric_axis(contexts: Sequence[str], settings: Mapping[str, Mapping[str, str]]) -> tuple[np.ndarray | None, str]:
    """The contexts' x positions: their size setting (env_bytes, cwd_bytes) when every context
    has one and they differ, as in Mytkowicz et al.'s Figures 6-7; else None (side by side)."""
    for dim in NUMERIC_DIMENSIONS:
        try:
            xs = np.array([float(settings[c][dim]) for c in contexts])
        except (KeyError, ValueError):
            continue
        if len(np.unique(xs)) > 1:
            return xs, dim
    return None, "context"


def _comparison_panel(c: Mapping[str, Any], settings: Mapping[str, Mapping[str, str]]) -> plots.ContextPanel:
    per = c["per_context"]
    names = [str(pc["context"]) for pc in per]
    merged = {n: {**settings.get(n, {}), **(pc.get("values") or {})} for n, pc in zip(names, per)}
    x, xlabel = _numeric_axis(names, merged)
    ci = [pc.get("ci") or [None, None] for pc in per]
    colour = {"a": plots.A_BETTER_COLOUR, "b": plots.SIGNIFICANT_COLOUR}
    return plots.ContextPanel(
        title=f"{c['a']} / {c['b']} ({c['metric']})",
        ylabel=f"ratio of medians {plots.short_label(str(c['a']), 16)} / {plots.short_label(str(c['b']), 16)}",
        labels=names,
        y=floats(pc.get("ratio") for pc in per),
        low=floats(lo for lo, _ in ci),
        high=floats(hi for _, hi in ci),
        colours=[colour.get(pc.get("better") or "", plots.UNDECIDED_COLOUR) for pc in per],
        x=x,
        xlabel=xlabel,
        reference=1.0,
    )


def _test_panels(effects: Sequence[ContextEffect], table: TrialTable, settings: Mapping[str, Mapping[str, str]]) -> list[plots.ContextPanel]:
    """Per test, its median and CI in each context, as the analysis found them in the values the
    context analysis examined (the lightest observer level)."""
    panels = []
    for effect in effects:
        if not effect.median_ci:
            continue
        shown = list(effect.median_ci)
        median, low, high = (floats(column) for column in zip(*effect.median_ci.values()))
        x, xlabel = _numeric_axis(shown, settings)
        info = table.metric_info(effect.metric)
        panels.append(plots.ContextPanel(
            title=f"{effect.test} ({effect.metric})",
            ylabel=f"median, {plots.short_axis_label(info.name, info.unit, info.better)}",
            labels=shown,
            y=median,
            low=low,
            high=high,
            colours=[plots.FIXED_COLOUR] * len(shown),
            x=x,
            xlabel=xlabel,
            flagged=bool(effect.significant),
        ))
    return panels


def gist(shown: dict[str, Any]) -> str:
    """'1 of 2 tests differs between contexts'."""
    differ = shown["differ"]
    return f"{differ:,} of {counted(shown['total'], 'test')} {'differs' if differ == 1 else 'differ'} between contexts"


def view(material: Material) -> dict[str, Any] | None:
    """Per test, Kruskal-Wallis across the contexts and each context setting's test; the figure
    shows every claim's ratio and the notable tests' medians context by context. None when the
    data has no contexts."""
    analysis, doc, table = material.analysis, material.doc, material.table
    effects = doc.get("context_effects")
    claims = [c for c in doc.get("comparisons") or () if c.get("per_context")]
    if effects is None and not claims:
        return None
    effects = list(effects or ())
    dims = list(dict.fromkeys(d for r in effects for d in r.get("by") or {}))
    shown = notable_first(effects, TREATMENT_ROWS, "tests")
    settings = _context_settings(table)
    panels = [_comparison_panel(c, settings) for c in claims[:CONTEXT_PANELS]]
    typed = {(e.test, e.metric): e for e in analysis.context_effects or ()}
    notable = [typed[(r["test"], r["metric"])] for r in shown["rows"][: CONTEXT_PANELS - len(panels)]]
    panels += _test_panels(notable, table, settings)
    figure = plots.per_context(
        "fig-contexts",
        "Per measurement context",
        "One point per context with its confidence interval. A claim a vs b: the ratio of medians a/b "
        "(green: a better in that context, red: b better, grey: undecided, after the correction over the "
        "contexts); points on both sides of the dashed line at 1.0 are a flip of the winner. A test: its "
        f"median in that context with the {analysis.ci_level:.0%} CI (a title in red: the test's context "
        "effect is significant). Contexts are placed by their size setting (env_bytes, cwd_bytes) when they have one.",
        panels,
    )
    columns = ("test", "metric", "contexts", "KW H", "p", "p adjusted", "significant", "spread %",
               *(f"{d} p" for d in dims), "median per context")
    return {"rows": [(r, medians_text(r.get("medians") or {})) for r in shown["rows"]], "shown": shown["shown"], "total": len(effects),
            "differ": sum(1 for r in effects if r.get("significant")),
            "dims": dims, "columns": columns, "figure": figure,
            "methods": list(dict.fromkeys(str(r["method"]) for r in effects if r.get("method")))}
