"""The design and its decisions: look points, input errors, looks at other runs than planned, the
fixed test as the one-look case, Holm as closed testing, decided tests stay decided, no-effect,
the vectorised core, the family-wise error under no effect, a fleet's looks."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from benchsage.stats import adjust
from benchsage.stats.ranksum import mann_whitney_z
from benchsage.stats.sequential import DECIDED_EFFECT, DECIDED_NO_EFFECT, UNDECIDED, Look, SequentialDesign, alpha_spending, decide_step, spending_boundaries
from benchsage.stats.shift import shift_ci


def test_look_points_are_evenly_spaced_and_end_at_max_runs():
    assert SequentialDesign(50, 5).look_points() == (10, 20, 30, 40, 50)
    assert SequentialDesign(10, 3).look_points() == (4, 7, 10)
    assert SequentialDesign(7, 7).look_points() == (1, 2, 3, 4, 5, 6, 7)
    assert SequentialDesign(20, 1).look_points() == (20,)
    assert SequentialDesign(50, 5).information() == (0.2, 0.4, 0.6, 0.8, 1.0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_runs": 5, "looks": 6}, "looks"),
        ({"max_runs": 5, "looks": 0}, "looks"),
        ({"max_runs": 0, "looks": 1}, "max_runs"),
        ({"max_runs": 10, "looks": 2, "min_effect": 0}, "min_effect"),
        ({"max_runs": 10, "looks": 2, "min_effect": -1.0}, "min_effect"),
        ({"max_runs": 10, "looks": 2, "min_effect": float("nan")}, "min_effect"),
        ({"max_runs": 10, "looks": 2, "alpha": 1.0}, "alpha"),
        ({"max_runs": 10, "looks": 2, "correction": "sidak"}, "correction"),
        ({"max_runs": 10, "looks": 2, "spending": "linear"}, "spending"),
        ({"max_runs": 10.5, "looks": 2}, "max_runs"),
    ],
)
def test_design_input_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SequentialDesign(**kwargs)


def test_decide_input_errors():
    d = SequentialDesign(20, 2)
    good = {"a": (np.arange(10.0), np.arange(10.0) + 0.5)}
    with pytest.raises(ValueError, match="look must be"):
        d.decide(2, good, ())
    with pytest.raises(ValueError, match="earlier looks"):
        d.decide(1, good, ())
    with pytest.raises(ValueError, match="more than the 10 runs"):
        d.decide(0, {"a": (np.arange(11.0), np.arange(10.0))})
    with pytest.raises(ValueError, match="finite"):
        d.decide(0, {"a": (np.array([1.0, np.nan]), np.arange(10.0))})
    with pytest.raises(ValueError, match="no tests"):
        d.decide(0, {})
    first = d.decide(0, good)
    with pytest.raises(ValueError, match="family must stay the same"):
        d.decide(1, {"b": (np.arange(20.0), np.arange(20.0))}, [first])
    with pytest.raises(ValueError, match="spending"):
        spending_boundaries([0.5, 1.0], 0.05, "linear")
    with pytest.raises(ValueError, match="increase strictly"):
        spending_boundaries([0.5, 0.5, 1.0], 0.05)


def _exit_probability(critical, t) -> float:
    """P(|Z_k| >= c_k at some look) under no effect, Z_1..Z_K of the canonical joint
    distribution at information fractions t (scipy's multivariate normal)."""
    tt, c = np.array(t), np.array(critical)
    cov = np.sqrt(np.minimum.outer(tt, tt) / np.maximum.outer(tt, tt))
    mvn = sps.multivariate_normal(mean=np.zeros(len(t)), cov=cov, abseps=1e-9, releps=1e-9, maxpts=2_000_000, seed=1)
    return 1.0 - mvn.cdf(c, lower_limit=-c)


@pytest.mark.parametrize("correction", ["bonferroni", "holm"])
def test_looks_at_other_runs_than_planned_keep_the_error_at_alpha(correction):
    """3 workers of 7 runs per arm, 5 looks: the plan's looks fall at 5, 9, 13, 17, 21 runs
    per arm over all workers, but each worker's share is rounded down (1, 3, 4, 5, 7 runs), so
    the looks analyse 3, 9, 12, 15, 21. Boundaries at the planned fractions would make the
    family-wise error 0.0523; at the fractions taken it is alpha."""
    d = SequentialDesign(21, 5, correction=correction)
    taken = (3, 9, 12, 15, 21)
    t = [n / 21 for n in taken]
    assert _exit_probability(d.critical(1), t) == pytest.approx(0.0523, abs=2e-4)
    assert _exit_probability(d.critical(1, information=t), t) == pytest.approx(0.05, abs=3e-6)
    rng = np.random.default_rng(21)
    data = {name: (rng.normal(100, 1, 21), rng.normal(100, 1, 21)) for name in ("a", "b")}
    looks: list[Look] = []
    for k, n in enumerate(taken):
        look = d.decide(k, {name: (f[:n], r[:n]) for name, (f, r) in data.items()}, looks, runs=n)
        assert (look.runs, look.information) == (n, n / 21)
        assert all(x.critical == d.critical(2, information=t)[k] for x in look.tests)
        assert look.alpha_spent == pytest.approx(2 * float(alpha_spending(n / 21, 0.025)), rel=1e-12)
        looks.append(look)
        if look.stop:
            break
    assert looks[-1].stop and (looks[-1].decided == 2 or looks[-1].alpha_spent == 0.05)
    # Looks at the planned runs are the planned design, boundaries and all.
    planned = d.decide(0, {name: (f[:5], r[:5]) for name, (f, r) in data.items()})
    assert planned == d.decide(0, {name: (f[:5], r[:5]) for name, (f, r) in data.items()}, runs=5)
    assert planned.tests[0].critical == d.critical(2)[0] and planned.information == 5 / 21
    first = d.decide(0, {name: (f[:3], r[:3]) for name, (f, r) in data.items()}, runs=3)
    with pytest.raises(ValueError, match="adds nothing to look 0 at 3"):
        d.decide(1, {name: (f[:3], r[:3]) for name, (f, r) in data.items()}, [first], runs=3)
    with pytest.raises(ValueError, match="more than the 3 runs per arm of look 0"):
        d.decide(0, {name: (f[:4], r[:4]) for name, (f, r) in data.items()}, runs=3)
    with pytest.raises(ValueError, match="runs must be an integer in 1..21"):
        d.decide(0, data, runs=22)


@pytest.mark.parametrize("correction", ["bonferroni", "holm"])
def test_one_look_gives_the_decisions_of_the_fixed_test(correction):
    """With one look the procedure is benchsage's fixed analysis: scipy's Mann-Whitney p (no
    continuity correction) at alpha / m, or Holm's step-down on the same p-values."""
    rng = np.random.default_rng(6)
    alpha = 0.05
    for rep in range(40):
        m = int(rng.integers(1, 9))
        n = int(rng.integers(5, 40))
        shifts = rng.choice([0.0, 0.3, 0.6, 1.0], size=m)
        data = {f"t{j}": (rng.normal(shifts[j], 1, n), rng.normal(0, 1, n)) for j in range(m)}
        d = SequentialDesign(n, 1, alpha=alpha, correction=correction, min_effect=1e-9)
        look = d.decide(0, data)
        p = np.array([sps.mannwhitneyu(f, r, use_continuity=False, method="asymptotic").pvalue for f, r in data.values()])
        expected = adjust(p, correction, alpha).reject
        got = np.array([t.decided == "effect" for t in look.tests])
        np.testing.assert_array_equal(got, expected)
        assert look.stop and look.alpha_spent == alpha


def _closed_testing(abs_z, design):
    """Closed testing literally: H_J (J a set of tests) is rejected by look k when some j in J
    has |z_{j,l}| >= c_l(alpha / |J|) at a look l <= k; H_i is rejected by look k when every
    H_J with i in J is. Returns (looks, m) bool."""
    m, k_max = abs_z.shape
    out = np.zeros((k_max, m), bool)
    for k in range(k_max):
        rejected_sets = {}
        for size in range(1, m + 1):
            c = np.array(design.critical(m, size)[: k + 1])
            for J in itertools.combinations(range(m), size):
                rejected_sets[J] = bool((abs_z[list(J), : k + 1] >= c).any())
        for i in range(m):
            out[k, i] = all(v for J, v in rejected_sets.items() if i in J)
    return out


def test_holm_across_looks_is_closed_testing():
    rng = np.random.default_rng(7)
    design = SequentialDesign(40, 4, correction="holm")
    for rep in range(60):
        m = int(rng.integers(1, 5))
        abs_z = np.abs(rng.normal(0, 1, (m, 4)) + rng.choice([0, 2.5, 3.5], size=(m, 1)))
        expected = _closed_testing(abs_z, design)
        state = np.zeros((1, m), int)
        for k in range(4):
            state, _ = decide_step(design, k, abs_z[None, :, : k + 1], np.zeros((1, m), bool), state)
            np.testing.assert_array_equal(state[0] == DECIDED_EFFECT, expected[k])


def test_holm_rejects_everything_bonferroni_rejects():
    rng = np.random.default_rng(8)
    holm, bonf = SequentialDesign(50, 5, correction="holm"), SequentialDesign(50, 5)
    abs_z = np.abs(rng.normal(0, 1, (500, 6, 5)) + rng.choice([0, 2, 3], size=(500, 6, 1)))
    sh = sb = np.zeros((500, 6), int)
    for k in range(5):
        none = np.zeros((500, 6), bool)
        sh, _ = decide_step(holm, k, abs_z[:, :, : k + 1], none, sh)
        sb, _ = decide_step(bonf, k, abs_z[:, :, : k + 1], none, sb)
        assert np.all(sh[sb == DECIDED_EFFECT] == DECIDED_EFFECT)
    assert (sh == DECIDED_EFFECT).sum() > (sb == DECIDED_EFFECT).sum()


def _looks(design, data_full):
    data_at = [{t: (f[:n], r[:n]) for t, (f, r) in data_full.items()} for n in design.look_points()]
    return design.run(data_at)


@pytest.mark.parametrize("correction", ["bonferroni", "holm"])
def test_decided_tests_stay_decided(correction):
    rng = np.random.default_rng(9)
    n = 60
    # "up": an effect in the first 24 runs only, gone afterwards; "flat-then-up": no effect in the
    # first 36 runs, then a large one.
    up = (np.r_[rng.normal(105, 1, 24), rng.normal(100, 1, n - 24)], rng.normal(100, 1, n))
    late = (np.r_[rng.normal(100, 0.2, 36), rng.normal(120, 0.2, n - 36)], rng.normal(100, 0.2, n))
    d = SequentialDesign(n, 5, correction=correction)
    looks = _looks(d, {"up": up, "late": late, "null": (rng.normal(100, 5, n), rng.normal(100, 5, n))})
    first = {}
    for look in looks:
        for t in look.tests:
            if t.test in first:
                assert (t.decided, t.decided_at_runs, t.decided_at_look) == first[t.test]
            elif t.decided is not None:
                first[t.test] = (t.decided, t.decided_at_runs, t.decided_at_look)
                assert t.decided_at_runs == look.runs
    final = looks[-1].decisions()
    assert final["up"] == "effect" and first["up"][1] == 24
    assert final["late"] == "no-effect" and first["late"][1] <= 36
    assert [lk.decided for lk in looks] == sorted(lk.decided for lk in looks)


def test_no_effect_on_a_tiny_shift_with_many_runs_not_on_a_large_one():
    rng = np.random.default_rng(10)
    n = 200
    tiny = (rng.normal(100.1, 1.0, n), rng.normal(100.0, 1.0, n))  # 0.1 % shift, CV 1 %
    large = (rng.normal(110.0, 1.0, n), rng.normal(100.0, 1.0, n))  # 10 %
    small_n = (rng.normal(100.0, 1.0, 6), rng.normal(100.0, 1.0, 6))
    d = SequentialDesign(n, 4, min_effect=2.0)
    looks = _looks(d, {"tiny": tiny, "large": large})
    final = looks[-1]
    assert final.decisions() == {"tiny": "no-effect", "large": "effect"}
    assert final.stop and final.runs < n  # both decided before the last look
    t = {x.test: x for x in final.tests}
    lo, hi = t["tiny"].shift_ci_pct
    assert -2.0 <= lo <= 0.1 <= hi <= 2.0
    # The same tiny shift with 6 runs per arm: the CI is too wide to decide anything.
    one = SequentialDesign(6, 1).decide(0, {"tiny": small_n})
    assert one.tests[0].decided is None and one.stop


def test_a_large_shift_inside_the_margin_is_not_no_effect():
    # 5 % order effect, min_effect 10 %: no-effect would be right; min_effect 2 %: never no-effect.
    rng = np.random.default_rng(11)
    n = 100
    data = {"a": (rng.normal(105, 1, n), rng.normal(100, 1, n))}
    assert SequentialDesign(n, 2, min_effect=2.0).run([{k: (f[:50], r[:50]) for k, (f, r) in data.items()}])[0].tests[0].decided == "effect"
    # Efficacy comes first even when the CI lies inside a wide margin.
    look = SequentialDesign(n, 1, min_effect=50.0).decide(0, data)
    assert look.tests[0].decided == "effect"


def test_too_few_values_and_constant_tests():
    d = SequentialDesign(20, 2)
    look = d.decide(0, {"few": (np.arange(4.0), np.arange(10.0)), "same": (np.full(10, 3.0), np.full(10, 3.0))})
    t = {x.test: x for x in look.tests}
    assert t["few"].z is None and t["few"].decided is None and t["few"].shift is None
    # All values equal: no rank test, but the shift's CI is [0, 0]: no order effect.
    assert t["same"].z is None and t["same"].decided == "no-effect" and t["same"].shift_ci_pct == (0.0, 0.0)
    json.dumps(look.to_record(), allow_nan=False)


def test_decide_matches_the_vectorised_core_on_simulated_experiments():
    """SequentialDesign.decide (one experiment) and decide_step on a batch, as the validation
    simulation uses it, reach the same decisions on the same data."""
    rng = np.random.default_rng(13)
    reps, m, n = 30, 4, 24
    for correction in ("bonferroni", "holm"):
        d = SequentialDesign(n, 3, correction=correction, min_effect=3.0)
        f = 100 * (1 + 0.02 * rng.standard_normal((reps, m, n)))
        r = 100 * (1 + 0.02 * rng.standard_normal((reps, m, n)))
        f[:, 0] *= 1.03
        state = np.zeros((reps, m), int)
        zs = []
        states = []
        for k, p in enumerate(d.look_points()):
            zs.append(np.abs(mann_whitney_z(f[:, :, :p], r[:, :, :p]).z))
            c = d.critical(m)[k]
            ci = shift_ci(f[:, :, :p], r[:, :, :p], c)
            med = np.median(f[:, :, :p], axis=2)
            within = (100 * ci.low / med >= -3.0) & (100 * ci.high / med <= 3.0)
            state, _ = decide_step(d, k, np.stack(zs, axis=2), within, state)
            states.append(state)
        for i in range(reps):
            looks = _looks(d, {j: (f[i, j], r[i, j]) for j in range(m)})
            for k, look in enumerate(looks):
                codes = [{None: UNDECIDED, "effect": DECIDED_EFFECT, "no-effect": DECIDED_NO_EFFECT}[t.decided] for t in look.tests]
                np.testing.assert_array_equal(codes, states[k][i])


def test_family_wise_error_under_no_effect_small_simulation():
    """2,000 order-free experiments of 5 tests, 5 looks up to 20 runs per arm, efficacy only
    (no-effect decisions can only remove rejections): family-wise error near or below alpha."""
    rng = np.random.default_rng(14)
    reps, m, n = 2000, 5, 20
    x = rng.lognormal(0, 0.5, (reps, m, 2, n))
    for correction in ("bonferroni", "holm"):
        d = SequentialDesign(n, 5, correction=correction)
        state = np.zeros((reps, m), int)
        zs = []
        for k, p in enumerate(d.look_points()):
            zs.append(np.abs(mann_whitney_z(x[:, :, 0, :p], x[:, :, 1, :p]).z))
            state, _ = decide_step(d, k, np.stack(zs, axis=2), np.zeros((reps, m), bool), state)
        fwer = (state == DECIDED_EFFECT).any(axis=1).mean()
        assert fwer <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)


