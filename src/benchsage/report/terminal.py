"""Print an Analysis on the terminal: tables like the paper's Tables 3-5, the verdict, where the
effect comes from, and the warnings.

Styles are used only on a colour terminal; piped output, NO_COLOR and Console(no_color=True)
get plain text without a single ANSI escape. Strings from specs and data are never read as
rich markup.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from rich import box
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from benchsage.analyze.treatments import AnovaResult, FactorialRow
from benchsage.analyze.verdict import Analysis, Diagnostics, FleetRow, TestVerdict
from benchsage.analyze.notes import OnTest
from benchsage.report.quantity import interval, quantity
from benchsage.report.words import said, say, workers_sentence
from benchsage.report.words.registry import count
from benchsage.report.words.answer import CAUTION, DIM, EFFECT, FAILED, NONE, Line, answer
from benchsage.report.words.effects import factor, shift_text
from benchsage.report.words.grouping import grouped
from benchsage.report.words.curves import curve_pair_sentence, fixed_text, pairs, series_name
from benchsage.report.words.sequential import stopped_reason
from benchsage.report.words.verdict import names as named
from benchsage.vocabulary import FAILED as FAILED_STATUS
from benchsage.vocabulary import STOPPED_VERDICT

NULL = "–"  # a value that could not be computed; the warnings say why
NAME_MIN = 12  # a narrow terminal folds test names, but not below this many characters


def make_console(stderr: bool = False, *, force_terminal: bool | None = None) -> Console:
    """A console on stdout (or stderr) that is plain when NO_COLOR is set or it is not a tty.

    force_terminal: None detects (the default); True / False override the detection, e.g.
    for tests. Emoji codes and highlighting are off: test names are printed as they are.
    """
    no_color = os.environ.get("NO_COLOR", "") != ""
    # No file=: rich then looks sys.stdout / sys.stderr up when it writes, so redirections
    # made after the console was created (pytest's capture, contextlib.redirect_stdout) apply.
    # Under NO_COLOR, color_system=None drops bold and italic too, for every renderer.
    return Console(
        stderr=stderr,
        force_terminal=force_terminal,
        no_color=no_color,
        color_system=None if no_color else "auto",
        highlight=False,
        emoji=False,
    )


@dataclass(frozen=True)
class _Styles:
    """Style names when the console shows styles, empty strings otherwise."""

    header: str = ""
    title: str = ""
    significant: str = ""
    case1: str = ""
    warning: str = ""
    verdict_effect: str = ""
    verdict_none: str = ""
    dim: str = ""
    failed: str = ""
    caution: str = ""

    def tone(self, tone: str) -> str:
        """The style of a line of the answer by its tone (report/words/answer.py)."""
        return {EFFECT: self.verdict_effect, NONE: self.verdict_none, FAILED: self.failed, CAUTION: self.caution, DIM: self.dim}.get(tone, "")


def _styles(console: Console) -> _Styles:
    # no_color alone would still let rich emit bold and italic: plain means no escapes at all.
    if not console.is_terminal or console.no_color or console.color_system is None:
        return _Styles()
    return _Styles(
        header="bold",
        title="bold",
        significant="bold red",
        case1="yellow",
        warning="yellow",
        verdict_effect="bold red",
        verdict_none="bold green",
        dim="dim",
        failed="bold red",
        caution="bold yellow",
    )


# -- number formatting ----------------------------------------------------------------------


def _g(x: float | None, digits: int = 6) -> str:
    return NULL if x is None else f"{x:.{digits}g}"


def _p(x: float | None) -> str:
    if x is None:
        return NULL
    if x >= 1e-3 or x == 0:
        return f"{x:.3g}"
    # 8.51e-5 rather than 8.51e-05: narrow columns matter on an 80-column terminal.
    mantissa, exponent = f"{x:.2e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _fixed3(x: float | None) -> str:
    return NULL if x is None else f"{x:.3f}"


def _pct(x: float | None) -> str:
    return NULL if x is None else f"{x:+.2f}"


def _yes_no(x: bool | None) -> str:
    return NULL if x is None else ("yes" if x else "no")


def _counts(v: TestVerdict) -> str:
    return f"{v.n_fixed}/{v.n_random}"


def _metric_title(v: TestVerdict) -> str:
    details = [d for d in (v.unit, f"{v.better} is better" if v.better else "") if d]
    return v.metric + (f" ({', '.join(details)})" if details else "")


def _table(columns: Iterable[tuple[str, str]], st: _Styles) -> Table:
    table = Table(
        box=box.SIMPLE_HEAD,
        header_style=st.header,
        border_style=st.dim,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
    )
    for name, justify in columns:
        # Numbers never wrap; names (left-aligned columns) fold when the terminal is narrow,
        # so a long test command is shown whole rather than cut with an ellipsis.
        wraps = justify == "left"
        table.add_column(name, justify=justify, overflow="fold", no_wrap=not wraps)  # type: ignore[arg-type]
    return table


def _cell_width(cell: object) -> int:
    text = cell if isinstance(cell, Text) else Text(str(cell))
    return max((line.cell_len for line in text.split("\n")), default=0)


def _natural_width(column: Column) -> int:
    return max([_cell_width(column.header)] + [_cell_width(c) for c in column.cells])


def _print_table(console: Console, table: Table) -> None:
    """Print a table so that numbers are never cut and names fold only when they must.

    Rich, left alone, squeezes the one wrappable column (the test name) to nothing on an
    80-column terminal. Here the columns first close up (two spaces between them, then one);
    if the names still do not fit, each name column gets an equal share of what is left (a
    column narrower than its share keeps its width and leaves the rest to the others), at
    least NAME_MIN characters, and folds its text into that.
    """
    columns = table.columns
    numbers = sum(_natural_width(c) for c in columns if c.no_wrap)
    names = [c for c in columns if not c.no_wrap]
    need = sum(_natural_width(c) for c in names)
    gaps = len(columns) - 1
    for gap, padding in ((2, (0, 1)), (1, (0, 0))):
        room = console.width - numbers - gap * gaps
        if room >= need:
            table.padding = padding
            console.print(table)
            return
    table.padding = (0, 0)  # the loop ended on the closest spacing: keep it
    # Narrow name columns (a unit) keep their width; the wider ones share what they leave.
    left = max(room, 0)
    pending = sorted(names, key=_natural_width)
    while pending:
        c = pending.pop(0)
        c.width = min(_natural_width(c), max(left // (len(pending) + 1), NAME_MIN))
        left -= c.width
    console.print(table)


def _row_style(v: TestVerdict, st: _Styles) -> str:
    return st.significant if v.significant else ""


# -- sections -------------------------------------------------------------------------------


def _primary_rows(analysis: Analysis) -> dict[str, list[TestVerdict]]:
    by_metric: dict[str, list[TestVerdict]] = {}
    for v in analysis.tests:
        if v.primary:
            by_metric.setdefault(v.metric, []).append(v)
    return by_metric


def _primary_tables(analysis: Analysis, console: Console, st: _Styles) -> None:
    """A table per primary metric: each test's medians in both orders, the order effect with its
    interval, the corrected p-value and the CI case; a test's treatment cells under it."""
    for verdicts in _primary_rows(analysis).values():
        head = verdicts[0]
        level = next((v.shift_level for v in verdicts if v.shift_level is not None), None)
        interval_note = f" with its {level * 100:.4g}% interval" if level is not None else ""
        _line(console, f"Primary metric: {head.metric}" + (f" ({head.better} is better)" if head.better else "")
              + f"; F: the fixed order, R: random orders; F vs R: the order effect{interval_note}", st.title)
        table = _table([("test", "left"), ("n F/R", "right"), ("median F", "right"), ("median R", "right"),
                        ("F vs R", "right"), ("p adj", "right"), ("sig", "center"), ("case", "center")], st)
        for v in verdicts:
            if v.status == FAILED_STATUS:
                table.add_row(Text(v.test), _counts(v), "failed", "failed", NULL, NULL, NULL, NULL, style=st.failed)
                continue
            case = Text(NULL if v.ci_case is None else str(v.ci_case), style=st.case1 if v.ci_case == 1 else "")
            table.add_row(Text(v.test), _counts(v), quantity(v.median_fixed, v.unit), quantity(v.median_random, v.unit),
                          shift_text(v) or NULL, _p(v.p_adjusted), _yes_no(v.significant), case, style=_row_style(v, st))
            for c in v.cells or ():
                cell = series_name(dict(c.cell))
                fr = (factor(c.median_fixed / c.median_random, None, v.unit) if c.median_fixed and c.median_random
                      and c.median_fixed > 0 and c.median_random > 0 else NULL)
                table.add_row(Text(f"  {cell}", style=st.dim), f"{c.n_fixed}/{c.n_random}", quantity(c.median_fixed, v.unit),
                              quantity(c.median_random, v.unit), fr, "", "", "", style=st.dim)
        _print_table(console, table)
        console.print()


