"""The words of a declared claim "a is better than b": one sentence per comparison row, the
headline the terminal and the HTML report show for it.

The row gives the numbers and the decisions (analyze/treatments/comparisons.py); the sentence
names the winner and by how much, the test and its p-value, and where the winner holds: in each
order arm, across the contexts, a fleet's workers and the factor cells.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from benchsage.analyze.treatments import MIN_VALUES, ComparisonRow, StratumComparison
from benchsage.report.quantity import ratio, sig3
from benchsage.report.words.effects import factor, is_time

if TYPE_CHECKING:
    from benchsage.stats.compare import ContextSummary

METHOD_NAMES = {
    "mann-whitney": "Mann-Whitney",
    "touati:student-t": "Touati: Student t",
    "touati:welch-t": "Touati: Welch t",
    "touati:mann-whitney": "Touati: Mann-Whitney",
    "touati": "Touati",
}


def method_name(method: str) -> str:
    """A comparison's test as a reader knows it: "mann-whitney" -> "Mann-Whitney"."""
    return METHOD_NAMES.get(method, method)


def p_text(x: float | None) -> str:
    """A p-value in three significant digits, small ones as 1.2e-05 -> "1.20e-5"; "–" for none."""
    if x is None:
        return "–"
    if x >= 1e-3 or x == 0:
        return f"{x:.3g}"
    mantissa, exponent = f"{x:.2e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def comparison_sentence(row: ComparisonRow) -> str:
    """The headline of a claim, e.g. "o3 ran 1.07× faster than o2 [1.05, 1.10] (95% CI;
    Mann-Whitney p = 1.20e-5); holds in both orders; flips in 3 of 12 contexts"; without a
    test, the claim and why it could not be tested."""
    c = row.overall
    stats = _statistics(row)
    head = claim_text(row) + (f" ({'; '.join(stats)})" if stats else "")
    if c.p is None:
        return f"{head}: {c.reason}"
    return "; ".join([head, *where_it_holds(row)])


def _statistics(row: ComparisonRow) -> list[str]:
    """The interval's level and the test's p-value (adjusted too when the correction changed it)."""
    c = row.overall
    stats = []
    if c.ci is not None:
        stats.append(f"{c.level:.0%} CI")
    if c.p is not None:
        adjusted = f", adjusted {p_text(row.p_adjusted)}" if row.p_adjusted is not None and row.p_adjusted != c.p else ""
        stats.append(f"{method_name(c.method)} p = {p_text(c.p)}{adjusted}")
    return stats


def claim_text(row: ComparisonRow) -> str:
    """Who wins and by how much, a factor with its interval ("s20 ran 1.50× faster than s30
    [1.45, 1.55]"), or that no difference was found ("no significant difference between a and
    b on wall_time: a/b 0.977× [0.956, 0.999]") or tested."""
    c = row.overall
    time_like = is_time(row.unit) and not row.higher_is_better
    if row.better is None or c.ratio is None or c.ratio <= 0:
        what = "no significant difference" if c.p is not None else "no test"
        ratio_text = ""
        if c.ratio is not None and c.ratio > 0:
            ci = f" [{sig3(c.ci[0])}, {sig3(c.ci[1])}]" if c.ci is not None else ""
            ratio_text = f": {row.a}/{row.b} {ratio(c.ratio)}{ci}"
        return f"{what} between {row.a} and {row.b} on {row.metric}{ratio_text}"
    winner, loser = (row.a, row.b) if row.better == "a" else (row.b, row.a)
    # The winner against the loser: a factor above 1 in the winner's favour.
    r = c.ratio if row.better == "a" else 1.0 / c.ratio
    ci = c.ci if row.better == "a" or c.ci is None else (1.0 / c.ci[1], 1.0 / c.ci[0])
    size, _, interval = factor(r, ci, row.unit if time_like else "").partition(" [")
    bracket = f" [{interval}" if interval else ""
    if time_like:
        return f"{winner} ran {size} than {loser}{bracket}"
    return f"{winner}'s {row.metric} is {size} than {loser}'s{bracket}"


def where_it_holds(row: ComparisonRow) -> list[str]:
    """Where the winner holds: in the order arms, then across the contexts, the workers and
    the factor cells (each only when the data has them)."""
    out = _in_arms(row)
    out.extend(_across(row, row.contexts, row.per_context, "contexts", "in"))
    out.extend(_across(row, row.workers, row.per_worker, "workers", "on"))
    out.extend(_across(row, row.factor_cells, row.per_factor_cell, "factor cells", "in"))
    return out


def _in_arms(row: ComparisonRow) -> list[str]:
    """Whether the winner is significant in each order arm on its own (nothing without a winner)."""
    if row.better is None or not row.holds_in:
        return []
    held = [arm for arm, ok in row.holds_in.items() if ok]
    if len(held) == len(row.holds_in):
        return ["holds in both orders" if len(held) == 2 else f"holds in the {held[0]} order"]
    if held:
        missing = [arm for arm in row.holds_in if arm not in held]
        return [f"holds in the {held[0]} order only, not significant in the {missing[0]} order"]
    return ["not significant in either order on its own"]


def _across(row: ComparisonRow, s: ContextSummary | None, per: Sequence[StratumComparison], noun: str, prep: str) -> list[str]:
    """How the claim fares across the strata `s` counts (contexts, a fleet's workers or the
    factor cells); nothing without strata."""
    if s is None or not s.n:
        return []
    along = flip_text(row, s)
    if all(c.comparison.p is None for c in per):
        return [f"not testable within the {s.n} {noun} (fewer than {MIN_VALUES} values of a test in each)", *along]
    return [*_strata_counts(row, s, noun, prep), *along]


def flip_text(row: ComparisonRow, s: ContextSummary) -> list[str]:
    """The flip along a dimension, its levels and their winners: "flips with env_bytes: o3
    better at 0-4200, o2 at 5600-9800" (nothing without one)."""
    name = s.flip_dimension
    if name is None:
        return []
    dim = next(d for d in s.by if d.dimension == name)
    sides = [(side, test, [lv.level for lv in dim.levels if lv.better == side]) for side, test in (("a", row.a), ("b", row.b))]
    if row.better == "b":
        sides.reverse()
    (_, first, first_levels), (_, second, second_levels) = sides
    return [f"flips with {name}: {first} better at {', '.join(first_levels)}, {second} at {', '.join(second_levels)}"]


def _strata_counts(row: ComparisonRow, s: ContextSummary, noun: str, prep: str) -> list[str]:
    """Where each test wins among the strata themselves."""
    if row.better is not None:
        won = s.a_better if row.better == "a" else s.b_better
        lost = s.b_better if row.better == "a" else s.a_better
        if lost:
            return [f"flips {prep} {lost} of {s.n} {noun}"]
        if won == s.n:
            return [f"holds {prep} all {s.n} {noun}"]
        if won == 0:
            return [f"undecided {prep} each of the {s.n} {noun}"]
        return [f"holds {prep} {won} of {s.n} {noun}, undecided {prep} {s.undecided}"]
    if s.a_better and s.b_better:
        return [f"flips: {row.a} better {prep} {s.a_better} and {row.b} {prep} {s.b_better} of {s.n} {noun}"]
    return [f"{row.a} better {prep} {s.a_better}, {row.b} {prep} {s.b_better}, undecided {prep} {s.undecided} of {s.n} {noun}"]
