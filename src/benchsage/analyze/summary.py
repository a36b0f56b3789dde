"""The verdict of an Analysis in one sentence, for the terminal and the HTML report.

Only the primary comparisons decide it (as `order_matters`); the sentence names the test, the
correction and the thresholds so that a reader can check what was concluded and how.
"""

from __future__ import annotations

from benchsage.analyze.verdict import Analysis, TestVerdict

# More significant names than this are summarised as "and N more".
MAX_NAMES = 5


def _fmt(x: float) -> str:
    """Three significant digits, no trailing zeros: 0.05, 0.0167, 0.00333, 1.25e-05."""
    return f"{x:.3g}"


def _name(v: TestVerdict, with_metric: bool) -> str:
    return f"{v.test} [{v.metric}]" if with_metric else v.test


def _names(verdicts: list[TestVerdict], with_metric: bool) -> str:
    shown = [_name(v, with_metric) for v in verdicts[:MAX_NAMES]]
    rest = len(verdicts) - len(shown)
    return ", ".join(shown) + (f" and {rest} more" if rest else "")


def _method(analysis: Analysis) -> str:
    """How significance was decided: 'Kruskal-Wallis, Bonferroni family-wise α = 0.05, corrected α = 0.0167'."""
    name = {"bonferroni": "Bonferroni", "holm": "Holm"}.get(analysis.correction, analysis.correction)
    test = "Kruskal-Wallis" if analysis.combined is None else f"van Elteren's test stratified by {analysis.combined.workers} workers"
    text = f"{test}, {name} family-wise α = {_fmt(analysis.alpha)}"
    if analysis.alpha_corrected is not None:
        label = "corrected α" if analysis.correction == "bonferroni" else "strictest corrected α"
        text += f", {label} = {_fmt(analysis.alpha_corrected)}"
    return text


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'}"


def verdict_sentence(analysis: Analysis) -> str:
    """One sentence: whether the order of tests mattered, for which tests, by which criterion.

    "Order matters: 1 of 3 tests (./get_hits_test.sh) differ between fixed and random order
    (Kruskal-Wallis, Bonferroni family-wise α = 0.05, corrected α = 0.0167)."
    "No order effect detected in 3 tests (...)."  "No verdict: ..." when nothing was testable.
    """
    primary = [v for v in analysis.tests if v.primary]
    tested = [v for v in primary if v.kw_p is not None]
    untested = len(primary) - len(tested)
    # Several primary metrics per test: count comparisons and name the metric too.
    several_metrics = len({v.test for v in primary}) != len(primary)
    unit = "comparison" if several_metrics else "test"

    if not analysis.tests:
        return "No verdict: the data holds no trials to compare."
    if not primary:
        return "No verdict: no primary metric was compared (only metrics outside the correction family)."
    if not tested:
        return (
            f"No verdict: none of the {_count(len(primary), unit)} could be tested "
            "(too few values in an arm or all values equal; see the warnings)."
        )
    untested_note = f"; {untested} more could not be tested (see the warnings)" if untested else ""
    significant = [v for v in tested if v.significant]
    if significant:
        return (
            f"Order matters: {len(significant)} of {_count(len(tested), unit)} "
            f"({_names(significant, several_metrics)}) differ between fixed and random order "
            f"({_method(analysis)}){untested_note}."
        )
    return f"No order effect detected in {_count(len(tested), unit)} ({_method(analysis)}){untested_note}."


def workers_sentence(analysis: Analysis) -> str | None:
    """For a fleet: the per-worker verdicts in one sentence; None for one worker.

    "Per worker (each corrected on its own): order matters on 1 of 3 workers (node3)."
    """
    if analysis.combined is None or not analysis.workers:
        return None
    n = len(analysis.workers)
    matters = [w.worker for w in analysis.workers if w.order_matters]
    if not matters:
        return f"Per worker (each corrected on its own): no order effect on any of the {_count(n, 'worker')}."
    shown = ", ".join(matters[:MAX_NAMES]) + (f" and {len(matters) - MAX_NAMES} more" if len(matters) > MAX_NAMES else "")
    return f"Per worker (each corrected on its own): order matters on {len(matters)} of {_count(n, 'worker')} ({shown})."