def _paper_tables(analysis: Analysis, console: Console, st: _Styles) -> None:
    """The paper's Tables 3-5 for the primary metrics (--all): Kruskal-Wallis, eta², Δ% of the
    means and the CI case; then each arm's median with its interval, which the case compares."""
    for verdicts in _primary_rows(analysis).values():
        _line(console, f"Paper-style table (Duplyakin et al., Tables 3-5): {_metric_title(verdicts[0])}", st.title)
        table = _table([("test", "left"), ("n F/R", "right"), ("vE p" if analysis.combined is not None else "KW p", "right"),
                        ("p adj", "right"), ("sig", "center"), ("eta²", "right"), ("Δ% means", "right"), ("CI case", "center")], st)
        for v in verdicts:
            case = Text(NULL if v.ci_case is None else str(v.ci_case), style=st.case1 if v.ci_case == 1 else "")
            table.add_row(Text(v.test), _counts(v), _p(v.kw_p), _p(v.p_adjusted), _yes_no(v.significant), _fixed3(v.eta2),
                          _pct(v.delta_pct), case, style=_row_style(v, st))
        _print_table(console, table)
        _line(console, f"Each arm's median and its {analysis.ci_level:.0%} {analysis.ci_method} interval (the CI case compares them)", st.title)
        table = _table([("test", "left"), ("median fixed [CI]", "right"), ("median random [CI]", "right")], st)
        for v in verdicts:
            table.add_row(Text(v.test), interval(v.median_fixed, *(v.ci_fixed or (None, None)), v.unit),
                          interval(v.median_random, *(v.ci_random or (None, None)), v.unit), style=_row_style(v, st))
        _print_table(console, table)
        console.print()


