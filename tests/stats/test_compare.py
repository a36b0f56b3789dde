"""A vs B comparisons: the ratio's interval against brute force, the tests against scipy, the
Touati protocol's branches, and the summaries over arms and contexts (the rank-sum test and
the shift's interval themselves: test_ranksum.py, test_shift.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchsage.stats.compare import (
    Comparison,
    compare,
    compare_strata,
    holds_in,
    ratio_ci,
    ratio_ci_bonett_price,
    summarize_contexts,
)
from benchsage.stats.shift import ci_rank


def _brute_ratio_ci(a, b, level=0.95):
    d = np.sort([math.log(x) - math.log(y) for x in a for y in b])
    pooled = np.concatenate([a, b])
    _, counts = np.unique(pooled, return_counts=True)
    tie = float(np.sum(counts.astype(float) ** 3 - counts))
    k, _ = ci_rank(len(a), len(b), level, tie)
    return math.exp(d[k - 1]), math.exp(d[len(d) - k])


@pytest.mark.parametrize("m,n,seed", [(8, 6, 1), (30, 30, 2), (55, 70, 3), (12, 40, 4)])
def test_ratio_ci_against_brute_force_order_statistics(m, n, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.lognormal(0.0, 0.3, m), rng.lognormal(0.2, 0.5, n)
    ci, method = ratio_ci(a, b)
    low, high = _brute_ratio_ci(a, b)
    assert ci == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
    assert method == ("bauer-exact" if m < 50 and n < 50 else "bauer-normal")


def test_ratio_ci_with_ties_against_brute_force():
    rng = np.random.default_rng(6)
    a, b = rng.integers(90, 110, 25).astype(float), rng.integers(95, 115, 30).astype(float)  # e.g. counts
    ci, method = ratio_ci(a, b)
    assert method == "bauer-normal"
    assert ci == _brute_ratio_ci(a, b)


def _bonett_price_reference(a, b, level=0.95):
    """Price & Bonett (2002) from their formulas, with scipy.stats' distributions."""

    def log_median_var(x):
        s, n = np.sort(np.log(x)), len(x)
        c = max(1, round((n + 1) / 2 - math.sqrt(n)))
        z = stats.norm.ppf(1 - stats.binom.cdf(c - 1, n, 0.5))
        return ((s[n - c] - s[c - 1]) / (2 * z)) ** 2

    centre = math.log(np.median(a) / np.median(b))
    half = stats.norm.ppf((1 + level) / 2) * math.sqrt(log_median_var(a) + log_median_var(b))
    return math.exp(centre - half), math.exp(centre + half)


