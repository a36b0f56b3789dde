"""The verdict of an analysis in one sentence, for the terminal, the HTML report and the
notebook API; and a fleet's per-worker verdicts in another.

The sentence names the tests, the correction and the thresholds so that a reader can check
what was concluded and how.
"""

from __future__ import annotations

from benchsage.analyze import summary as kinds
from benchsage.analyze.verdict import Analysis, Combined, TestVerdict
from benchsage.report.words.registry import count

# More significant names than this are summarised as "and N more".
MAX_NAMES = 5
CORRECTIONS = {"bonferroni": "Bonferroni", "holm": "Holm"}


def fmt(x: float) -> str:
    """Three significant digits, no trailing zeros: 0.05, 0.0167, 0.00333, 1.25e-05."""
    return f"{x:.3g}"


def name_of(v: TestVerdict, with_metric: bool) -> str:
    """A comparison by its test, and its metric when a test has several."""
    return f"{v.test} [{v.metric}]" if with_metric else v.test


def names(verdicts: tuple[TestVerdict, ...] | list[TestVerdict], with_metric: bool, most: int = MAX_NAMES, fmt_more: str = "{}") -> str:
    """'a, b, c and 2 more'."""
    shown = [name_of(v, with_metric) for v in verdicts[:most]]
    rest = len(verdicts) - len(shown)
    return ", ".join(shown) + (f" and {fmt_more.format(rest)} more" if rest else "")


def method(analysis: Analysis) -> str:
    """How significance was decided: 'Kruskal-Wallis, Bonferroni family-wise α = 0.05, corrected α = 0.0167'."""
    name = CORRECTIONS.get(analysis.correction, analysis.correction)
    test = "Kruskal-Wallis" if analysis.combined is None else f"van Elteren's test stratified by {_blocks(analysis.combined)}"
    text = f"{test}, {name} family-wise α = {fmt(analysis.alpha)}"
    if analysis.alpha_corrected is not None:
        label = "corrected α" if analysis.correction == "bonferroni" else "strictest corrected α"
        text += f", {label} = {fmt(analysis.alpha_corrected)}"
    return text


def _blocks(combined: Combined) -> str:
    """'3 workers', '2 treatment cells', '3 workers and 2 treatment cells'."""
    parts = ([count(combined.workers, "worker")] if combined.fleet else []) + (
        [count(combined.cells, "treatment cell")] if combined.cells > 1 else [])
    return " and ".join(parts)


def verdict_sentence(analysis: Analysis) -> str:
    """One sentence: whether the order of tests mattered, for which tests, by which criterion.

    "Order matters: 1 of 3 tests (./get_hits_test.sh) differ between fixed and random order
    (Kruskal-Wallis, Bonferroni family-wise α = 0.05, corrected α = 0.0167)."
    "No order effect detected in 3 tests (...)."  "No verdict: ..." when nothing was testable.
    """
    s = analysis.summary
    # Several primary metrics per test: count comparisons and name the metric too.
    unit = "comparison" if s.several_metrics else "test"
    if s.kind == kinds.NO_TRIALS:
        return "No verdict: the data holds no trials to compare."
    if s.kind == kinds.NO_PRIMARY:
        return "No verdict: no primary metric was compared (only metrics outside the correction family)."
    if s.kind == kinds.NONE_TESTED:
        return (
            f"No verdict: none of the {count(s.primary, unit)} could be tested "
            "(too few values in an arm or all values equal; see the warnings)."
        )
    untested_note = f"; {s.untested} more could not be tested (see the warnings)" if s.untested else ""
    if s.kind == kinds.ORDER_MATTERS:
        return (
            f"Order matters: {len(s.significant)} of {count(s.tested, unit)} "
            f"({names(s.significant, s.several_metrics)}) differ between fixed and random order "
            f"({method(analysis)}){untested_note}."
        )
    return f"No order effect detected in {count(s.tested, unit)} ({method(analysis)}){untested_note}."


def workers_sentence(analysis: Analysis) -> str | None:
    """For a fleet: the per-worker verdicts in one sentence; None for one worker.

    "Per worker (each corrected on its own): order matters on 1 of 3 workers (node3)."
    """
    if not analysis.fleet or not analysis.workers:
        return None
    n = len(analysis.workers)
    matters = [w.worker for w in analysis.workers if w.order_matters]
    if not matters:
        return f"Per worker (each corrected on its own): no order effect on any of the {count(n, 'worker')}."
    shown = ", ".join(matters[:MAX_NAMES]) + (f" and {len(matters) - MAX_NAMES} more" if len(matters) > MAX_NAMES else "")
    return f"Per worker (each corrected on its own): order matters on {len(matters)} of {count(n, 'worker')} ({shown})."