def _secondary_table(analysis: Analysis, console: Console, st: _Styles) -> None:
    others = [v for v in analysis.tests if not v.primary]
    if not others:
        return
    _line(console, "Other metrics (corrected within their own family; they do not decide the verdict)", st.title)
    table = _table(
        [
            ("test", "left"),
            ("metric", "left"),
            ("n F/R", "right"),
            ("median F", "right"),
            ("median R", "right"),
            ("F vs R", "right"),
            ("p adj", "right"),
            ("sig", "center"),
        ],
        st,
    )
    for v in others:
        table.add_row(
            Text(v.test),
            Text(v.metric),
            _counts(v),
            quantity(v.median_fixed, v.unit),
            quantity(v.median_random, v.unit),
            shift_text(v, with_interval=False) or NULL,
            _p(v.p_adjusted),
            _yes_no(v.significant),
            style=_row_style(v, st),
        )
    _print_table(console, table)
    console.print()


def _line(console: Console, text: str, style: str = "") -> None:
    # soft_wrap: long sentences stay one line in logs and pipes; a terminal wraps them itself.
    console.print(Text(text, style=style), soft_wrap=True)


def _diagnostics(d: Diagnostics, console: Console, st: _Styles) -> None:
    _line(console, "Where the effect comes from", st.title)
    if d.interleaving is not None:
        state = {True: "interleaved", False: "NOT interleaved", None: "unknown"}[d.interleaving.interleaved]
        _line(console, f"Arms in time: {state}: {say(d.interleaving.detail)}", st.warning if d.interleaving.interleaved is False else "")

    positions = [e for e in d.position_effects if e.significant]
    if positions:
        _line(console, "Position effects (random arm: at this position vs elsewhere)")
        table = _table([
            ("test", "left"), ("metric", "left"), ("position", "right"), ("n at/other", "right"), ("effect %", "right"), ("p adj", "right"),
        ], st)
        for e in positions:
            # Large experiments bin positions: show the bin as a range.
            where = str(e.position) if e.position_last in (None, e.position) else f"{e.position}-{e.position_last}"
            table.add_row(Text(e.test), Text(e.metric), where, f"{e.n_at}/{e.n_other}", _pct(e.effect_pct), _p(e.p_adjusted))
        _print_table(console, table)
    else:
        _line(console, f"Position effects: none significant ({len(d.position_effects)} examined).")

    carry = [c for c in d.carryover if c.significant]
    if carry:
        _line(console, "Carry-over (random arm: after this predecessor vs after others)")
        table = _table([
            ("test", "left"), ("metric", "left"), ("after", "left"), ("n after/other", "right"), ("effect %", "right"), ("p adj", "right"),
        ], st)
        for c in carry:
            table.add_row(Text(c.test), Text(c.metric), Text(c.after), f"{c.n_after}/{c.n_other}", _pct(c.effect_pct), _p(c.p_adjusted))
        _print_table(console, table)
    else:
        _line(console, f"Carry-over: none significant ({len(d.carryover)} examined).")
    if d.carryover_balance is not None:
        _line(console, f"Carry-over balance: {say(d.carryover_balance.detail)}")

    trends = [t for t in d.trends if t.significant]
    if trends:
        _line(console, "Trends over time within an arm (Spearman)")
        table = _table([
            ("test", "left"), ("metric", "left"), ("arm", "left"), ("n", "right"), ("rho", "right"), ("p adj", "right"),
        ], st)
        for t in trends:
            table.add_row(Text(t.test), Text(t.metric), t.arm, str(t.n), _g(t.spearman_rho, 3), _p(t.p_adjusted if t.p_adjusted is not None else t.p))
        _print_table(console, table)
    else:
        _line(console, f"Trends over time: none significant ({len(d.trends)} examined).")

    if d.workers:
        _line(console, "Workers whose software differs:", st.warning)
        for name, detail in d.workers.items():
            _line(console, f"  {name}: {detail}")
    console.print()


