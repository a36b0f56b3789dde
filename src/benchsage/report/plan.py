"""Print a plan (from design.estimate.describe_plan) for `benchsage plan`."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchsage.design.williams import Squares
from benchsage.report.words.registry import count
from benchsage.report.words.sequential import stop_rule
from benchsage.vocabulary import DECIDE_EACH, format_duration

SHOWN_WORKERS = 3  # with more workers, the terminal lists the first one's runs only


def render_plan(doc: dict[str, Any], console: Console) -> None:
    seed_note = "" if doc["seed_recorded"] else " (drawn now; the spec names none, so `run` will draw another and record it)"
    console.print(f"Experiment {doc['name']!r}: {len(doc['tests'])} tests, {doc['runs_per_arm']} runs per arm, "
                  f"{doc['total_runs']} runs, {doc['total_trials']} trials; seed {doc['seed']}{seed_note}", markup=False, highlight=False)
    console.print(f"Reset before every run: {doc['reset'] or '(none: runs will not start from a clean state)'}", markup=False, highlight=False)
    if doc.get("deploy"):
        console.print(deploy_text(doc["deploy"]), markup=False, highlight=False)
    console.print(_random_orders(doc), markup=False, highlight=False)
    if doc.get("cpu_latency") is not None:
        console.print(f"CPU wake-up latency: at most {doc['cpu_latency']} us on every host while it runs (a PM QoS limit its "
                      "agent holds, root on the host; `run` stops before the first trial if a host refuses)",
                      markup=False, highlight=False)
    if doc.get("sequential"):
        console.print(_stopping(doc), markup=False, highlight=False)
    for sweep in doc.get("sweeps") or ():
        console.print(_sweep_text(sweep), markup=False, highlight=False)
    cells = doc.get("treatments") or []
    if cells:
        console.print(f"Treatments: {len(cells)}, each run carries one (both runs of a pair the same), "
                      "in randomized complete blocks:", markup=False, highlight=False)
        for cell in cells:
            console.print("  " + _cell_text(cell, short=False), markup=False, highlight=False)
    for claim in doc.get("compare") or ():
        metric = claim["metric"] or "its primary metric"
        console.print(f"Claim to check: {claim['a']} is better than {claim['b']} on {metric} (every run measures both)",
                      markup=False, highlight=False)
    if doc.get("detectable") and not doc["detectable"]["detectable"]:
        console.print(f"warning: {undetectable_text(doc['detectable'])}", markup=False, highlight=False, style="yellow")
    for warning in doc.get("warnings") or ():
        console.print(f"warning: {warning}", markup=False, highlight=False, style="yellow")
    for line in doc.get("provisioning") or ():
        console.print(line, markup=False, highlight=False)
    for check in doc.get("run_checks") or ():
        console.print(f"Before running: {check}", markup=False, highlight=False)
    workers = doc.get("workers") or []
    if len(workers) > 1 or any("roles" in w for w in workers):
        _render_workers(workers, console)
    for w in workers[:1] if len(workers) > SHOWN_WORKERS else workers:
        if len(workers) > 1:
            console.print(f"Runs of worker {w['name']} (seed {w['seed']}):", markup=False, highlight=False)
        _render_runs(w["runs"], console)
    if len(workers) > SHOWN_WORKERS:
        console.print(f"The other {len(workers) - 1} workers run the same fixed order and their own random orders "
                      "(`benchsage plan --json` lists every worker's runs).", markup=False, highlight=False)
    est = doc["estimate"]
    parts = []
    if "expected_seconds" in est:
        parts.append(f"about {format_duration(est['expected_seconds'])} (median durations measured in {est['from']})")
    if "upper_bound_seconds" in est:
        parts.append(f"at most {format_duration(est['upper_bound_seconds'])} (every trial and reset at its timeout)")
    if not parts:
        parts.append("unknown: no earlier experiment of this spec in results/, and not every test has a timeout to bound it")
    per_worker = " per worker, all workers in parallel" if len(workers) > 1 else ""
    console.print("Duration: " + "; ".join(parts) + per_worker, markup=False, highlight=False)
    if doc.get("advice"):
        render_advice(doc["advice"], doc["advice_summary"], doc["runs_per_arm"], console)


def undetectable_text(d: dict[str, Any]) -> str:
    """Why the planned runs cannot show an order effect (design.estimate.detectable_runs):
    "5 runs per arm cannot reach the corrected level 0.005 for 10 tests: Kruskal-Wallis gives
    p >= 0.0090 at best; 6 runs per arm can. See `benchsage plan --pilot`." The least p is
    rounded down, so that the sentence stays true."""
    runs = count(d["runs_per_arm"], "run")
    workers = d["workers"]
    on_each = f" on each of {workers} workers" if workers > 1 else ""
    family = count(d["tests"], "test") if d["comparisons"] == d["tests"] else count(d["comparisons"], "primary comparison")
    if d["least_p"] is None:
        below = (f"{d['min_values_per_arm']} runs per arm" if workers == 1
                 else f"{d['min_values_per_arm']} values per arm (the runs of all workers together)")
        text = f"{runs} per arm{on_each} cannot show an order effect: the analysis gives no p-value below {below}"
    else:
        test = "van Elteren's test (a stratum per worker)" if workers > 1 else "Kruskal-Wallis"
        text = (f"{runs} per arm{on_each} cannot reach the corrected level {d['alpha_corrected']:.3g} for {family}: "
                f"{test} gives p >= {_down(d['least_p'])} at best")
    if d["least_runs_per_arm"] is not None:
        text += f"; {count(d['least_runs_per_arm'], 'run')} per arm{' on each worker' if workers > 1 else ''} can"
    if d.get("sequential"):
        text += " (the sequential looks' boundaries are stricter still)"
    return text + ". See `benchsage plan --pilot` for the runs that find a given effect."


def _down(p: float) -> str:
    """p rounded down to two significant digits, trailing zeros kept ("0.0090")."""
    digits = 1 - math.floor(math.log10(p))
    return f"{math.floor(p * 10 ** digits) / 10 ** digits:#.2g}"


def deploy_text(deploy: dict[str, Any]) -> str:
    """"Deploy: commit abc1234 (HEAD, 57 files, 1.2 MiB) to every worker's dir"."""
    n = deploy["bytes"]
    size = count(deploy["files"], "file") + ", " + (f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} bytes")
    if deploy["source"] != "git":
        return f"Deploy: folder ({size}, tree {deploy['tree'][:7]}) to every worker's dir"
    dirty = f", with {count(len(deploy['dirty']), 'uncommitted file')}" if deploy.get("dirty") else ""
    return f"Deploy: commit {deploy['commit'][:7]} ({deploy['rev']}, {size}{dirty}) to every worker's dir"


def _sweep_text(sweep: dict[str, Any]) -> str:
    """"sweep conns: 2, 8, 32 (3 levels; test wrk -> 3 tests)"."""
    tests = sweep["tests"]
    crossed = f", crossed with {', '.join(sweep['crossed_with'])}" if sweep["crossed_with"] else ""
    return (f"sweep {sweep['name']}: {', '.join(sweep['levels'])} ({len(sweep['levels'])} levels; "
            f"test{'s' if len(tests) > 1 else ''} {', '.join(tests)} -> {sweep['expanded']} tests{crossed})")


def _random_orders(doc: dict[str, Any]) -> str:
    squares = doc.get("squares")
    if doc.get("random_orders") != "williams" or squares is None:
        return "Random orders: shuffled, a fresh permutation per run"
    described = Squares(squares["rows"], squares["complete"], squares["extra_runs"]).describe(doc["runs_per_arm"])
    each = " (each worker, its own squares)" if len(doc.get("workers") or []) > 1 else ""
    return f"Random orders: randomized Williams squares{each}; {described}"


def _stopping(doc: dict[str, Any]) -> str:
    seq = doc["sequential"]
    points = ", ".join(str(p) for p in seq["look_points"])
    where = " on every worker" if len(doc.get("workers") or []) > 1 else ""
    return (f"Stopping: sequential, {seq['looks']} look{'s' if seq['looks'] != 1 else ''} after {points} runs per arm{where}; "
            f"the experiment stops at the first look where {stop_rule(seq.get('decide', DECIDE_EACH), seq['min_effect'])}, "
            f"so it may end before all {doc['total_runs']} runs; the duration below is for all of them")


def _render_workers(workers: list[dict[str, Any]], console: Console) -> None:
    if len(workers) > 1:
        console.print(f"{len(workers)} workers, each carrying out the whole plan in parallel:", markup=False, highlight=False)
    table = Table(show_edge=False, header_style="bold" if console.is_terminal else "")
    table.add_column("worker")
    roles = any("roles" in w for w in workers)
    if roles:
        table.add_column("role")
    table.add_column("kind")
    table.add_column("where")
    if roles:
        table.add_column("runs there")
    table.add_column("seed of its random orders", justify="right")
    for w in workers:
        if "roles" not in w:
            table.add_row(Text(w["name"]), *([""] if roles else []), w["kind"], Text(w["target"]), *([""] if roles else []), str(w["seed"]))
            continue
        for i, r in enumerate(w["roles"]):
            there = ", ".join([f"tests {', '.join(r['tests'])}"] * bool(r["tests"]) + [f"collectors {', '.join(r['collectors'])}"]
                              * bool(r["collectors"]))
            table.add_row(Text(w["name"]) if i == 0 else "", r["role"], r["kind"], Text(r["target"]), Text(there), str(w["seed"]) if i == 0 else "")
    console.print(table)


def _render_runs(runs: list[dict[str, Any]], console: Console) -> None:
    table = Table(show_edge=False, header_style="bold" if console.is_terminal else "")
    table.add_column("run", justify="right")
    table.add_column("arm")
    treated = any("treatment" in r for r in runs)
    if treated:
        table.add_column("treatment")
    table.add_column("order")
    for r in runs:
        cell = [_cell_text(r["treatment"], short=True)] if treated else []
        table.add_row(str(r["run"]), r["arm"], *[Text(c) for c in cell], Text(" → ".join(r["order"])))  # names hold brackets: not markup
    console.print(table)


def _cell_text(cell: dict[str, Any], *, short: bool) -> str:
    """A treatment as the plan shows it: "c3 strace gov=on", or with the context's values."""
    words = [str(cell["context"])] if "context" in cell else []
    if not short and "context" in cell:
        details = [f"{k} {' '.join(v) if isinstance(v, list) else v}" for k, v in cell.items()
                   if k not in ("context", "observer", "factors")]
        words = [f"{cell['context']} ({', '.join(details)})"]
    if "observer" in cell:
        words.append(f"observer {cell['observer']}" if not short else str(cell["observer"]))
    words += [f"{name}={level}" for name, level in (cell.get("factors") or {}).items()]
    return " ".join(words)


