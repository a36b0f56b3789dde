"""A bisect search on the terminal and as JSON (the `bisect` object of CONTRACT.md)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from benchsage.analyze.bisect import BisectResult
from benchsage.report.words import bisect as words


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(float(x), digits)


def bisect_json(r: BisectResult) -> dict[str, Any]:
    return {
        "first_bad": r.first_bad,
        "subject": r.subject,
        "parent": r.parent,
        "effect_pct": _round(r.effect_pct, 2),
        "ci": [_round(r.ci[0], 2), _round(r.ci[1], 2)],
        "builds": r.builds,
        "trials": r.trials,
        "probes": [_probe(p) for p in r.probes],
        "skipped": [{"commit": c, "reason": why, "last_line": line} for c, why, line in r.skipped],
        "method": words.method(r),
        "decided": r.decided,
        "range": list(r.range) if r.range else None,
        "bad_vs_good": {"ratio": _round(r.bad_vs_good.ratio_to_good, 4), "ci": [_round(x, 4) for x in r.bad_vs_good.ci],
                        "runs": r.bad_vs_good.runs, "verdict": r.bad_vs_good.verdict},
        "candidates": r.candidates,
        "test": r.test,
        "metric": r.metric,
        "changed_on": list(r.changed_on),
        "unchanged_on": list(r.unchanged_on),
    }


def _probe(p: Any) -> dict[str, Any]:
    out = {"commit": p.commit, "verdict": p.verdict, "runs": p.runs, "ratio_to_good": _round(p.ratio_to_good, 4),
           "ci": [_round(p.ci[0], 4), _round(p.ci[1], 4)]}
    if p.by_worker:
        out["workers"] = {w.worker: {"runs": w.runs, "ratio_to_good": _round(w.ratio_to_good, 4),
                                     "ci": [_round(w.ci[0], 4), _round(w.ci[1], 4)]} for w in p.by_worker}
    return out


def render_bisect(r: BisectResult, console: Console) -> None:
    console.print(words.answer(r), highlight=False)
    table = Table(*words.HEADERS, box=None, pad_edge=False)
    table.add_row("bad", r.bad_vs_good.subject, r.bad_vs_good.verdict, str(r.bad_vs_good.runs),
                  words.ratio_text(r.bad_vs_good.ratio_to_good, r.bad_vs_good.ci))
    for p in sorted(r.probes, key=lambda p: p.index):
        table.add_row(words.short(p.commit), p.subject, p.verdict, str(p.runs), words.ratio_text(p.ratio_to_good, p.ci))
    console.print(table)
    for c, why, line in r.skipped:
        console.print(words.skipped_line(c, why, line), highlight=False)
    console.print(f"{r.builds} builds, {r.trials} trials. Method: {words.method(r)}.", highlight=False, style="dim")


def write_bisect_html(r: BisectResult, directory: str, path: str | None = None) -> str:
    """DIR/bisect.html (or `path`): the answer, the figure of the probes, their table."""
    from benchsage.report.html.bisect import write_bisect_page

    return write_bisect_page(r, directory, path)


def plan_lines(doc: dict[str, Any]) -> list[str]:
    """`benchsage bisect --plan` in words."""
    runs, trials = doc["runs"], doc["trials"]
    looks = ", ".join(str(p) for p in doc["looks"])
    return [
        f"{doc['candidates']} commits after good {doc['good'][:12]} up to bad {doc['bad'][:12]} (first-parent line); "
        f"following {doc['metric']} of {doc['test']}.",
        f"Expect about {doc['builds']} builds: good, bad and {doc['probes']} probes (more when builds fail or probes stay undecided).",
        f"Each probe: runs of good, bad and the probe in a random order, looks at {looks} runs; first good against bad "
        f"(a difference under {doc['min_effect']:g} % is 'no change').",
        f"Runs: {runs[0]} to {runs[1]} on each of {doc['workers']} worker(s); trials: {trials[0]} to {trials[1]} per worker.",
        f"Each probe is decided at level {doc['budget']:.2g}, so that P(naming a wrong commit) <= {doc['alpha']:g}.",
    ] + _deploy_lines(doc) + ([words.shared_reset(tuple(doc["shared_reset"]), doc["test"])] if doc.get("shared_reset") else [])


def _deploy_lines(doc: dict[str, Any]) -> list[str]:
    """Where the search measures: the hosts it ships its worktrees to, and their allocation."""
    deploy = doc.get("deploy") or []
    if not deploy:
        return ["Measured on this machine, in the worktrees under the search directory: nothing is deployed."]
    out = [f"Each batch ships the worktrees it measures to {len(deploy)} host(s), each into its bisect dir:"]
    for d in deploy:
        where = f"{d['host']}" if d["host"] else "a host of the allocation"
        out.append(f"  {d['worker']} ({where}): {d['dir']}")
    if any("<search>" in d["dir"] for d in deploy):
        out.append("  (<search>: the search's id, known with -o DIR and a seed)")
    if doc.get("allocated_once"):
        out.append("The workers' hosts are allocated once for the whole search, and released at its end.")
    out.append("The bisect dirs are " + ("kept after the search (--keep-dirs)." if doc.get("keep_dirs") else
                                         "removed when the search ends with its answer (kept when it is interrupted, for resume)."))
    return out