def _sequential(analysis: Analysis, console: Console, st: _Styles) -> None:
    """A sequential experiment: where it stopped, of how many runs, and each test's decision."""
    seq = analysis.sequential
    if seq is None:
        return
    s = seq.summary
    taken, planned, most = len(s["looks"]), len(s["planned_looks"]), s["max_runs"]
    stopped = s["stopped_at_runs"]
    if stopped is None:
        head = f"{taken} of {planned} looks taken so far (the experiment is unfinished), at most {most} runs per arm"
    elif stopped < most or s.get("stopped_because") == STOPPED_VERDICT:
        effects = [v.test for v in analysis.tests if v.primary and seq.row(v.test, v.metric)["decided"] == "effect"]
        head = f"stopped at {stopped} of {most} runs per arm, at look {taken} of {planned}: {stopped_reason(s, effects)}"
    else:
        head = f"all {most} runs per arm carried out ({planned} look{'s' if planned != 1 else ''})"
    _line(console, f"Sequential stopping: {head}", st.title)
    table = _table([("test", "left"), ("metric", "left"), ("decision", "left"), ("at runs", "right")], st)
    for v in analysis.tests:
        if v.primary:
            row = seq.row(v.test, v.metric)
            decided, at_runs = row["decided"], row["decided_at_runs"]
            style = st.significant if decided == "effect" else st.verdict_none if decided == "no-effect" else ""
            table.add_row(Text(v.test), Text(v.metric), decided or "undecided", NULL if at_runs is None else str(at_runs), style=style)
    _print_table(console, table)
    _line(console, f"Method: {s['method']}. The tables above test the runs done as if their number had been fixed.", st.dim)
    console.print()


MAX_FLEET_MEDIANS = 6  # a fleet's per-worker medians spelled out up to this many workers
MAX_WORKER_NAMES = 3  # a worker's significant tests named up to this many


def _workers(analysis: Analysis, console: Console, st: _Styles) -> None:
    """A fleet: how the rows combine the workers, and each worker's own verdict."""
    if analysis.combined is None or not analysis.fleet:
        return
    by = "worker and treatment cell" if analysis.combined.cells > 1 else "worker"
    _line(console, f"Workers: {analysis.combined.workers}; the tables above are stratified by {by} (van Elteren's test; "
                   f"medians, CIs and Δ% with each {by}'s level removed).", st.title)
    table = _table([("worker", "left"), ("order matters", "center"), ("significant", "left"), ("tested", "right"), ("corrected α", "right")], st)
    for w in analysis.workers:
        s = w.summary
        names = named(s.significant, s.several_metrics, MAX_WORKER_NAMES)
        table.add_row(
            Text(w.worker), _yes_no(w.order_matters), Text(names or NULL), f"{s.tested}",
            _p(w.alpha_corrected), style=st.significant if w.order_matters else "",
        )
    _print_table(console, table)
    sentence = workers_sentence(analysis)
    if sentence:
        _line(console, sentence)
    console.print()


