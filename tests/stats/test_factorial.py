"""2^k r factorial designs: Jain's worked example, least squares, and the inputs refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from benchsage.stats.factorial import effects_2k, factorial_2k, sign_table, term_masks

# Jain (1991), The Art of Computer Systems Performance Analysis, Example 18.1: a 2^2 3 design,
# memory (A) x cache (B), three replications per cell.
JAIN_Y = [15, 18, 12, 45, 48, 51, 25, 28, 19, 75, 75, 81]
JAIN_A = ["4M"] * 3 + ["16M"] * 3 + ["4M"] * 3 + ["16M"] * 3
JAIN_B = ["1K"] * 6 + ["2K"] * 6
JAIN_FACTORS = {"memory": ("4M", "16M"), "cache": ("1K", "2K")}


def test_jain_example_18_1():
    r = factorial_2k(JAIN_Y, {"memory": JAIN_A, "cache": JAIN_B}, JAIN_FACTORS, level=0.90)
    # Example 18.1: q0 = 41, qA = 21.5, qB = 9.5, qAB = 5
    assert r.q0 == 41.0
    assert [(t.term, t.effect) for t in r.terms] == [("memory", 21.5), ("cache", 9.5), ("memory:cache", 5.0)]
    # Example 18.2: SST = 7032, SSE = 102; A 78.88%, B 15.40%, AB 4.27%, error 1.45%
    assert r.sst == pytest.approx(7032.0) and r.sse == pytest.approx(102.0)
    assert [round(t.variation_pct, 2) for t in r.terms] == [78.88, 15.40, 4.27]
    assert round(r.error_pct, 2) == 1.45
    # Example 18.3: s_e = 3.57, s_q = 1.03, 90% intervals with t[0.95; 8] = 1.86:
    # q0 (39.08, 42.91), qA (19.58, 23.41), qB (7.58, 11.41), qAB (3.08, 6.91)
    assert r.s_e == pytest.approx(3.57, abs=0.005) and r.df == 8
    assert r.q0_ci == (pytest.approx(39.08, abs=0.01), pytest.approx(42.91, abs=0.01))
    published = {"memory": (19.58, 23.41), "cache": (7.58, 11.41), "memory:cache": (3.08, 6.91)}
    for t in r.terms:
        assert t.ci == (pytest.approx(published[t.term][0], abs=0.01), pytest.approx(published[t.term][1], abs=0.01))
    j = r.to_json()
    assert [t["term"] for t in j["terms"]] == ["memory", "cache", "memory:cache", "error"]
    assert j["terms"][-1] == {"term": "error", "variation_pct": pytest.approx(1.4505, abs=1e-4)}
    assert set(j["terms"][0]) == {"term", "effect", "ci", "variation_pct"}


def test_order_of_observations_does_not_matter():
    perm = np.random.default_rng(1).permutation(12)
    y, a, b = np.array(JAIN_Y)[perm], np.array(JAIN_A)[perm], np.array(JAIN_B)[perm]
    r = factorial_2k(y, {"cache": list(b), "memory": list(a)}, JAIN_FACTORS)
    assert [t.effect for t in r.terms] == [21.5, 9.5, 5.0]


def test_first_level_is_low():
    swapped = factorial_2k(JAIN_Y, {"memory": JAIN_A, "cache": JAIN_B}, {"memory": ("16M", "4M"), "cache": ("1K", "2K")})
    assert [t.effect for t in swapped.terms] == [-21.5, 9.5, -5.0]


def _ols_reference(y, x, level):
    """Least squares on the +-1 columns of every term, and the t interval from its covariance."""
    design = np.column_stack([np.ones(len(y))] + [np.prod(x[:, [j for j in range(x.shape[1]) if m >> j & 1]], axis=1) for m in term_masks(x.shape[1])])
    beta, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ beta
    df = len(y) - design.shape[1]
    s2 = resid @ resid / df
    se = np.sqrt(s2 * np.diag(np.linalg.inv(design.T @ design)))
    t = stats.t.ppf((1 + level) / 2, df)
    return beta, beta - t * se, beta + t * se, resid @ resid


def test_three_factors_against_least_squares():
    rng = np.random.default_rng(2)
    k, reps = 3, 4
    x = np.array([c for c in itertools.product([-1.0, 1.0], repeat=k) for _ in range(reps)])
    y = 50 + 4 * x[:, 0] - 2 * x[:, 1] + 0.5 * x[:, 2] + 1.5 * x[:, 0] * x[:, 2] + rng.normal(0, 1, len(x))
    names = ["irq", "smt", "governor"]
    settings = {n: ["off" if v < 0 else "on" for v in x[:, j]] for j, n in enumerate(names)}
    r = factorial_2k(y, settings, {n: ("off", "on") for n in names}, level=0.95)
    beta, low, high, sse = _ols_reference(y, x, 0.95)
    assert [t.term for t in r.terms] == ["irq", "smt", "governor", "irq:smt", "irq:governor", "smt:governor", "irq:smt:governor"]
    assert r.q0 == pytest.approx(beta[0], rel=1e-12)
    for i, t in enumerate(r.terms, start=1):
        assert t.effect == pytest.approx(beta[i], abs=1e-12)
        assert t.ci == (pytest.approx(low[i], rel=1e-10), pytest.approx(high[i], rel=1e-10))
    assert r.sse == pytest.approx(sse, rel=1e-10) and r.df == 8 * 3
    total = sum(t.variation_pct for t in r.terms) + r.error_pct
    assert total == pytest.approx(100.0, rel=1e-12)
    assert r.term("irq").variation_pct > r.term("smt").variation_pct > r.term("irq:governor").variation_pct


def test_issue_target_a_dominates():
    """2^2: A adds 20 ms, B 2 ms, plus noise: A >= 90% of the variation, q_A's CI covers 10 ms."""
    rng = np.random.default_rng(3)
    reps = 10
    a = np.tile(np.repeat([0, 1], reps), 2)
    b = np.repeat([0, 1], 2 * reps)
    y = 0.100 + 0.020 * a + 0.002 * b + rng.normal(0, 0.001, len(a))
    r = factorial_2k(y, {"a": a.tolist(), "b": b.tolist()}, {"a": (0, 1), "b": (0, 1)})
    qa = r.term("a")
    assert qa.variation_pct >= 90.0
    assert qa.ci[0] <= 0.010 <= qa.ci[1]
    assert qa.ci[1] - qa.ci[0] < 0.002
    assert r.term("b").ci[0] <= 0.001 <= r.term("b").ci[1]
    assert r.term("a:b").variation_pct < 2.0


