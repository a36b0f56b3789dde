"""decide = "verdict": a sequential experiment stops at the first look where its verdict is
settled (an effect in some test, or every test decided no-effect), leaving the other tests
undecided; the plan's meta and the analysis JSON carry the rule, the verdict and why it stopped."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchsage.design.sequential import SequentialPlan
from benchsage.stats.sequential import (DECIDED_EFFECT, DECIDED_NO_EFFECT, RULES, UNDECIDED, Look, SequentialDesign, decide_step,
                                        settled, stops)
from benchsage.stats.ranksum import mann_whitney_z
from benchsage.vocabulary import DECIDE_RULES


def _carryover(n: int, seed: int = 3) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The issue's experiment: a victim slowed by its predecessor in every fixed-order run (never
    in these random ones), a test with 10 % noise, and a quiet one."""
    rng = np.random.default_rng(seed)
    return {
        "victim": (rng.normal(150, 1, n), rng.normal(100, 1, n)),
        "noisy": (rng.normal(100, 10, n), rng.normal(100, 10, n)),
        "quiet": (rng.normal(100, 0.5, n), rng.normal(100, 0.5, n)),
    }


def _run(d: SequentialDesign, data: dict) -> tuple[Look, ...]:
    return d.run([{t: (f[:p], r[:p]) for t, (f, r) in data.items()} for p in d.look_points()])


def test_settled_and_stops_on_a_batch_of_experiments() -> None:
    U, E, N = UNDECIDED, DECIDED_EFFECT, DECIDED_NO_EFFECT
    state = np.array([[U, U, U], [E, U, U], [N, N, U], [N, N, N], [E, N, N], [N, E, U]])
    np.testing.assert_array_equal(settled(state), [U, E, U, N, E, E])
    np.testing.assert_array_equal(stops(state, "each"), [False, False, False, True, True, False])
    np.testing.assert_array_equal(stops(state, "verdict"), [False, True, False, True, True, True])
    assert RULES == DECIDE_RULES  # stats/ imports nothing of benchsage: the spec's words, said twice
    with pytest.raises(ValueError, match="unknown rule 'first'"):
        stops(state, "first")
    with pytest.raises(ValueError, match="unknown rule 'first'"):
        SequentialDesign(30, 3, rule="first")


def test_verdict_stops_at_the_look_that_found_the_effect_each_runs_on() -> None:
    data = _carryover(30)
    each = _run(SequentialDesign(30, 3, min_effect=5.0), data)
    verdict = _run(SequentialDesign(30, 3, min_effect=5.0, rule="verdict"), data)
    # At 10 runs per arm no test can cross (|z| <= 3.78 < c_1); at 20 the victim crosses. The
    # noisy test's CI of the shift is wider than +-5 % then: "each" goes on to 30 and still
    # cannot decide it; "verdict" stops at 20.
    assert [lk.runs for lk in each] == [10, 20, 30] and each[-1].decisions()["noisy"] is None
    assert [lk.runs for lk in verdict] == [10, 20] and verdict[-1].stop and not verdict[0].stop
    final = verdict[-1].decisions()
    assert final["victim"] == "effect" and final["noisy"] is None and verdict[-1].verdict == "effect"
    victim = {t.test: t for t in verdict[-1].tests}["victim"]
    assert victim.decided_at_runs == 20
    # The looks up to the stop are the same under both rules: the rule only ends the experiment.
    assert verdict[0] == each[0] and verdict[1].tests == each[1].tests and not each[1].stop


def test_verdict_stops_when_every_test_is_no_effect_and_not_before() -> None:
    rng = np.random.default_rng(4)
    n = 40
    # "slow" is shown within +-5 % only with more runs than "fast": with one decided no-effect
    # and the other undecided, the verdict is not settled and the experiment goes on.
    data = {"fast": (rng.normal(100, 0.5, n), rng.normal(100, 0.5, n)), "slow": (rng.normal(100, 4, n), rng.normal(100, 4, n))}
    d = SequentialDesign(n, 4, min_effect=5.0, rule="verdict")
    looks = _run(d, data)
    each = _run(SequentialDesign(n, 4, min_effect=5.0), data)
    assert [lk.runs for lk in looks] == [lk.runs for lk in each]
    assert looks[-1].verdict == "no-effect" and looks[-1].decided == 2 and looks[-1].runs < n
    partial = [lk for lk in looks if lk.decided == 1]
    assert partial and all(not lk.stop and lk.verdict is None for lk in partial)


