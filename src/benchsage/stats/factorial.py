"""2^k full factorial designs with r replications: effects, their intervals, and the
allocation of variation (Jain, The Art of Computer Systems Performance Analysis, ch. 17-18).

Each of k factors has two levels, the first listed coded -1 (low) and the second +1 (high); every
one of the 2^k combinations (cells) is measured r times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import special


@dataclass(frozen=True)
class FactorialTerm:
    """One main effect or interaction: Jain's q with its interval and share of the variation.

    term: the factor names joined with ':' in declared order ("smt", "smt:governor").
    effect: q, half the difference between the mean response at +1 and at -1 of the term's
        sign column; ci: (low, high) at the result's level; variation_pct: 100 * 2^k r q^2 / SST
        (None when SST = 0: every observation equal).
    """

    term: str
    factors: tuple[str, ...]
    effect: float
    ci: tuple[float, float]
    variation_pct: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "term": self.term,
            "effect": float(self.effect),
            "ci": [float(self.ci[0]), float(self.ci[1])],
            "variation_pct": None if self.variation_pct is None else float(self.variation_pct),
        }


@dataclass(frozen=True)
class FactorialResult:
    """The analysis of one 2^k r design.

    q0: the grand mean, with its interval q0_ci; terms: every main effect and interaction,
    main effects first, then two-factor interactions, ..., each group in declared order;
    error_pct: 100 * SSE / SST (None when SST = 0); sst, sse: the sums of squares; s_e: the
    standard deviation of errors; df: 2^k (r - 1), the degrees of freedom of the intervals.
    """

    factors: tuple[str, ...]
    levels: tuple[tuple[Any, Any], ...]
    r: int
    level: float
    q0: float
    q0_ci: tuple[float, float]
    terms: tuple[FactorialTerm, ...]
    error_pct: float | None
    sst: float
    sse: float
    s_e: float
    df: int

    def term(self, name: str) -> FactorialTerm:
        for t in self.terms:
            if t.term == name:
                return t
        raise KeyError(f"no term {name!r}: the terms are {', '.join(t.term for t in self.terms)}")

    def to_json(self) -> dict[str, Any]:
        """{"terms": [...]} as in the analysis JSON, the error last."""
        error = {"term": "error", "variation_pct": None if self.error_pct is None else float(self.error_pct)}
        return {"terms": [t.to_json() for t in self.terms] + [error]}


def term_masks(k: int) -> list[int]:
    """The 2^k - 1 terms as bit masks over the factors (bit j: factor j), main effects first,
    then interactions of two factors, and so on; within an order, in declared order."""
    return [sum(1 << j for j in combo) for order in range(1, k + 1) for combo in combinations(range(k), order)]


def sign_table(k: int) -> np.ndarray:
    """Jain's sign table, shape (2^k cells, 2^k columns): column 0 is I (all +1), column `mask`
    the product of the signs of the factors in `mask`; cell c has factor j high (+1) when bit
    j of c is set (Jain, Table 17.3 and its extension in Section 17.7)."""
    cells = np.arange(1 << k)
    signs = np.where((cells[:, None] >> np.arange(k)[None, :]) & 1, 1.0, -1.0)  # (cells, k)
    table = np.ones((1 << k, 1 << k))
    for mask in range(1, 1 << k):
        for j in range(k):
            if mask >> j & 1:
                table[:, mask] *= signs[:, j]
    return table


@dataclass(frozen=True, eq=False)
class Effects2k:
    """Vectorised over leading dimensions: q (..., 2^k) indexed by term mask (q[..., 0] = q0),
    half_width (...) of every q's interval, ss_term (..., 2^k) with ss_term[..., 0] = 0, sse,
    sst and s_e (...). All q's of one design share the same half-width."""

    q: np.ndarray
    half_width: np.ndarray
    ss_term: np.ndarray
    sse: np.ndarray
    sst: np.ndarray
    s_e: np.ndarray
    df: int


def effects_2k(cells: np.ndarray, level: float = 0.95) -> Effects2k:
    """Effects and intervals of 2^k r designs given as an array (..., 2^k, r): cell c holds the
    r observations with factor j at its high level when bit j of c is set.

    Jain (1991), Sections 18.2-18.4: with cell means ybar_c,
        q_mask = (1 / 2^k) sum_c sign_mask(c) ybar_c                  (q_0 is the grand mean)
        SSE = sum_c sum_i (y_ci - ybar_c)^2,  SST = sum (y - ybar)^2 = 2^k r sum_mask q_mask^2 + SSE
        s_e^2 = SSE / (2^k (r - 1)),  s_q = s_e / sqrt(2^k r)
        q_mask +- t_{(1 + level) / 2; 2^k (r - 1)} s_q
    The interval assumes independent, normal errors of equal variance in every cell.
    """
    y = np.asarray(cells, dtype=np.float64)
    if y.ndim < 2:
        raise ValueError(f"cells must have shape (..., 2^k, r), got {y.shape}")
    n_cells, r = y.shape[-2], y.shape[-1]
    k = n_cells.bit_length() - 1
    if k < 1 or n_cells != 1 << k:
        raise ValueError(f"a 2^k design has 2, 4, 8, ... cells, got {n_cells}")
    if r < 2:
        raise ValueError("each cell needs at least 2 replications: with r = 1 there is no estimate of the error, hence no interval")
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must lie strictly between 0 and 1, got {level}")
    means = y.mean(axis=-1)  # (..., cells)
    q = means @ sign_table(k) / n_cells  # (..., 2^k)
    resid = y - means[..., None]
    sse = np.sum(resid * resid, axis=(-2, -1))
    ss_term = n_cells * r * q * q
    ss_term[..., 0] = 0.0
    # SST from its definition, not as the sum of the parts, so the allocation adds up to 100%
    # only as far as the data satisfy the identity (they do to rounding).
    dev = y - q[..., 0][..., None, None]
    sst = np.sum(dev * dev, axis=(-2, -1))
    df = n_cells * (r - 1)
    s_e = np.sqrt(sse / df)
    t = special.stdtrit(df, (1.0 + level) / 2.0)
    half = t * s_e / math.sqrt(n_cells * r)
    return Effects2k(q=q, half_width=half, ss_term=ss_term, sse=sse, sst=sst, s_e=s_e, df=df)


