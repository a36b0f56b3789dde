"""Full factorial designs with replications whose factors have any number of levels: the
allocation of variation to each main effect and interaction, with F tests (Jain, The Art of
Computer Systems Performance Analysis, 1991, ch. 20-23: one-factor designs, two-factor designs
with replications, general full factorial designs; Montgomery, Design and Analysis of
Experiments, ch. 5).

Each of k factors has l_j levels; every one of the prod(l_j) combinations (cells) is measured
r >= 2 times (a balanced design). With two levels everywhere, the sums of squares are those of
the 2^k r analysis (stats/factorial.py): SS of a term = 2^k r q^2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import special

from benchsage.stats.permutation import least_p, log_assignments

from benchsage.stats.factorial import term_masks


@dataclass(frozen=True)
class AnovaTerm:
    """One main effect or interaction of a full factorial design.

    term: the factor names joined with ':' in declared order ("threads", "threads:governor");
    df: prod(l_j - 1) over its factors; ss: its sum of squares; ms = ss / df; f = ms / MSE and p
    its upper tail in F(df, error df) (None when MSE = 0 and ss = 0; f infinite and p 0 when
    MSE = 0 < ss); variation_pct: 100 ss / SST (None when SST = 0).
    """

    term: str
    factors: tuple[str, ...]
    df: int
    ss: float
    ms: float
    f: float | None
    p: float | None
    variation_pct: float | None

    def to_json(self) -> dict[str, Any]:
        finite_f = None if self.f is None or not math.isfinite(self.f) else float(self.f)
        return {"term": self.term, "df": self.df, "ss": float(self.ss), "ms": float(self.ms), "f": finite_f,
                "p": None if self.p is None else float(self.p),
                "variation_pct": None if self.variation_pct is None else float(self.variation_pct)}


@dataclass(frozen=True)
class AnovaResult:
    """The analysis of one balanced full factorial design with r replications.

    levels: each factor's levels in declared order; mean: the grand mean; effects: each
    factor's main effect per level, alpha_j = (mean at level j) - (grand mean) (Jain, Eq. 20.2);
    terms: main effects first, then two-factor interactions, ..., each group in declared order;
    sse, error_df = cells (r - 1), mse = sse / error_df; sst = sum (y - mean)^2, which the terms'
    ss and sse add up to; error_pct = 100 sse / sst (None when sst = 0).
    """

    factors: tuple[str, ...]
    levels: tuple[tuple[Any, ...], ...]
    r: int
    mean: float
    effects: Mapping[str, tuple[float, ...]]
    terms: tuple[AnovaTerm, ...]
    sse: float
    error_df: int
    mse: float
    sst: float
    error_pct: float | None

    def term(self, name: str) -> AnovaTerm:
        for t in self.terms:
            if t.term == name:
                return t
        raise KeyError(f"no term {name!r}: the terms are {', '.join(t.term for t in self.terms)}")

    def to_json(self) -> dict[str, Any]:
        """{"terms": [...]} with the error last, as the analysis JSON's "factorial" carries them."""
        error = {"term": "error", "df": self.error_df, "ss": float(self.sse), "ms": float(self.mse),
                 "variation_pct": None if self.error_pct is None else float(self.error_pct)}
        return {"terms": [t.to_json() for t in self.terms] + [error]}


def _marginal(means: np.ndarray, mask: int) -> np.ndarray:
    """The cell means averaged over every factor not in `mask`, kept broadcastable."""
    others = tuple(j for j in range(means.ndim) if not mask >> j & 1)
    return means.mean(axis=others, keepdims=True) if others else means


def term_sums_of_squares(cells: np.ndarray) -> tuple[dict[int, float], float, float]:
    """SS of every term (by bit mask over the factors), SSE and SST of a balanced design given
    as an array of shape (l_1, ..., l_k, r).

    A term's effect is its marginal means with every lower-order marginal removed by
    inclusion-exclusion, effect_S = sum over T subset of S of (-1)^(|S|-|T|) ybar_T (Montgomery,
    Section 5.3; Jain, Eqs. 22.2 and 23.1), and SS_S = r * sum over the cells of effect_S^2;
    SSE = sum (y - ybar_cell)^2, SST = sum (y - ybar)^2 = sum_S SS_S + SSE.
    """
    y = np.asarray(cells, dtype=np.float64)
    k, r = y.ndim - 1, y.shape[-1]
    means = y.mean(axis=-1)
    shape = means.shape
    ss: dict[int, float] = {}
    for mask in term_masks(k):
        effect = np.zeros([1] * k)
        sub = mask
        while True:  # every subset of mask, mask itself first and 0 last
            sign = -1.0 if (bin(mask).count("1") - bin(sub).count("1")) % 2 else 1.0
            effect = effect + sign * _marginal(means, sub)
            if sub == 0:
                break
            sub = (sub - 1) & mask
        ss[mask] = float(r * np.sum(np.broadcast_to(effect, shape) ** 2))
    sse = float(np.sum((y - means[..., None]) ** 2))
    sst = float(np.sum((y - means.mean()) ** 2))
    return ss, sse, sst


def _cell_label(names: Sequence[str], levels: Sequence[Sequence[Any]], index: tuple[int, ...]) -> str:
    return ", ".join(f"{name}={levels[j][i]}" for j, (name, i) in enumerate(zip(names, index)))