def test_the_plan_records_the_rule_and_the_summary_says_why_it_stopped() -> None:
    plan = SequentialPlan(30, 3, 1, 0.05, "bonferroni", 5.0, "verdict")
    meta = json.loads(json.dumps(plan.to_meta()))
    assert meta["decide"] == "verdict" and SequentialPlan.from_meta(meta) == plan
    old = {k: v for k, v in meta.items() if k != "decide"}  # a journal written before `decide`
    assert SequentialPlan.from_meta(old).decide == "each"
    assert plan.design.rule == "verdict"
    data = {(name, "wall_time"): pair for name, pair in _carryover(30).items()}
    looks = plan.design.run([{t: (f[:p], r[:p]) for t, (f, r) in data.items()} for p in plan.points])
    summary = plan.summary(looks)
    assert summary["stopped_at_runs"] == 20 and summary["decide"] == "verdict" and summary["verdict"] == "effect"
    assert summary["stopped_because"] == "verdict-settled"
    assert {"test": "victim", "metric": "wall_time"} not in summary["undecided"]
    assert {"test": "noisy", "metric": "wall_time"} in summary["undecided"]
    assert plan.decisions(looks)[("noisy", "wall_time")] == (None, None)
    json.dumps(summary, allow_nan=False)
    # The same data under "each": to the last look; then no stop reason before it.
    each = SequentialPlan(30, 3, 1, 0.05, "bonferroni", 5.0)
    looks = each.design.run([{t: (f[:p], r[:p]) for t, (f, r) in data.items()} for p in each.points])
    summary = each.summary(looks)
    assert summary["stopped_because"] == "last-look" and summary["decide"] == "each" and summary["verdict"] == "effect"
    assert each.summary(looks[:2])["stopped_because"] is None and each.summary([])["verdict"] is None


@pytest.mark.parametrize("correction", ["bonferroni", "holm"])
def test_family_wise_error_of_verdict_under_no_effect_small_simulation(correction: str) -> None:
    """1,500 order-free experiments of 5 tests, 4 looks up to 20 runs per arm, whole procedure
    (no-effect decisions and the verdict's stop included): the family-wise error is at most
    that of "each" in every experiment, and near or below alpha."""
    rng = np.random.default_rng(15)
    reps, m, n = 1500, 5, 20
    x = 100 * (1 + 0.02 * rng.standard_normal((reps, m, 2, n)))
    d = SequentialDesign(n, 4, correction=correction, rule="verdict")
    state = {rule: np.zeros((reps, m), int) for rule in ("each", "verdict")}
    stopped = {rule: np.zeros(reps, bool) for rule in state}
    zs = []
    for k, p in enumerate(d.look_points()):
        zs.append(np.abs(mann_whitney_z(x[:, :, 0, :p], x[:, :, 1, :p]).z))
        # a coarse no-effect stand-in: |z| small; the rule only needs some no-effect decisions
        within = zs[-1] < 0.5
        for rule in state:
            after, _ = decide_step(d, k, np.stack(zs, axis=2), within, state[rule])
            state[rule] = np.where(stopped[rule][:, None], state[rule], after)
            stopped[rule] |= stops(state[rule], rule)
    errors = {rule: (s == DECIDED_EFFECT).any(axis=1) for rule, s in state.items()}
    assert not (errors["verdict"] & ~errors["each"]).any()
    assert errors["verdict"].mean() <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)
    assert stopped["verdict"].sum() >= stopped["each"].sum() and stopped["verdict"].any()