def _cell_label(names: Sequence[str], levels: Sequence[tuple[Any, Any]], cell: int) -> str:
    return ", ".join(f"{name}={levels[j][cell >> j & 1]}" for j, name in enumerate(names))


def factorial_2k(values: Any, settings: Mapping[str, Sequence[Any]], factors: Mapping[str, Sequence[Any]], level: float = 0.95) -> FactorialResult:
    """Analyse a 2^k r full factorial experiment.

    values: the N observations (e.g. one test's wall times); settings: for each factor, the
    level of each observation (N values each); factors: the factors in declared order, each
    with its two levels (low first, as listed in the spec). See effects_2k for the formulas.

    Raises ValueError, naming the cell, when a combination of levels has no observation or a
    different number of them than the others (a 2^k r design needs the same r everywhere); when
    r < 2 (no error estimate); when there is no factor, a factor has not exactly two distinct
    levels, or an observation has a level its factor does not declare.
    """
    names = tuple(factors)
    k = len(names)
    if k < 1:
        raise ValueError("a factorial design needs at least one factor")
    levels: list[tuple[Any, Any]] = []
    for name in names:
        lv = tuple(factors[name])
        if len(lv) != 2 or lv[0] == lv[1]:
            raise ValueError(f"factor {name!r} must have exactly two distinct levels, got {list(lv)}")
        levels.append((lv[0], lv[1]))
    y = np.asarray(values, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"values must be 1-d, got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("values hold NaN or infinite numbers; drop them before the analysis")
    extra = set(settings) - set(names)
    if extra:
        raise ValueError(f"settings name factors that are not declared: {', '.join(sorted(map(str, extra)))}")
    cell = np.zeros(len(y), dtype=np.int64)
    for j, name in enumerate(names):
        if name not in settings:
            raise ValueError(f"no settings for factor {name!r}")
        s = list(settings[name])
        if len(s) != len(y):
            raise ValueError(f"factor {name!r} has {len(s)} settings for {len(y)} values")
        low, high = levels[j]
        is_high = np.array([v == high for v in s], dtype=bool)
        is_low = np.array([v == low for v in s], dtype=bool)
        bad = ~(is_high | is_low)
        if bad.any():
            raise ValueError(f"factor {name!r} has level {s[int(np.argmax(bad))]!r}, not one of its levels {low!r}, {high!r}")
        cell |= is_high.astype(np.int64) << j
    counts = np.bincount(cell, minlength=1 << k)
    missing = np.flatnonzero(counts == 0)
    if len(missing):
        raise ValueError(f"no observations at {_cell_label(names, levels, int(missing[0]))}: a full factorial design measures every combination of levels ({len(missing)} of {1 << k} missing)")
    r = int(np.max(counts))
    short = np.flatnonzero(counts != r)
    if len(short):
        c = int(short[0])
        raise ValueError(
            f"{int(counts[c])} observations at {_cell_label(names, levels, c)} but {r} elsewhere: "
            "a 2^k r design needs the same number of replications in every cell"
        )
    if r < 2:
        raise ValueError("one observation per cell: without replications there is no estimate of the error, so no interval; measure each combination at least twice")
    order = np.argsort(cell, kind="stable")
    res = effects_2k(y[order].reshape(1 << k, r), level)
    sst = float(res.sst)
    half = float(res.half_width)
    terms = []
    for mask in term_masks(k):
        q = float(res.q[mask])
        members = tuple(names[j] for j in range(k) if mask >> j & 1)
        pct = 100.0 * float(res.ss_term[mask]) / sst if sst > 0 else None
        terms.append(FactorialTerm(term=":".join(members), factors=members, effect=q, ci=(q - half, q + half), variation_pct=pct))
    q0 = float(res.q[0])
    return FactorialResult(
        factors=names,
        levels=tuple(levels),
        r=r,
        level=float(level),
        q0=q0,
        q0_ci=(q0 - half, q0 + half),
        terms=tuple(terms),
        error_pct=100.0 * float(res.sse) / sst if sst > 0 else None,
        sst=sst,
        sse=float(res.sse),
        s_e=float(res.s_e),
        df=res.df,
    )