def _fleet_medians(row: FleetRow) -> str:
    if len(row.medians) > MAX_FLEET_MEDIANS:
        known = [m for m in row.medians.values() if m is not None]
        return f"{_g(min(known), 4)} – {_g(max(known), 4)}" if known else NULL
    return " ".join(f"{w}={_g(m, 4)}" for w, m in row.medians.items())


def _fleet(d: Diagnostics, console: Console, st: _Styles) -> None:
    """Whether the workers ran the same software, and whether they measure the same thing."""
    if d.fleet is None:
        return
    _line(console, "Fleet: do the workers agree?", st.title)
    identity = d.identity
    if identity is None:
        _line(console, "Identity: no environment snapshots from two workers; whether they ran the same software cannot be checked.")
    elif identity.identical:
        _line(console, f"Identity: the {len(identity.workers)} workers ran the same software on the same kind of machine "
                       "(files, kernel, CPU and its settings, tool versions).")
    else:
        _line(console, f"Identity: the workers differ in {len(identity.differences)} respect{'s' if len(identity.differences) != 1 else ''}:", st.warning)
        table = _table([("what", "left"), ("values", "left")], st)
        for diff in identity.differences:
            groups: dict[str, list[str]] = {}
            for worker, value in diff.values.items():
                shown = "unknown" if value is None else str(value)
                if diff.what.startswith("file ") and value is not None:
                    shown = " / ".join(part[:19] for part in shown.split(" / "))  # sha256: and 12 hex digits
                groups.setdefault(shown, []).append(worker)
            table.add_row(Text(diff.what), Text("; ".join(f"{v} on {', '.join(ws)}" for v, ws in groups.items())))
        _print_table(console, table)
    if not d.fleet:
        _line(console, "Results by worker: no test was measured by two workers with enough values to compare.")
        console.print()
        return
    differing = [r for r in d.fleet if r.significant]
    _line(console, f"Results by worker (Kruskal-Wallis across workers, corrected over tests): {len(differing)} of {len(d.fleet)} tests differ.",
          st.warning if differing else "")
    if differing:
        table = _table([("test", "left"), ("metric", "left"), ("p adj", "right"), ("spread %", "right"), ("medians", "left"), ("outliers", "left")], st)
        for r in differing:
            table.add_row(Text(r.test), Text(r.metric), _p(r.p_adjusted), NULL if r.spread_pct is None else f"{r.spread_pct:.1f}",
                          Text(_fleet_medians(r)), Text(", ".join(r.outliers) or NULL))
        _print_table(console, table)
    console.print()


def _context_effects(analysis: Analysis, console: Console, st: _Styles) -> None:
    rows = analysis.context_effects
    if rows is None:
        return
    contexts = max((len(e.n) for e in rows), default=0)
    _line(console, f"Measurement context: does a result depend on it? (Kruskal-Wallis across {contexts} contexts, "
                   "corrected over tests; by dimension: tested on the context medians, * significant after correction)", st.title)
    table = _table([("test", "left"), ("metric", "left"), ("p adj", "right"), ("sig", "center"), ("spread %", "right"), ("by dimension", "left")], st)
    for e in rows:
        by = ", ".join(f"{d} p={_p(p)}{'*' if e.by_detail[d].get('significant') else ''}" for d, p in e.by.items())
        table.add_row(Text(e.test), Text(e.metric), _p(e.p_adjusted), _yes_no(e.significant),
                      NULL if e.spread_pct is None else f"{e.spread_pct:.1f}", Text(by or NULL), style=st.significant if e.significant else "")
    _print_table(console, table)
    console.print()


