"""The bisect search's pure parts: the error budget, the looks, the range, and by simulation
(validation/bisection.py, numpy only) the probability of naming a wrong commit."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from benchsage.design.bisect import BAD, GOOD, UNDECIDED, Budget, Search, decide_check, decide_probe, look_alphas, look_points

SCRIPT = Path(__file__).resolve().parents[2] / "validation" / "bisection.py"


def _simulation():
    spec = importlib.util.spec_from_file_location("benchsage_validation_bisection", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("n", [2, 10, 48, 1000])
def test_budget_sums_to_alpha_over_every_possible_test(n: int) -> None:
    b = Budget(0.05, n)
    total = sum(b.test_alpha(j) for j in range(200))
    assert total <= 0.05 + 1e-12
    assert total == pytest.approx(0.05, rel=1e-9)
    assert b.planned == 1 + math.ceil(math.log2(n))


def test_look_alphas_spend_the_whole_level() -> None:
    points = look_points(30, 3)
    assert points == (10, 20, 30)
    alphas = look_alphas(0.01, points)
    assert sum(alphas) == pytest.approx(0.01)
    assert all(a > 0 for a in alphas)


def test_search_narrows_and_skips() -> None:
    s = Search(8)
    assert s.next_probe() == 4
    s.record(4, GOOD)
    assert s.next_probe() == 6
    s.record(6, UNDECIDED)  # skipped: the nearest other commit is next
    assert s.next_probe() == 5
    s.record(5, BAD)
    assert s.found and s.range == (5, 5)


def test_search_with_everything_skipped_answers_a_range() -> None:
    s = Search(4)
    for i in (2, 1, 3):
        assert s.next_probe() == i
        s.record(i, "build-failed")
    assert s.next_probe() is None and not s.found and s.range == (1, 4)


def test_probe_decisions_follow_the_data() -> None:
    rng = np.random.default_rng(1)
    g, b = rng.normal(0, 0.03, 20), rng.normal(0.06, 0.03, 20)
    assert decide_probe(g, b, rng.normal(0.06, 0.03, 20), 1.0, 0.01).verdict == BAD
    assert decide_probe(g, b, rng.normal(0.0, 0.03, 20), 1.0, 0.01).verdict == GOOD
    # A metric that goes down (higher is better): direction -1
    assert decide_probe(-g, -b, -rng.normal(0.06, 0.03, 20), -1.0, 0.01).verdict == BAD
    check = decide_check(g, b, 0.01, 2.0, last=False)
    assert check.verdict == "change" and check.direction == 1.0
    same = decide_check(g, rng.normal(0, 0.003, 20) + g, 0.01, 2.0, last=False)
    assert same.verdict == "no-change"


def test_simulated_wrong_commit_rate_stays_under_alpha() -> None:
    sim = _simulation()
    reps = 150
    rows = sim.table(reps, seed=5, settings=[(20, 0.06, 0.03, "t3", 0.0), (20, 0.0, 0.03, "lognormal", 0.0)])
    found, null = rows
    bound = 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)
    assert found["wrong"] <= bound and null["wrong"] <= bound
    assert found["found"] >= 0.9  # and it does find the commit
    assert found["probes"] <= 2 * math.log2(20)


def test_a_build_a_little_off_goods_level_is_not_a_move_towards_bad() -> None:
    # The same code built in another worktree, 1.5 % slower in every run (measurement bias),
    # while bad is 40 % slower: below min_effect (2 %) that is no change.
    rng = np.random.default_rng(3)
    g = rng.normal(0, 0.01, 12)
    b, p = g + math.log(1.4) + rng.normal(0, 0.005, 12), g + math.log(1.015) + rng.normal(0, 0.002, 12)
    assert decide_probe(g, b, p, 1.0, 0.01).verdict == BAD  # any consistent shift, without a margin
    assert decide_probe(g, b, p, 1.0, 0.01, math.log1p(0.02)).verdict == GOOD
    # A real move beyond the margin is still the first move towards bad, even if not all the way.
    assert decide_probe(g, b, g + math.log(1.10) + rng.normal(0, 0.002, 12), 1.0, 0.01, math.log1p(0.02)).verdict == BAD


def test_builds_off_their_level_do_not_mislead_the_search() -> None:
    # Every commit's build off by up to 2.5 % (drawn once per commit), a 40 % change over 48
    # commits: a probe between good's and bad's levels is bad only beyond min_effect (2 %); with
    # no margin (min_effect 0, the rule before) such builds are named in about 7 % of searches.
    sim = _simulation()
    reps = 200
    rng = np.random.Generator(np.random.PCG64(7))
    wrong = {0.0: 0, 2.0: 0}
    for _ in range(reps):
        truth = int(rng.integers(1, 49))
        state = rng.bit_generator.state
        for min_effect in wrong:
            rng.bit_generator.state = state  # the same search, with and without the margin
            out = sim.simulate_search(rng, 48, truth, 0.4, 0.03, "normal", 0.05, min_effect=min_effect, bias=0.025)
            wrong[min_effect] += out.named is not None and out.named != truth
    assert wrong[2.0] / reps <= 0.05 and wrong[2.0] < wrong[0.0]
