"""CI cases under the paper's prose rule and under its Algorithm 2."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.stats import ci_case


def case(mf, lf, hf, mr, lr, hr, rule="paper"):
    return int(ci_case(np.array([mf]), np.array([lf]), np.array([hf]), np.array([mr]), np.array([lr]), np.array([hr]), rule)[0])


def test_no_overlap_is_case_1():
    assert case(5, 4, 6, 9, 8, 10) == 1
    assert case(9, 8, 10, 5, 4, 6, "algorithm-2") == 1


def test_touching_intervals_overlap():
    assert case(5, 4, 6, 7, 6, 8) == 3  # share the bound 6; neither median inside


def test_one_median_inside():
    # fixed [4, 8] median 6; random [7, 12] median 10: 7 <= 6? no; 10 in [4, 8]? no -> 3.
    assert case(6, 4, 8, 10, 7, 12) == 3
    # random median 7.5 inside fixed [4, 8], fixed median 6 not inside [7, 12]:
    assert case(6, 4, 8, 7.5, 7, 12) == 2
    assert case(6, 4, 8, 7.5, 7, 12, "algorithm-2") == 3


def test_both_medians_inside():
    assert case(5, 3, 7, 5.5, 4, 8) == 2
    assert case(5, 3, 7, 5.5, 4, 8, "algorithm-2") == 2


def test_paper_table3_get_hits_is_case_3():
    assert case(70154.6, 68758.2, 73462.2, 67697.8, 65817.7, 68776.9) == 3


def test_nan_is_unknown():
    out = ci_case(np.array([1.0, 1.0]), np.array([np.nan, 0.0]), np.array([2.0, 2.0]), np.array([1.0, 1.0]), np.array([0.0, 0.0]), np.array([2.0, 2.0]))
    assert list(out) == [0, 2]
    assert out.dtype == np.int8


def test_bad_rule():
    with pytest.raises(ValueError, match="unknown CI case rule 'strict'"):
        ci_case(1, 0, 2, 1, 0, 2, "strict")


intervals = st.tuples(st.floats(-100, 100), st.floats(0, 50), st.floats(0, 1)).map(
    lambda t: (t[0] + t[2] * t[1], t[0], t[0] + t[1])  # (median, low, high) with low <= median <= high
)


@settings(max_examples=300, deadline=None)
@given(intervals, intervals)
def test_properties(f, r):
    paper = case(*f, *r)
    alg2 = case(*f, *r, rule="algorithm-2")
    assert paper == case(*r, *f)  # symmetric in the arms
    assert alg2 == case(*r, *f, rule="algorithm-2")
    assert (paper == 1) == (alg2 == 1)  # the rules differ only on case 2 vs 3
    if alg2 == 2:
        assert paper == 2
