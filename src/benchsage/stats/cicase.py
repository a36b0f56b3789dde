"""The CI "case" of two medians with their confidence intervals (fixed arm vs random arm).

Duplyakin et al., USENIX ATC 2023, Section 5.3 and Algorithm 2: how the 95% intervals of the
two arms' medians relate says whether a conclusion could change with the order of tests.
"""

from __future__ import annotations

import numpy as np

CI_CASE_RULES: tuple[str, ...] = ("paper", "algorithm-2")

UNKNOWN = 0  # an interval or median is missing (too few values)
NO_OVERLAP = 1  # red flag: the conclusion could change with the order
MEDIAN_INSIDE = 2  # conclusion unlikely to change
OVERLAP_ONLY = 3  # inconclusive


def ci_case(
    med_f: np.ndarray,
    low_f: np.ndarray,
    high_f: np.ndarray,
    med_r: np.ndarray,
    low_r: np.ndarray,
    high_r: np.ndarray,
    rule: str = "paper",
) -> np.ndarray:
    """Case 1, 2 or 3 for each pair of intervals (int8), 0 where any input is NaN.

    rule "paper" (the paper's prose, Section 5.3): 1 when the intervals do not overlap; 2 when
        at least one median lies inside the other arm's interval; 3 when they overlap but
        neither median lies inside the other's interval.
    rule "algorithm-2" (the paper's Algorithm 2): 1 when they do not overlap; 2 only when BOTH
        medians lie inside the other arm's interval; any other overlap is 3.
    Bounds are inclusive: intervals that touch overlap, a median on a bound is inside.
    """
    if rule not in CI_CASE_RULES:
        raise ValueError(f"unknown CI case rule {rule!r}: expected one of {', '.join(CI_CASE_RULES)}")
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (med_f, low_f, high_f, med_r, low_r, high_r)))
    mf, lf, hf, mr, lr, hr = arrays
    known = ~np.any(np.isnan(np.stack(arrays)), axis=0) if arrays[0].size else np.zeros(arrays[0].shape, bool)
    with np.errstate(invalid="ignore"):
        overlap = (lf <= hr) & (lr <= hf)
        f_inside_r = (lr <= mf) & (mf <= hr)
        r_inside_f = (lf <= mr) & (mr <= hf)
    inside = (f_inside_r | r_inside_f) if rule == "paper" else (f_inside_r & r_inside_f)
    case = np.where(~overlap, NO_OVERLAP, np.where(inside, MEDIAN_INSIDE, OVERLAP_ONLY)).astype(np.int8)
    return np.where(known, case, UNKNOWN).astype(np.int8)