def render_advice(rows: list[dict[str, Any]], summary: dict[str, Any], planned: int, console: Console) -> None:
    """`plan --pilot`: the runs per arm each test needs (design.advice), what they cost, and
    what the sequential design saves where resets dominate."""
    alpha = f"alpha/m = {summary['alpha']:g}/{summary['m']} = {summary['alpha_test']:.3g}"
    console.print(f"Run advice from the pilot {summary['pilot']}: runs per arm to detect an order effect of "
                  f"{summary['effect_pct']:g}% with {summary['power'] * 100:g}% power, Kruskal-Wallis at {alpha} (Bonferroni"
                  f"{'; conservative for Holm' if summary['correction'] == 'holm' else ''}), by resampling the pilot's values:",
                  markup=False, highlight=False)
    table = Table(show_edge=False, header_style="bold" if console.is_terminal else "")
    table.add_column("test")
    table.add_column("metric")
    for name in ("cv", "runs per arm", "power", "expected duration"):
        table.add_column(name, justify="right")
    for r in rows:
        table.add_row(Text(r["test"]), r["metric"], "-" if r["cv"] is None else f"{r['cv']:.3g}", _runs(r["runs_per_arm"], summary),
                      f"{r['power']:.2f}", "-" if r["expected_seconds"] is None else format_duration(r["expected_seconds"]))
    console.print(table)
    console.print(_advice_summary(rows, summary, planned), markup=False, highlight=False)
    if summary.get("sequential"):
        console.print(_sequential(summary), markup=False, highlight=False)
    for note in summary.get("notes") or ():
        console.print(f"note: {note}", markup=False, highlight=False)