def _observer(analysis: Analysis, console: Console, st: _Styles) -> None:
    rows = analysis.observer
    if rows is None:
        return
    baseline = rows[0].baseline if rows else "the lightest level"
    shown = [e for e in rows if e.primary or e.significant]
    _line(console, f"Instrumentation (observer effect): each level against '{baseline}', corrected over the comparisons", st.title)
    table = _table([("test", "left"), ("metric", "left"), ("level", "left"), ("median", "right"), (f"median {baseline}", "right"),
                    ("effect %", "right"), ("p adj", "right"), ("sig", "center")], st)
    for e in shown:
        unit = _unit(analysis, e.metric)
        table.add_row(Text(e.test), Text(e.metric), Text(e.level), quantity(e.median_level, unit), quantity(e.median_baseline, unit), _pct(e.effect_pct),
                      _p(e.p_adjusted), _yes_no(e.significant), style=st.significant if e.significant else "")
    _print_table(console, table)
    if len(shown) < len(rows):
        _line(console, f"({len(rows) - len(shown)} rows of other metrics without a significant effect not shown; see --json)")
    console.print()


def _factorial(analysis: Analysis, console: Console, st: _Styles) -> None:
    rows = analysis.factorial
    if not rows:
        return
    if any(f.anova for f in rows):
        _anova(rows, console, st)
        return
    levels = ", ".join(f"{name} ({lv[0]} → {lv[1]})" for name, lv in rows[0].levels.items())
    _line(console, f"Factorial design: {levels}; effects q (Jain: half the change from low to high) with "
                   "their CI, and the allocation of variation", st.title)
    table = _table([("test", "left"), ("metric", "left"), ("term", "left"), ("effect q", "right"), ("CI", "right"), ("variation %", "right")], st)
    for f in rows:
        if f.result is None:
            table.add_row(Text(f.test), Text(f.metric), Text(NULL), NULL, NULL, Text(say(f.reason)))
            continue
        for t in f.result.terms:
            unit = _unit(analysis, f.metric)
            table.add_row(Text(f.test), Text(f.metric), Text(t.term), quantity(t.effect, unit), f"{quantity(t.ci[0], unit)} – {quantity(t.ci[1], unit)}",
                          NULL if t.variation_pct is None else f"{t.variation_pct:.1f}")
        error = f.result.error_pct
        table.add_row(Text(f.test), Text(f.metric), Text("error"), "", "", NULL if error is None else f"{error:.1f}")
    _print_table(console, table)
    console.print()


def _anova(rows: tuple[FactorialRow, ...], console: Console, st: _Styles) -> None:
    """A full factorial design with a factor of more than two levels: each term's share of the
    variation and its F test (Jain ch. 20-23)."""
    levels = ", ".join(f"{name} ({', '.join(lv)})" for name, lv in rows[0].levels.items())
    _line(console, f"Factorial design: {levels}; allocation of variation with an F test per term (ANOVA, Jain ch. 20-23; "
                   "p corrected over every term shown)", st.title)
    table = _table([("test", "left"), ("metric", "left"), ("term", "left"), ("df", "right"), ("F", "right"), ("p adj", "right"),
                    ("sig", "center"), ("variation %", "right")], st)
    for f in rows:
        if not isinstance(f.result, AnovaResult):
            table.add_row(Text(f.test), Text(f.metric), Text(NULL), NULL, NULL, NULL, NULL, Text(say(f.reason)))
            continue
        for t, p_adj, sig in zip(f.result.terms, f.p_adjusted, f.significant):
            table.add_row(Text(f.test), Text(f.metric), Text(t.term), str(t.df), _g(t.f, 4), _p(p_adj),
                          _yes_no(sig), NULL if t.variation_pct is None else f"{t.variation_pct:.1f}", style=st.significant if sig else "")
        error = f.result.error_pct
        table.add_row(Text(f.test), Text(f.metric), Text("error"), str(f.result.error_df), "", "", "", NULL if error is None else f"{error:.1f}")
    _print_table(console, table)
    console.print()


def _curves(analysis: Analysis, console: Console, st: _Styles) -> None:
    """Response curves of the primary metrics: per curve a table of each level's median [CI]
    per series, then one sentence per pair of series saying where they differ."""
    found = analysis.curves
    if found is None:
        return
    shown = [c for c in found.curves if c.primary]
    _line(console, f"Response curves: median [{found.ci_level:.0%} CI] per level and series; series compared per level by "
                   f"the ratio of medians, {found.correction.capitalize()} over levels and curves", st.title)
    groups: dict[tuple[object, ...], list[Any]] = {}
    for c in shown:
        groups.setdefault((c.test, c.metric, c.sweep, tuple(c.fixed.items())), []).append(c)
    for (test, metric, sweep, _), curves in groups.items():
        unit = f" ({curves[0].unit})" if curves[0].unit else ""
        _line(console, f"{metric}{unit} of {test} along {sweep}{fixed_text(curves[0].fixed)}")
        table = _table([(sweep, "right")] + [(series_name(c.series), "right") for c in curves], st)
        levels = list(dict.fromkeys(p.level for c in curves for p in c.points))
        at = [{p.level: p for p in c.points} for c in curves]
        for level in levels:
            cells = [_point_text(points.get(level), curves[0].unit) for points in at]
            table.add_row(str(level), *cells)
        _print_table(console, table)
    for rows in pairs(r for r in found.comparisons if r.primary):
        _line(console, f"  {curve_pair_sentence(rows)}", st.warning if any(r.better for r in rows) else "")
    others = len(found.curves) - len(shown)
    if others:
        _line(console, f"({others} curves of other metrics not shown; see --json)", st.dim)
    console.print()


