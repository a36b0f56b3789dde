"""The words of sequential stopping: the rule an experiment stops on (`benchsage plan`), why it
stopped (the terminal and the HTML report) and which tests it left undecided. The facts come
from the JSON's "sequential" object (design/sequential.py). The progress display of `run` says
its looks in execute/sequential.py, which report/ lies downstream of.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from benchsage.vocabulary import DECIDE_VERDICT, STOPPED_DECIDED, STOPPED_LAST_LOOK, STOPPED_VERDICT

MAX_UNDECIDED = 5  # undecided tests named up to this many, then "and N more"


def stop_rule(decide: str, min_effect: float) -> str:
    """What the first look that ends the experiment must find: 'every test is decided (...)'."""
    if decide == DECIDE_VERDICT:
        return (f"the experiment's verdict is settled (an order effect in some test, or every test shown smaller than "
                f"{min_effect:g}%; tests undecided then are reported undecided)")
    return f"every test is decided (an order effect, or one shown smaller than {min_effect:g}%)"


def undecided_names(entries: Sequence[Any]) -> list[str]:
    """Entries of the JSON's sequential.undecided ({"test", "metric"}) as a reader names them:
    the test, and its metric when a test has several in the list."""
    tests = [e["test"] if isinstance(e, Mapping) else e for e in entries]
    several = len(set(tests)) < len(tests)
    return [f"{e['test']} [{e['metric']}]" if several and isinstance(e, Mapping) else str(t) for e, t in zip(entries, tests)]


def named(names: Sequence[str], most: int = MAX_UNDECIDED) -> str:
    """'a, b, c and 2 more'."""
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def settled_reason(verdict: str | None, effects: Sequence[str], undecided: Sequence[str]) -> str:
    """Why an experiment with decide = "verdict" stopped: 'the verdict is settled: an order
    effect in query (2 tests undecided: a, c)'."""
    if verdict == "effect":
        what = f"an order effect in {named(effects)}" if effects else "an order effect"
    else:
        what = "no order effect worth finding in any test"
    left = f" ({len(undecided)} test{'s' if len(undecided) != 1 else ''} undecided: {named(undecided)})" if undecided else ""
    return f"the verdict is settled: {what}{left}"


def stopped_reason(seq: Mapping[str, Any], effects: Sequence[str]) -> str:
    """Why an experiment that stopped early did: every test decided, or its verdict settled."""
    if seq.get("stopped_because") == STOPPED_VERDICT:
        undecided = undecided_names(seq.get("undecided") or ())
        return settled_reason(seq.get("verdict"), effects, undecided)
    return "every test is decided"


def stopped_because(code: str) -> str:
    """The JSON's sequential.stopped_because in words."""
    return {STOPPED_VERDICT: "the verdict was settled", STOPPED_DECIDED: "every test was decided",
            STOPPED_LAST_LOOK: "the most runs were carried out"}.get(code, code)


def stopping_note(decide: str | None) -> str:
    """The HTML report's note on how a sequential experiment decides when to stop."""
    if decide == DECIDE_VERDICT:
        how = ("stopped once its verdict was settled: an order effect in some test (across the efficacy boundary; the "
               "family-wise error is controlled over tests and looks), or no effect worth finding in any test (each "
               "interval of the shift lies within ± min_effect %); tests not decided by then are undecided")
    else:
        how = ("stopped once every test was decided: an order effect (across the efficacy boundary; the family-wise error "
               "is controlled over tests and looks) or no effect worth finding (the interval of the shift lies within "
               "± min_effect %)")
    return f"The experiment looked at its data as it ran and {how}. Runs are per arm on each worker."


def html_stopping(seq: Mapping[str, Any], effects: Sequence[str], undecided: int) -> str:
    """Where the experiment stopped, in words: early (why), at the most runs, or not yet."""
    stopped, most = seq.get("stopped_at_runs"), seq.get("max_runs")
    at_most = f" (at most {most:,} runs per arm)" if most is not None else ""
    if stopped is None:
        waits = "settled the verdict" if seq.get("decide") == DECIDE_VERDICT else "decided every test"
        return f"not stopped: no look has {waits} yet{at_most}"
    if seq.get("stopped_because") == STOPPED_VERDICT:
        early = most is None or stopped < most
        where = f"stopped early at {stopped:,} runs per arm{at_most}" if early else f"stopped at the most runs, {stopped:,} per arm"
        return f"{where}: {stopped_reason(seq, effects)}"
    if most is not None and stopped >= most:
        left = f"; {undecided:,} test{'s' if undecided != 1 else ''} undecided" if undecided else ""
        return f"ran to the most runs, {most:,} per arm{left}"
    return f"stopped early at {stopped:,} runs per arm{at_most}: every test decided"