@pytest.mark.parametrize("m,n,seed", [(5, 5, 1), (10, 17, 2), (50, 80, 3)])
def test_bonett_price_interval(m, n, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.lognormal(0.0, 0.3, m), 0.9 + rng.exponential(0.2, n)
    ci, method = ratio_ci_bonett_price(a, b)
    ref = _bonett_price_reference(a, b)
    assert method == "bonett-price"
    assert ci == (pytest.approx(ref[0], rel=1e-12), pytest.approx(ref[1], rel=1e-12))
    r = compare(a, b, ci_method="bonett-price")
    assert r.ci == ci and r.ci_method == "bonett-price" and r.ci[0] < r.ratio < r.ci[1]
    swapped = compare(b, a, ci_method="bonett-price")
    assert swapped.ci == (pytest.approx(1 / ci[1], rel=1e-12), pytest.approx(1 / ci[0], rel=1e-12))
    assert compare(a * 1e-3, b * 1e-3, ci_method="bonett-price").ci == (pytest.approx(ci[0], rel=1e-9), pytest.approx(ci[1], rel=1e-9))


def test_bonett_price_needs_five_values():
    assert ratio_ci_bonett_price([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0, 5.0]) == (None, None)
    assert compare([1.0] * 5, [2.0] * 6, ci_method="bonett-price").ci is None  # no spread at all
    with pytest.raises(ValueError, match="unknown ratio interval"):
        compare([1.0], [1.0], ci_method="bootstrap")


def test_sleep_like_samples():
    """`sleep 0.02` against `sleep 0.03`: a constant plus a small positive overhead."""
    rng = np.random.default_rng(7)
    a = 0.020 + 0.0008 + rng.gamma(2.0, 0.0002, 30)
    b = 0.030 + 0.0008 + rng.gamma(2.0, 0.0002, 30)
    r = compare(a, b)
    truth = (0.0208 + 0.0002 * stats.gamma.median(2.0)) / (0.0308 + 0.0002 * stats.gamma.median(2.0))
    assert r.ratio == pytest.approx(0.67, abs=0.01)
    assert r.ci[0] <= truth <= r.ci[1]
    assert r.ci[1] - r.ci[0] < 0.02
    assert r.better == "a" and r.p < 1e-10 and r.method == "mann-whitney"
    assert compare(a, b, higher_is_better=True).better == "b"  # e.g. a throughput metric


# values on a grid (ties happen, and take the normal path) that no scale merges or splits
positive = st.lists(st.integers(8, 64).map(lambda i: i / 16), min_size=5, max_size=25)


@settings(max_examples=60, deadline=None)
@given(positive, positive, st.sampled_from([1e-6, 1e-3, 0.1, 3.0, 7e5]), st.sampled_from(["bauer", "bonett-price"]))
def test_swap_inverts_and_scale_leaves_unchanged(a, b, scale, ci_method):
    a, b = np.array(a), np.array(b)
    ab, ba = compare(a, b, ci_method=ci_method), compare(b, a, ci_method=ci_method)
    if ab.ci is None:
        assert ba.ci is None
    else:
        assert ba.ratio == pytest.approx(1.0 / ab.ratio, rel=1e-12)
        assert ba.ci == (pytest.approx(1.0 / ab.ci[1], rel=1e-9), pytest.approx(1.0 / ab.ci[0], rel=1e-9))
        assert ab.ci[0] <= ab.ci[1]
    if ab.p is not None:
        assert ba.p == pytest.approx(ab.p, rel=1e-12)
        assert {ab.better, ba.better} in ({None}, {"a", "b"})
    scaled = compare(a * scale, b * scale, ci_method=ci_method)
    assert scaled.ratio == pytest.approx(ab.ratio, rel=1e-9)
    if ab.ci is not None:
        assert scaled.ci == (pytest.approx(ab.ci[0], rel=1e-9), pytest.approx(ab.ci[1], rel=1e-9))


def test_mann_whitney_comparison_matches_scipy():
    rng = np.random.default_rng(11)
    a, b = rng.lognormal(0, 0.1, 20), rng.lognormal(0.08, 0.1, 25)
    r = compare(a, b)
    assert r.p == pytest.approx(stats.mannwhitneyu(a, b, method="exact").pvalue, rel=1e-9)
    assert r.ratio == pytest.approx(np.median(a) / np.median(b))
    assert (r.better == "a") == (r.p <= 0.05)
    strict = compare(a, b, alpha=r.p / 2)
    assert strict.better is None and strict.p == r.p


def test_too_few_values_equal_values_and_non_positive():
    r = compare([1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 5.0, 6.0], ci_method="bauer")
    assert r.p is None and r.better is None and "fewer than 5" in r.reason
    assert r.ratio == pytest.approx(2.5 / 4.0) and r.ci == (pytest.approx(1 / 5), pytest.approx(3 / 2))  # k = 2: second extremes
    assert compare([1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 5.0, 6.0]).ci is None  # Bonett-Price, the default, needs more
    same = compare([3.0] * 6, [3.0] * 7)
    assert same.p is None and "every value is equal" in same.reason and same.ratio == 1.0
    tiny = compare([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert tiny.ci is None and "too few values" in tiny.reason
    zero = compare([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    assert zero.ratio is None and zero.ci is None and zero.p is not None and zero.better == "a"
    assert zero.to_json()["ratio"] is None
    with pytest.raises(ValueError, match="NaN"):
        compare([1.0, float("nan")], [1.0])
    with pytest.raises(ValueError, match="unknown comparison method"):
        compare([1.0], [1.0], method="t-test")


# --- Touati et al.'s protocol: each branch, with scipy's own verdict on the preliminary tests


def _f_test_p(a, b):
    f = np.var(a, ddof=1) / np.var(b, ddof=1)
    dist = stats.f(len(a) - 1, len(b) - 1)
    return 2 * min(dist.cdf(f), dist.sf(f))


def test_touati_student_t():
    rng = np.random.default_rng(0)
    a, b = rng.normal(10, 1, 15), rng.normal(11, 1, 15)
    assert stats.shapiro(a).pvalue > 0.05 and stats.shapiro(b).pvalue > 0.05 and _f_test_p(a, b) > 0.05
    r = compare(a, b, method="touati")
    assert r.method == "touati:student-t"
    assert r.p == pytest.approx(stats.ttest_ind(a, b).pvalue, rel=1e-12)
    assert dict(r.steps)["fisher-f"] == pytest.approx(_f_test_p(a, b), rel=1e-9)
    assert dict(r.steps)["shapiro-wilk a"] == pytest.approx(stats.shapiro(a).pvalue)
    assert r.better == "a" and "Student" in r.reason


def test_touati_welch_t():
    rng = np.random.default_rng(0)
    a, b = rng.normal(10, 0.3, 15), rng.normal(11, 3, 15)
    assert stats.shapiro(a).pvalue > 0.05 and stats.shapiro(b).pvalue > 0.05 and _f_test_p(a, b) <= 0.05
    r = compare(a, b, method="touati")
    assert r.method == "touati:welch-t"
    assert r.p == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-12)
    assert "Welch" in r.reason and "rejected" in r.reason


def test_touati_mann_whitney_same_shape():
    rng = np.random.default_rng(0)
    a, b = 10 + rng.exponential(1, 20), 12 + rng.exponential(1, 20)
    assert min(stats.shapiro(a).pvalue, stats.shapiro(b).pvalue) <= 0.05
    assert stats.ks_2samp(a - np.median(a), b - np.median(b)).pvalue > 0.05
    r = compare(a, b, method="touati")
    assert r.method == "touati:mann-whitney"
    assert r.p == pytest.approx(stats.mannwhitneyu(a, b, method="exact").pvalue, rel=1e-9)
    assert "compares the medians" in r.reason
    assert [name for name, _ in r.steps] == ["shapiro-wilk a", "shapiro-wilk b", "kolmogorov-smirnov (median-centred)"]


def test_touati_mann_whitney_different_shapes():
    rng = np.random.default_rng(0)
    a, b = 10 + rng.exponential(1, 20), 12 + rng.normal(0, 0.1, 20)
    assert stats.ks_2samp(a - np.median(a), b - np.median(b)).pvalue <= 0.05
    r = compare(a, b, method="touati")
    assert r.method == "touati:mann-whitney" and "rejects equal shapes" in r.reason
    assert r.p == pytest.approx(stats.mannwhitneyu(a, b, method="exact").pvalue, rel=1e-9)


def test_touati_large_samples_skip_shapiro_unless_asked():
    rng = np.random.default_rng(2)
    a, b = 10 + rng.exponential(1, 40), 10.5 + rng.exponential(1, 40)  # far from normal
    r = compare(a, b, method="touati")
    assert r.method in ("touati:student-t", "touati:welch-t") and "central limit" in r.reason
    assert [name for name, _ in r.steps] == ["fisher-f"]
    checked = compare(a, b, method="touati", shapiro_always=True)
    assert checked.method == "touati:mann-whitney" and checked.steps[0][0] == "shapiro-wilk a"


# --- arms and contexts


def _verdict(p: float | None, direction: int) -> Comparison:
    return Comparison(None, None, p, None, "mann-whitney", None, 10, 10, 0.05, 0.95, False, "", (), direction)


def test_holds_in_per_arm():
    rng = np.random.default_rng(8)
    arms = compare_strata(
        {
            "fixed": (rng.lognormal(0, 0.05, 20), rng.lognormal(0.1, 0.05, 20)),
            "random": (rng.lognormal(0, 0.05, 20), rng.lognormal(0.0, 0.05, 20)),
        }
    )
    assert arms["fixed"].better == "a" and arms["random"].better is None
    assert holds_in("a", arms) == {"fixed": True, "random": False}
    assert holds_in("b", arms) == {"fixed": False, "random": False}
    assert holds_in(None, arms) == {"fixed": None, "random": None}


def test_contexts_count_after_the_correction_and_flips():
    # 12 contexts; Bonferroni's per-context threshold is 0.05 / 12 = 0.00417
    base = [_verdict(0.5, -1)] * 9
    no_flip = summarize_contexts(base + [_verdict(0.001, -1), _verdict(0.001, -1), _verdict(0.01, +1)])
    assert no_flip.to_json() == {"n": 12, "a_better": 2, "b_better": 0, "undecided": 10, "flips": False}
    flip = summarize_contexts(base + [_verdict(0.001, -1), _verdict(0.001, -1), _verdict(0.003, +1)])
    assert flip.to_json() == {"n": 12, "a_better": 2, "b_better": 1, "undecided": 9, "flips": True}
    # a context without a test counts as undecided and is not part of the family: m = 2, so
    # 0.02 <= 0.05 / 2 is significant (it would not be with m = 3)
    with_missing = summarize_contexts([_verdict(None, 0), _verdict(0.02, -1), _verdict(0.02, +1)])
    assert with_missing.to_json() == {"n": 3, "a_better": 1, "b_better": 1, "undecided": 1, "flips": True}
    assert summarize_contexts([_verdict(0.02, -1)] * 3).a_better == 0
    two = summarize_contexts({"c0": _verdict(0.02, -1), "c1": _verdict(0.02, +1)})
    assert two.flips is True  # 0.02 <= 0.05 / 2 each way
    assert summarize_contexts([]).to_json() == {"n": 0, "a_better": 0, "b_better": 0, "undecided": 0, "flips": False}


def test_flip_between_real_contexts():
    """Mytkowicz et al.'s trap: in one context a is faster, in another b."""
    rng = np.random.default_rng(9)
    ctx = {
        "env=0": (rng.lognormal(0.00, 0.02, 20), rng.lognormal(0.05, 0.02, 20)),
        "env=4096": (rng.lognormal(0.05, 0.02, 20), rng.lognormal(0.00, 0.02, 20)),
        "env=100": (rng.lognormal(0.00, 0.02, 20), rng.lognormal(0.00, 0.02, 20)),
    }
    s = summarize_contexts(compare_strata(ctx))
    assert (s.a_better, s.b_better, s.flips) == (1, 1, True)

