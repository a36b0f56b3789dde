"""The decision at one look: which undecided tests are now decided "effect" (|z| crossed the
boundary, with Bonferroni or Holm across tests and looks) or "no-effect" (the repeated CI of the
shift lies within +-min_effect % of the fixed-arm median), vectorised over independent
experiments (the runner has one; the advice simulates many).
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

EFFECT = "effect"
NO_EFFECT = "no-effect"

# Codes of a test's state inside the vectorised core.
UNDECIDED, DECIDED_EFFECT, DECIDED_NO_EFFECT = 0, 1, 2
DECISIONS = {UNDECIDED: None, DECIDED_EFFECT: EFFECT, DECIDED_NO_EFFECT: NO_EFFECT}
CODES = {None: UNDECIDED, EFFECT: DECIDED_EFFECT, NO_EFFECT: DECIDED_NO_EFFECT}

# When an experiment stops before its last look (the spec's `decide`, vocabulary.DECIDE_RULES).
EACH = "each"  # every test decided
VERDICT = "verdict"  # the experiment's verdict settled
RULES = (EACH, VERDICT)


class Design(Protocol):
    """What the decision needs of a design (a SequentialDesign)."""

    alpha: float
    correction: str

    def critical(self, m: int, h: int | None = None, information: Sequence[float] | None = None) -> tuple[float, ...]: ...


def settled(state: np.ndarray) -> np.ndarray:
    """The verdict of R experiments from their tests' states (R, m): DECIDED_EFFECT where some
    test is decided "effect" (order matters in the experiment), DECIDED_NO_EFFECT where every
    test is decided "no-effect" (no order effect worth finding anywhere), UNDECIDED otherwise.
    This is the answer of OrderSage's Algorithm 1 (does order matter in this experiment?),
    which `decide = "verdict"` stops on."""
    state = np.asarray(state)
    out = np.full(state.shape[0], UNDECIDED, dtype=np.int8)
    out[(state == DECIDED_NO_EFFECT).all(axis=1)] = DECIDED_NO_EFFECT
    out[(state == DECIDED_EFFECT).any(axis=1)] = DECIDED_EFFECT
    return out


def stops(state: np.ndarray, rule: str) -> np.ndarray:
    """Whether each of R experiments (tests' states (R, m)) may stop under `rule`: "each",
    every test decided; "verdict", the experiment's verdict settled (`settled`)."""
    if rule == EACH:
        return (np.asarray(state) != UNDECIDED).all(axis=1)
    if rule == VERDICT:
        return settled(state) != UNDECIDED
    raise ValueError(f"unknown rule {rule!r}: expected one of {', '.join(RULES)}")


def relative_interval(low: np.ndarray, high: np.ndarray, median: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CI [low, high] of the shift in percent of the (fixed-arm) median: 100 x / |median|.
    NaN where the median is 0, except that a CI of exactly [0, 0] stays [0, 0]."""
    low, high, med = (np.asarray(v, dtype=np.float64) for v in (low, high, median))
    scale = np.abs(med)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(scale > 0, 100.0 * low / scale, np.where(low == 0, 0.0, np.nan))
        hi = np.where(scale > 0, 100.0 * high / scale, np.where(high == 0, 0.0, np.nan))
    return lo, hi


def decide_step(
    design: Design,
    look: int,
    abs_z: np.ndarray,
    within: np.ndarray,
    state: np.ndarray,
    information: Sequence[float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """New states of m tests in R experiments at look `look` (0-based), all looks' data known.

    abs_z: (R, m, look + 1) |z| of each test at looks 0..look (NaN: undefined or too few values).
    within: (R, m) bool, the no-effect condition at this look (the repeated CI of the shift lies
        within +-min_effect % of the median).
    state: (R, m) codes UNDECIDED / DECIDED_EFFECT / DECIDED_NO_EFFECT before this look.
    information: the information fractions of looks 0..look as taken (at least look + 1 of
        them; see `SequentialDesign.decide`); None: the design's planned fractions.
    Returns (new state, level): level is the per-test alpha at which a test decided "effect" at
    this look crossed (alpha / m for Bonferroni, alpha / h for Holm), NaN otherwise.

    Efficacy comes first: a test that crosses at this look is "effect" even if its CI also lies
    within the margin (the effect is then real but smaller than min_effect). A decided test
    stays decided; `SequentialDesign.decide` is this function with R = 1.
    """
    abs_z = np.asarray(abs_z, dtype=np.float64)
    state = np.asarray(state)
    r, m = state.shape
    if abs_z.shape != (r, m, look + 1):
        raise ValueError(f"abs_z must have shape {(r, m, look + 1)}, got {abs_z.shape}")
    open_ = state == UNDECIDED
    rejected = state == DECIDED_EFFECT
    new_state = state.copy()
    level = np.full((r, m), np.nan)
    with np.errstate(invalid="ignore"):
        if design.correction == "bonferroni":
            c = design.critical(m, m, information)[look]
            cross = open_ & (abs_z[:, :, look] >= c)
            rejected |= cross
            level[cross] = design.alpha / m
        else:
            # Holm across looks (closed testing of Bonferroni group-sequential intersection
            # tests): with h hypotheses not yet rejected, every open test whose |z| crossed
            # c_l(alpha / h) at some look l <= now is rejected; repeat while h shrinks.
            while True:
                h = m - rejected.sum(axis=1)
                crit = np.full((r, look + 1), np.inf)
                for hv in np.unique(h[h > 0]):
                    crit[h == hv] = design.critical(m, int(hv), information)[: look + 1]
                cross = open_ & ~rejected & (abs_z >= crit[:, None, :]).any(axis=2)
                if not cross.any():
                    break
                rejected |= cross
                level = np.where(cross, design.alpha / np.maximum(h, 1)[:, None], level)
    newly_effect = open_ & rejected
    new_state[newly_effect] = DECIDED_EFFECT
    newly_no_effect = open_ & ~newly_effect & np.asarray(within, dtype=bool)
    new_state[newly_no_effect] = DECIDED_NO_EFFECT
    return new_state, level