def test_a_fleets_method_names_the_runs_its_looks_analyse() -> None:
    # 3 workers of 10 runs per arm, 4 looks: the design's pooled points are 8, 15, 23, 30, but
    # each worker analyses its rounded-down share (2, 5, 7, 10), so the looks analyse 6, 15, 21
    # and 30 pooled runs per arm, and their boundaries are those (SequentialDesign.decide, runs=).
    from benchsage.design.sequential import SequentialPlan

    plan = SequentialPlan(10, 4, 3, 0.05, "bonferroni", 2.0)
    assert plan.points == (2, 5, 7, 10)
    text = plan.method(5)
    assert "4 looks at 6, 15, 21, 30 runs per arm" in text and "looks at 2, 5, 7, 10 runs per arm on every worker" in text
    assert "4 looks at 3, 5, 8, 10 runs per arm" in SequentialPlan(10, 4, 1, 0.05, "bonferroni", 2.0).method(5)


def test_json_of_the_looks_and_the_journal_record():
    rng = np.random.default_rng(12)
    n = 30
    data = {("index", "wall_time"): (rng.normal(100, 1, n), rng.normal(101, 1, n)), ("get", "wall_time"): (rng.normal(50, 1, n), rng.normal(50, 1, n))}
    d = SequentialDesign(n, 3, correction="holm")
    looks = _looks(d, data)
    summary = d.summary(looks)
    assert set(summary) >= {"looks", "stopped_at_runs", "max_runs", "method"}
    assert summary["max_runs"] == 30 and summary["stopped_at_runs"] == looks[-1].runs
    assert [set(x) for x in summary["looks"]] == [{"runs", "decided", "alpha_spent"}] * len(looks)
    assert "Holm" in summary["method"] and "O'Brien-Fleming" in summary["method"]
    json.dumps(summary, allow_nan=False)
    for look in looks:
        text = json.dumps(look.to_record(), allow_nan=False)
        assert Look.from_record(json.loads(text)) == look
    # Resuming from journal records gives the same next look.
    if not looks[0].stop:
        restored = [Look.from_record(json.loads(json.dumps(looks[0].to_record())))]
        again = d.decide(1, {t: (f[:20], r[:20]) for t, (f, r) in data.items()}, restored)
        assert again == looks[1]
