"""A comparison answered per level of a context dimension (stats.compare.decide_levels): the
issue's flip (a test 2x faster with a small environment and 1.5x slower with a large one, 16
runs per arm over 8 contexts) is found along env_bytes although each context alone is
undecided; and by simulation, a flip is reported no more often than alpha when there is none."""

from __future__ import annotations

import numpy as np
import pytest

from benchsage.stats.compare import compare, decide_levels, summarize_contexts

ALPHA = 0.05


def experiment(rng: np.random.Generator, runs: int, small: float, large: float, cv: float = 0.1, contexts: int = 8):
    """Per context, the values of a and b: each test once per run, runs 2 x `runs` (both arms)
    spread evenly over the contexts, env_bytes small in the first half, a second dimension (a
    link order) alternating; a's median is `small` x b's in small-env contexts, `large` x
    in large-env ones (b's median 1), lognormal noise of this CV."""
    per = 2 * runs // contexts
    sigma = np.sqrt(np.log1p(cv * cv))
    small_env = np.arange(contexts) < contexts // 2
    scale = np.where(small_env, small, large)
    a = scale[:, None] * np.exp(sigma * rng.standard_normal((contexts, per)))
    b = np.exp(sigma * rng.standard_normal((contexts, per)))
    return a, b, small_env, np.arange(contexts) % 2


def answered(a: np.ndarray, b: np.ndarray, small_env: np.ndarray, link: np.ndarray, correction: str = "bonferroni"):
    """The contexts' summary with the per-level answers, as the analysis gives it for one claim."""
    per_context = [compare(x, y, alpha=ALPHA) for x, y in zip(a, b)]
    per_level = {
        "env_bytes": {name: compare(a[m].ravel(), b[m].ravel(), alpha=ALPHA) for name, m in (("small", small_env), ("large", ~small_env))},
        "link_order": {f"order{o}": compare(a[link == o].ravel(), b[link == o].ravel(), alpha=ALPHA) for o in (0, 1)},
    }
    summary = summarize_contexts(per_context, ALPHA, correction)
    return summary.with_dimensions(decide_levels(per_level, ALPHA, correction))


def test_the_issues_flip_is_found_along_the_environment_size() -> None:
    a, b, small_env, link = experiment(np.random.default_rng(24), runs=16, small=0.5, large=1.5)
    s = answered(a, b, small_env, link)
    assert a.shape == (8, 4)  # 4 values of each test per context: no corrected test decides one
    assert (s.a_better, s.b_better, s.undecided) == (0, 0, 8)
    assert s.flips and s.flip_dimension == "env_bytes"
    env = next(d for d in s.by if d.dimension == "env_bytes")
    assert [(lv.level, lv.better, lv.comparison.n_a) for lv in env.levels] == [("small", "a", 16), ("large", "b", 16)]
    assert all(lv.p_adjusted < ALPHA for lv in env.levels)
    # each p corrected over the 4 (dimension, level) answers: Bonferroni multiplies by 4
    assert env.levels[0].p_adjusted == pytest.approx(min(1.0, 4 * env.levels[0].comparison.p))
    link_order = next(d for d in s.by if d.dimension == "link_order")
    assert not link_order.flips
    doc = s.to_json()
    assert doc["flips"] is True and doc["flip_dimension"] == "env_bytes" and doc["by"]["env_bytes"]["flips"] is True
    assert [lv["better"] for lv in doc["by"]["env_bytes"]["levels"]] == ["a", "b"]
    assert {"n", "a_better", "b_better", "undecided", "flips"} <= set(doc)


def test_without_dimensions_the_json_is_as_before() -> None:
    s = summarize_contexts([compare([1, 2, 3, 4, 5.0], [2, 3, 4, 5, 6.0])], ALPHA)
    assert s.with_dimensions(()).to_json() == {"n": 1, "a_better": 0, "b_better": 0, "undecided": 1, "flips": False}


@pytest.mark.parametrize(("small", "large"), [(1.0, 1.0), (0.8, 0.8)], ids=["a = b", "a 20% faster everywhere"])
def test_false_flips_stay_below_alpha(small: float, large: float) -> None:
    rng = np.random.default_rng(7)
    reps = 200
    flips = sum(answered(*experiment(rng, runs=16, small=small, large=large)).flips for _ in range(reps))
    # at most alpha: more than 18 flips in 200 experiments (9%) has probability < 0.01 at 5%
    assert flips <= 18


def test_holm_finds_the_flip_too() -> None:
    a, b, small_env, link = experiment(np.random.default_rng(3), runs=16, small=0.5, large=1.5)
    assert answered(a, b, small_env, link, "holm").flip_dimension == "env_bytes"