def _runs(n: int | None, summary: dict[str, Any]) -> str:
    return str(n) if n is not None else f"more than {summary['max_runs']}"


def _advice_summary(rows: list[dict[str, Any]], summary: dict[str, Any], planned: int) -> str:
    need = summary["runs_per_arm"]
    enough = sum(1 for r in rows if r["runs_per_arm"] is not None and r["runs_per_arm"] <= planned)
    if need is None:
        text = f"{summary['test']} needs more than {summary['max_runs']} runs per arm: its values are too noisy for this effect"
    else:
        text = f"The experiment needs {need} runs per arm (for {summary['test']})"
        if summary["expected_seconds"] is not None:
            text += f": about {format_duration(summary['expected_seconds'])} per worker"
    if summary["run_seconds"] is None:
        text += " (the pilot's data files record no run durations)"
    return text + f". The plan has {planned} runs per arm: enough for {enough} of {len(rows)}."


def _sequential(summary: dict[str, Any]) -> str:
    seq = summary["sequential"]
    share = summary["reset_seconds"] / summary["run_seconds"] * 100 if summary["run_seconds"] else 0.0

    def saved(case: dict[str, Any]) -> str:
        time_saved = f", {format_duration(case['saved_seconds'])}" if case["saved_seconds"] is not None else ""
        return f"{case['expected_runs']:.1f} runs per arm (saving {case['saved_runs']:.1f}{time_saved})"

    return (f"Resets take {share:.0f}% of a run ({summary['reset_seconds']:.3g} s of {summary['run_seconds']:.3g} s): with "
            f'stop = "sequential", runs = {seq["max_runs"]}, looks = {seq["looks"]}, expect {saved(seq["if_effect"])} if every '
            f"test has the effect (found on {summary['test']} in {seq['power'] * 100:.0f}% of cases), "
            f"{saved(seq['if_no_effect'])} if none has.")

