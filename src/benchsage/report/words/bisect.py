"""The words of a bisect search: its answer in one sentence, each probe's verdict, the method."""

from __future__ import annotations

from benchsage.analyze.bisect import BisectResult
from benchsage.design.bisect import BUILD_FAILED


def short(commit: str | None) -> str:
    return commit[:12] if commit else "-"


def answer(r: BisectResult) -> str:
    """The search's answer, one sentence."""
    if not r.change:
        return (f"No change between good and bad: {r.metric} of {r.test} moved by less than {r.min_effect:g} % "
                f"(bad / good {_ratio(r.bad_vs_good.ratio_to_good, r.bad_vs_good.ci)}, {r.bad_vs_good.runs} runs).")
    if r.first_bad is not None:
        where = ""
        if r.changed_on and r.unchanged_on:
            where = (f" The change shows on {', '.join(r.changed_on)} only, not on {', '.join(r.unchanged_on)} "
                     "(95 % intervals per worker).")
        return (f"First bad commit: {short(r.first_bad)} {r.subject!r}: {r.metric} of {r.test} {_effect(r)} against good "
                f"(parent {short(r.parent)}).{where}")
    if r.range is not None:
        return (f"Undecided: the first bad commit is one of {r.range_size} commits from {short(r.range[0])} to "
                f"{short(r.range[1])}; the probes between them failed to build or stayed undecided at their most runs.")
    return "Undecided."


def _effect(r: BisectResult) -> str:
    if r.effect_pct is None:
        return "changed"
    lo, hi = r.ci
    ci = f" [{lo:+.1f} %, {hi:+.1f} %]" if lo is not None and hi is not None else ""
    return f"{r.effect_pct:+.1f} %{ci}"


def _ratio(m: float, ci: tuple[float | None, float | None]) -> str:
    lo, hi = ci
    return f"{m:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else "")


def ratio_text(m: float, ci: tuple[float | None, float | None]) -> str:
    return _ratio(m, ci)


def skipped_line(commit: str, why: str, last_line: str) -> str:
    if why == BUILD_FAILED:
        return f"skipped {short(commit)}: its build failed ({last_line})"
    return f"skipped {short(commit)}: undecided at its most runs"


def shared_reset(roles: tuple[str, ...], test: str) -> str:
    """The note for a search whose reset runs on role hosts other than the test's."""
    return (f"note: the reset runs on {', '.join(roles)} once per run, in bad's copy: whatever it starts there serves good's, "
            f"bad's and the probe's trials alike, so a change there shows only through what test {test!r} runs itself, in each "
            "commit's copy")


def method(r: BisectResult) -> str:
    looks = ", ".join(str(p) for p in r.points)
    return (f"bisection over {r.candidates} first-parent commits; each probe run with good and bad in one random order per run, "
            f"looks at {looks} runs; a probe is bad when its within-run log ratio to good is shifted towards bad, good when its "
            f"ratio to bad is shifted towards good, and one shown to be both is bad only beyond {r.min_effect:g} % (one-sided "
            f"exact Wilcoxon signed-rank tests, Pocock-type spending over the looks); the good-bad check and ceil(log2 n) probes "
            f"share 90 % of alpha = {r.alpha:g}, later probes halve the rest, so P(naming a wrong commit) <= alpha; a change needs "
            f"at least {r.min_effect:g} %")


HEADERS = ("commit", "subject", "verdict", "runs", "ratio to good [95 % CI]")
