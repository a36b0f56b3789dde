"""Diagnostic rows kept as columns (verdict.Rows) drawn by hypothesis, for the tests of the rows
and of their JSON."""

from __future__ import annotations

from hypothesis import strategies as st

from benchsage.analyze.verdict import Rows, Trend

names = st.text(max_size=12)  # any unicode: quotes, backslashes, control characters, NUL, emoji
maybe_float = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False))
maybe_bool = st.one_of(st.none(), st.booleans())


@st.composite
def trend_rows(draw: st.DrawFn) -> Rows[Trend]:
    n = draw(st.integers(0, 20))
    column = lambda s: draw(st.lists(s, min_size=n, max_size=n))  # noqa: E731
    return Rows(
        Trend,
        {
            "test": column(names),
            "metric": column(names),
            "arm": column(st.sampled_from(["fixed", "random"])),
            "n": column(st.integers(-(2**70), 2**70)),
            "spearman_rho": column(maybe_float),
            "p": column(maybe_float),
            "p_adjusted": column(maybe_float),
            "significant": column(maybe_bool),
        },
    )