def test_vectorised_cells_match_one_design():
    rng = np.random.default_rng(4)
    cells = rng.normal(10, 1, (6, 8, 3))  # six 2^3 3 designs
    batch = effects_2k(cells)
    for i in range(6):
        one = effects_2k(cells[i])
        np.testing.assert_allclose(batch.q[i], one.q, rtol=1e-12)
        assert batch.half_width[i] == pytest.approx(float(one.half_width))
    # the sign table is orthogonal: q recovers the cell means exactly
    np.testing.assert_allclose(batch.q @ sign_table(3).T, cells.mean(axis=-1), rtol=1e-12)


def test_all_values_equal():
    r = factorial_2k([5.0] * 8, {"a": [0, 1] * 4, "b": [0, 0, 1, 1] * 2}, {"a": (0, 1), "b": (0, 1)})
    assert r.error_pct is None and all(t.variation_pct is None and t.effect == 0 for t in r.terms)
    assert r.to_json()["terms"][-1] == {"term": "error", "variation_pct": None}


def test_inputs_refused_with_the_cell_named():
    f = {"smt": ("off", "on"), "governor": ("powersave", "performance")}
    smt = ["off", "on", "off", "on"] * 2
    gov = ["powersave"] * 4 + ["performance"] * 4
    ok = factorial_2k(np.arange(8.0), {"smt": smt, "governor": gov}, f)
    assert ok.r == 2
    keep = [0, 1, 2, 3, 4, 6]  # rows 5 and 7 are the two at smt=on, governor=performance
    with pytest.raises(ValueError, match="no observations at smt=on, governor=performance"):
        factorial_2k(np.arange(6.0), {"smt": [smt[i] for i in keep], "governor": [gov[i] for i in keep]}, f)
    with pytest.raises(ValueError, match="1 observations at smt=on, governor=performance but 2 elsewhere"):
        factorial_2k(np.arange(7.0), {"smt": smt[:7], "governor": gov[:7]}, f)
    with pytest.raises(ValueError, match="no estimate of the error"):
        factorial_2k(np.arange(4.0), {"smt": smt[:4], "governor": ["powersave"] * 2 + ["performance"] * 2}, f)
    with pytest.raises(ValueError, match="at least one factor"):
        factorial_2k([1.0, 2.0], {}, {})
    with pytest.raises(ValueError, match="exactly two distinct levels"):
        factorial_2k(np.arange(8.0), {"smt": smt}, {"smt": ("on",)})
    with pytest.raises(ValueError, match="level 'auto', not one of its levels"):
        factorial_2k(np.arange(8.0), {"smt": smt[:7] + ["auto"], "governor": gov}, f)
    with pytest.raises(ValueError, match="no settings for factor 'governor'"):
        factorial_2k(np.arange(8.0), {"smt": smt}, f)
    with pytest.raises(ValueError, match="2, 4, 8"):
        effects_2k(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="at least 2 replications"):
        effects_2k(np.zeros((4, 1)))