def _point_text(point: Any, unit: str) -> str:
    if point is None:
        return NULL
    return interval(point.median, *(point.ci or (None, None)), unit)


def _unit(analysis: Analysis, metric: str) -> str:
    """A metric's unit, as its rows give it ("" when no row says)."""
    return next((v.unit for v in analysis.tests if v.metric == metric), "")


def _answer(analysis: Analysis, console: Console, st: _Styles) -> None:
    """The one-screen answer (report/words/answer.py): the verdict, failed tests, claims, the
    tests whose order matters and where from, and how it was decided."""
    print_lines(console, answer(analysis), st)
    console.print()


def print_lines(console: Console, lines: Sequence[Line], st: _Styles, indent: int = 0) -> None:
    """Lines of words (report/words/answer.py), each indented by its level and toned."""
    for line in lines:
        _line(console, "  " * (line.indent + indent) + line.text, st.tone(line.tone))


def _warnings(analysis: Analysis, console: Console, st: _Styles, everything: bool) -> None:
    """Every warning with --all; otherwise one line per kind, leaving out the notes on rows that
    are not shown (metrics outside the primary family)."""
    if everything:
        warnings = said(analysis.warnings, once=True)
        hidden = 0
    else:
        primary = {(v.test, v.metric) for v in analysis.tests if v.primary}
        shown = [w for w in analysis.warnings if not isinstance(w, OnTest) or (w.test, w.metric) in primary]
        hidden = len(analysis.warnings) - len(shown)
        warnings = grouped(shown)
    if warnings:
        _line(console, f"Warnings ({len(warnings)}):", st.warning)
        for w in warnings:
            _line(console, f"  - {w}", st.warning)
    if not everything:
        others = sum(1 for v in analysis.tests if not v.primary)
        more = [part for part in (count(others, "row") + " of other metrics" if others else "",
                                  "the diagnostics" if analysis.diagnostics is not None else "",
                                  count(hidden, "note") + " on other metrics" if hidden else "") if part]
        if more:
            _line(console, f"Also measured and checked: {', '.join(more)}: add --all, or see the report.", st.dim)


def render_analysis(analysis: Analysis, console: Console, *, everything: bool = False) -> None:
    """Print the analysis, the answer first: the verdict, failed tests, claims and the tests
    whose order matters (report/words/answer.py), a table per primary metric, a sequential
    experiment's looks, a fleet's per-worker verdicts, the context, observer and factorial
    analyses, the response curves, a fleet's identity and agreement, then the warnings, one
    line per kind. With `everything` (--all): also the paper-style tables, the metrics outside
    the primary family, every diagnostic and every warning in full."""
    st = _styles(console)
    _answer(analysis, console, st)
    _primary_tables(analysis, console, st)
    if everything:
        _paper_tables(analysis, console, st)
        _secondary_table(analysis, console, st)
    _sequential(analysis, console, st)
    _workers(analysis, console, st)
    for section in (_context_effects, _observer, _factorial, _curves):
        section(analysis, console, st)
    if analysis.diagnostics is not None:
        _fleet(analysis.diagnostics, console, st)
        if everything:
            _diagnostics(analysis.diagnostics, console, st)
    _warnings(analysis, console, st, everything)


def make_styles(console: Console) -> _Styles:
    """The styles a view shows on `console` (none off a colour terminal)."""
    return _styles(console)


def curves_section(analysis: Analysis, console: Console) -> None:
    """The response curves of a swept experiment (the section render_analysis prints)."""
    _curves(analysis, console, _styles(console))