def _cells(y: np.ndarray, settings: Mapping[str, Sequence[Any]], names: tuple[str, ...],
           levels: list[tuple[Any, ...]]) -> np.ndarray:
    """The observations as (l_1, ..., l_k, r), or ValueError naming what keeps them from it."""
    extra = set(settings) - set(names)
    if extra:
        raise ValueError(f"settings name factors that are not declared: {', '.join(sorted(map(str, extra)))}")
    shape = tuple(len(lv) for lv in levels)
    index = []
    for name, lv in zip(names, levels):
        if name not in settings:
            raise ValueError(f"no settings for factor {name!r}")
        s = list(settings[name])
        if len(s) != len(y):
            raise ValueError(f"factor {name!r} has {len(s)} settings for {len(y)} values")
        position = {level: i for i, level in enumerate(lv)}
        bad = next((v for v in s if v not in position), None)
        if bad is not None:
            raise ValueError(f"factor {name!r} has level {bad!r}, not one of its levels {', '.join(map(repr, lv))}")
        index.append(np.array([position[v] for v in s], dtype=np.int64))
    cell = np.ravel_multi_index(tuple(index), shape) if len(y) else np.zeros(0, dtype=np.int64)
    counts = np.bincount(cell, minlength=math.prod(shape))
    missing = np.flatnonzero(counts == 0)
    if len(missing):
        where = _cell_label(names, levels, np.unravel_index(int(missing[0]), shape))
        raise ValueError(f"no observations at {where}: a full factorial design measures every combination of levels "
                         f"({len(missing)} of {len(counts)} missing)")
    r = int(counts.max())
    short = np.flatnonzero(counts != r)
    if len(short):
        where = _cell_label(names, levels, np.unravel_index(int(short[0]), shape))
        raise ValueError(f"{int(counts[short[0]])} observations at {where} but {r} elsewhere: "
                         "the analysis needs the same number of replications in every cell")
    if r < 2:
        raise ValueError("one observation per cell: without replications there is no estimate of the error, so no F test; "
                         "measure each combination at least twice")
    return y[np.argsort(cell, kind="stable")].reshape(*shape, r)


def factorial_anova(values: Any, settings: Mapping[str, Sequence[Any]], factors: Mapping[str, Sequence[Any]]) -> AnovaResult:
    """Analyse a balanced full factorial experiment with replications.

    values: the N observations; settings: for each factor, the level of each observation;
    factors: the factors in declared order, each with its levels (at least two, distinct).
    For a term S with df_S = prod over S of (l_j - 1) and the error's df_E = cells (r - 1):
        F_S = (SS_S / df_S) / (SSE / df_E),   p = P(F(df_S, df_E) > F_S)
    (Jain, Table 22.5 and Section 23.2). The F tests assume independent, normal errors of equal
    variance in every cell; the p-values are not corrected for the number of terms.

    Raises ValueError, naming the cell, when a combination of levels has no observation or a
    different number of them than the others; when r < 2; when there is no factor, a factor has
    fewer than two distinct levels, or an observation has a level its factor does not declare.
    """
    names = tuple(factors)
    if not names:
        raise ValueError("a factorial design needs at least one factor")
    levels = [tuple(factors[name]) for name in names]
    for name, lv in zip(names, levels):
        if len(lv) < 2 or len(set(lv)) != len(lv):
            raise ValueError(f"factor {name!r} must have at least two distinct levels, got {list(lv)}")
    y = np.asarray(values, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"values must be 1-d, got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("values hold NaN or infinite numbers; drop them before the analysis")
    cells = _cells(y, settings, names, levels)
    ss, sse, sst = term_sums_of_squares(cells)
    k, r = len(names), cells.shape[-1]
    error_df = math.prod(cells.shape[:-1]) * (r - 1)
    mse = sse / error_df
    # Never below one over the ways to deal the N observations into the cells (r each): an F
    # tail underflows to 0, and with no error at all the F test gives 0.
    n_cells = math.prod(cells.shape[:-1])
    floor = float(least_p(log_assignments(n_cells * r, n_cells * math.lgamma(r + 1))))
    terms = []
    for mask in term_masks(k):
        members = tuple(names[j] for j in range(k) if mask >> j & 1)
        df = math.prod(len(levels[j]) - 1 for j in range(k) if mask >> j & 1)
        ms = ss[mask] / df
        if mse > 0:
            f: float | None = ms / mse
            p: float | None = max(float(special.fdtrc(df, error_df, f)), floor)
        else:  # no error at all: the least p a test of these cells can give; no variation is no evidence
            f, p = (math.inf, floor) if ms > 0 else (None, None)
        terms.append(AnovaTerm(":".join(members), members, df, ss[mask], ms, f, p, 100.0 * ss[mask] / sst if sst > 0 else None))
    means = cells.mean(axis=-1)
    grand = float(means.mean())
    effects = {name: tuple(float(v) - grand for v in _marginal(means, 1 << j).ravel()) for j, name in enumerate(names)}
    return AnovaResult(factors=names, levels=tuple(levels), r=r, mean=grand, effects=effects, terms=tuple(terms), sse=sse,
                       error_df=error_df, mse=mse, sst=sst, error_pct=100.0 * sse / sst if sst > 0 else None)
