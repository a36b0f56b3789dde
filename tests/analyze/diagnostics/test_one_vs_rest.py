"""One category against the rest of its comparison: equal to kruskal_2 of the two samples and to
numpy's medians, whether the pairs are counted densely or sparsely."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.analyze.diagnostics.one_vs_rest import one_vs_rest
from benchsage.stats.ranksum import kruskal_2


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 120),
    n_comp=st.integers(1, 4),
    n_cat=st.integers(1, 6),
    decimals=st.integers(0, 2),
    min_values=st.integers(1, 6),
    same=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_one_vs_rest_equals_kruskal_2_and_numpy_medians(n: int, n_comp: int, n_cat: int, decimals: int, min_values: int, same: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=n), decimals)  # ties when rounded
    effect = values if same else rng.normal(size=n)
    comp = rng.integers(0, n_comp, n)
    cat = rng.integers(0, n_cat, n)
    res = one_vs_rest(values, effect, comp, cat, n_comp, n_cat, min_values)
    examined = 0
    for c in range(n_comp):
        for k in range(n_cat):
            sel = comp == c
            inside = cat[sel] == k
            if inside.sum() < min_values or (~inside).sum() < min_values:
                continue
            j = examined
            examined += 1
            assert (res.comp[j], res.cat[j]) == (c, k)
            ref = kruskal_2(values[sel], np.zeros(int(sel.sum()), dtype=np.int64), inside, 1)
            np.testing.assert_allclose(res.h[j], ref.statistic[0], rtol=1e-9, equal_nan=True)
            np.testing.assert_allclose(res.p[j], ref.pvalue[0], rtol=1e-9, equal_nan=True)
            assert res.median_at[j] == np.median(effect[sel][inside])
            assert res.median_other[j] == np.median(effect[sel][~inside])
    assert examined == len(res.comp)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 200), n_comp=st.integers(1, 5), n_cat=st.integers(1, 8), min_values=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_one_vs_rest_sparse_counting_equals_dense(n: int, n_comp: int, n_cat: int, min_values: int, seed: int) -> None:
    # With 40,000 tests the (test, predecessor) pairs would need 1.6e9 dense counters; past a
    # size the pairs are counted with np.unique. Declaring 2**20 + 1 categories forces that path.
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=n), 1)
    comp = rng.integers(0, n_comp, n)
    cat = rng.integers(0, n_cat, n)
    dense = one_vs_rest(values, values, comp, cat, n_comp, n_cat, min_values)
    sparse = one_vs_rest(values, values, comp, cat, n_comp, (1 << 20) + 1, min_values)
    for field in ("comp", "cat", "n_at", "n_other", "median_at", "median_other", "h", "p"):
        assert np.array_equal(getattr(dense, field), getattr(sparse, field), equal_nan=True), field

