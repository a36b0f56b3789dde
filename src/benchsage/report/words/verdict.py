"""The verdict of an analysis in one sentence, for the terminal, the HTML report and the
notebook API; and a fleet's per-worker verdicts in another.

The sentence says first which tests failed, then whether the order of tests mattered, and a
"no" only as far as the data could have said "yes": how large an effect it would have found, or
why it could not have found one. It names the tests, the correction and the thresholds so that a
reader can check what was concluded and how.
"""

from __future__ import annotations

from typing import Sequence

from benchsage.analyze import summary as kinds
from benchsage.analyze.summary import Summary
from benchsage.analyze.verdict import Analysis, Combined, FailedTest, TestVerdict
from benchsage.report.quantity import percent, ratio
from benchsage.report.words.registry import count
from benchsage.vocabulary import MIN_RUNS_PER_ARM, OK

# More significant names than this are summarised as "and N more".
MAX_NAMES = 5
CORRECTIONS = {"bonferroni": "Bonferroni", "holm": "Holm"}
POWER = 0.8  # the power of min_detectable_pct (analyze: the detectable shift)


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


# How a trial that did not succeed ended, by its status.
FAILURE_VERBS = {"failed": "failed", "timeout": "timed out", "bad-output": "gave output its metrics could not be read from"}


def failed_text(f: FailedTest) -> str:
    """"typo: 10 of 10 trials failed: exit status 127: /bin/sh: 1: pyhton3: not found": how many
    trials did not succeed and how, the first one's reason and the last line of its output."""
    bad = [(status, n) for status, n in f.statuses if status != OK]
    if len(bad) == 1:
        head = f"{f.test}: {f.failed} of {count(f.trials, 'trial')} {FAILURE_VERBS.get(bad[0][0], bad[0][0])}"
    else:
        head = f"{f.test}: {f.failed} of {count(f.trials, 'trial')} did not succeed ({', '.join(f'{n} {s}' for s, n in bad)})"
    why = [part for part in (f.reason, f.output_tail.splitlines()[-1] if f.output_tail else None) if part]
    return head + (": " + ": ".join(why) if why else "")


def failures_sentence(failed: Sequence[FailedTest]) -> str:
    """"Tests failed: typo (10 of 10 trials), slow (6 of 10 trials)."""
    shown = ", ".join(f"{f.test} ({f.failed} of {count(f.trials, 'trial')})" for f in failed[:MAX_NAMES])
    more = f" and {len(failed) - MAX_NAMES} more" if len(failed) > MAX_NAMES else ""
    return f"Tests failed: {shown}{more}."


def bound(rows: Sequence[TestVerdict]) -> str | None:
    """The largest order effect that could have gone unseen in `rows`: "7.1% (80% power)", or a
    range over the rows; None when no row knows it."""
    known = [v.min_detectable_pct for v in rows if v.min_detectable_pct is not None]
    if not known or len(known) < len(rows):
        return None
    largest = max(known)
    # Past a doubling a shift reads as a factor, as the effects themselves do (2.36×, not 136%).
    size = percent(largest) if largest < 100 else ratio(1.0 + largest / 100.0)
    return f"{size} ({POWER:.0%} power)"


def _arm_sizes(rows: Sequence[TestVerdict]) -> str:
    """"at 3 values per arm", "at 3-4 values per arm": the smaller arm of each row."""
    sizes = sorted({min(v.n_fixed, v.n_random) for v in rows})
    low, high = sizes[0], sizes[-1]
    runs = str(low) if low == high else f"{low}-{high}"
    return f"at {runs} value{'s' if high != 1 else ''} per arm"


def blind_reason(rows: Sequence[TestVerdict], analysis: Analysis) -> str:
    """Why `rows` could not have shown an order effect, in a clause: too few values for a p-value,
    p-values that cannot reach the corrected level, or values all equal."""
    few = [v for v in rows if v.kw_p is None and min(v.n_fixed, v.n_random) < MIN_RUNS_PER_ARM]
    weak = [v for v in rows if v.least_p is not None and v not in few]
    parts = []
    if few:
        parts.append(f"{_arm_sizes(few)} Kruskal-Wallis gives no p-value (it needs {MIN_RUNS_PER_ARM})")
    if weak:
        least = min(v.least_p for v in weak if v.least_p is not None)
        needs = f" (needs ≤ {fmt(analysis.alpha_corrected)})" if analysis.alpha_corrected is not None else ""
        parts.append(f"{_arm_sizes(weak)} p ≥ {fmt(least)} at best{needs}")
    rest = len(rows) - len(few) - len(weak)
    if rest:
        parts.append(f"{count(rest, 'comparison')} without a usable p-value (all values equal, or nothing to compare)")
    return "; ".join(parts)


def order_sentence(analysis: Analysis, s: Summary) -> str:
    """Whether the order mattered, among the tests that ran, without the method."""
    unit = "comparison" if s.several_metrics else "test"
    if s.kind == kinds.NO_TRIALS or (s.kind == kinds.NONE_TESTED and not s.blind):
        return "No verdict: the data holds no trials to compare." if s.kind == kinds.NO_TRIALS else \
            f"No verdict: none of the {count(s.primary, unit)} could be tested."
    if s.kind == kinds.NO_PRIMARY:
        return "No verdict: no primary metric was compared (only metrics outside the correction family)."
    if s.significant:
        blind = f"; {count(len(s.blind), unit)} could not have shown one" if s.blind else ""
        return (f"Order matters: {len(s.significant)} of {count(s.tested, unit)} "
                f"({names(s.significant, s.several_metrics)}) differ between fixed and random order{blind}")
    if not s.bounded:
        return f"Too few runs to detect an order effect: {blind_reason(s.blind, analysis)}; see `benchsage plan --pilot`"
    limit = bound(s.bounded)
    head = (f"No order effect larger than {limit} in {count(len(s.bounded), unit)}" if limit is not None
            else f"No order effect detected in {count(len(s.bounded), unit)}")
    if s.blind:
        head += f"; {count(len(s.blind), unit)} could not have shown one: {blind_reason(s.blind, analysis)}"
    return head


def _blocks(combined: Combined) -> str:
    """'3 workers', '2 treatment cells', '3 workers and 2 treatment cells'."""
    parts = ([count(combined.workers, "worker")] if combined.fleet else []) + (
        [count(combined.cells, "treatment cell")] if combined.cells > 1 else [])
    return " and ".join(parts)


def verdict_sentence(analysis: Analysis) -> str:
    """One sentence: which tests failed, whether the order of tests mattered for the others and
    for which, or how large an effect could have gone unseen, and by which criterion.

    "Order matters: 1 of 3 tests (./get_hits_test.sh) differ between fixed and random order
    (Kruskal-Wallis, Bonferroni family-wise α = 0.05, corrected α = 0.0167)."
    "No order effect larger than 7.1% (80% power) in 3 tests (...)."
    "Too few runs to detect an order effect: 3 values per arm give no p-value (...); see `benchsage plan --pilot`."
    """
    s = analysis.summary
    text = order_sentence(analysis, s)
    if s.significant or s.bounded:
        text += f" ({method(analysis)})"
    text = text.rstrip(".") + "."
    if s.failed:
        return f"{failures_sentence(s.failed)} {text}"
    return text


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
