"""Kruskal-Wallis H test of two samples, computed for many comparisons at once.

Each value belongs to one comparison (a group code) and one of its two samples (a 0/1 label);
one sort ranks every comparison, so thousands of tests cost about as much as one big sort.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from benchsage.stats._grouped import GroupedRanks, check_grouped, grouped_ranks


@dataclass(frozen=True, eq=False)
class KruskalResult:
    """Per comparison: H (tie-corrected), its p-value, and the sizes of samples 0 and 1.

    statistic and pvalue are NaN where the test is undefined: a sample is empty, or every
    value of the comparison is equal.
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    n0: np.ndarray
    n1: np.ndarray


def kruskal_2(values: np.ndarray, group: np.ndarray, label: np.ndarray, n_groups: int, *, ranks: GroupedRanks | None = None) -> KruskalResult:
    """Kruskal-Wallis H with the tie correction, for n_groups two-sample comparisons.

    Kruskal & Wallis (1952), "Use of ranks in one-criterion variance analysis", JASA 47(260).
    With N values ranked together (ties get their average rank), n_i values and rank sum R_i
    in sample i:

        H = 12 / (N (N + 1)) * sum_i R_i**2 / n_i - 3 (N + 1)
        H_corrected = H / (1 - sum_runs (t**3 - t) / (N**3 - N))

    and p = P(chi2_1 >= H_corrected), chi-squared with k - 1 = 1 degree of freedom. For two
    samples the sum collapses to 12 S**2 / ((N + 1) n0 n1), where S is the sum over sample 1 of
    (rank - (N + 1) / 2); ranks are half-integers, so S is exact and H keeps full relative
    precision even when it is tiny (the textbook form subtracts two large numbers).
    Agrees with scipy.stats.kruskal(sample0, sample1) to 1e-9 relative; where H is within
    rounding of 0, scipy's H carries an error of ~1e-14 that moves its p by up to ~1e-7 (the
    chi-squared tail is infinitely steep at 0), and the value here is the exact one.

    values: float array; group: int codes 0..n_groups-1, which comparison each value is in;
    label: 0/1 (or bool), which of the comparison's two samples the value belongs to.
    ranks: grouped_ranks(values, group, n_groups) when the caller has it already (to reuse its
    sort for other statistics).
    """
    v, g = check_grouped(values, group, n_groups)
    lab = np.asarray(label)
    if lab.shape != v.shape:
        raise ValueError(f"label must have the shape of values {v.shape}, got {lab.shape}")
    if lab.dtype != bool:
        if len(lab) and not np.isin(lab, (0, 1)).all():
            raise ValueError("label must hold only 0 and 1 (which of the two samples)")
        lab = lab.astype(bool)
    gr = ranks if ranks is not None else grouped_ranks(v, g, n_groups)
    n = gr.counts.astype(np.float64)
    n1 = np.bincount(g, weights=lab, minlength=n_groups).astype(np.int64) if len(g) else np.zeros(n_groups, np.int64)
    n0 = gr.counts - n1
    if len(v):
        centred = gr.ranks_sorted - (n[gr.sorted_group] + 1.0) / 2.0
        s1 = np.bincount(gr.sorted_group, weights=centred * lab[gr.order], minlength=n_groups)
    else:
        s1 = np.zeros(n_groups)
    # N**3 - N - sum(t**3 - t) is 0 exactly when all N values are tied (one run of length N).
    untied = n * n * n - n - gr.tie_term
    defined = (n0 > 0) & (n1 > 0) & (untied > 0)
    h = np.full(n_groups, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        # H / (1 - T / (N^3 - N)) = 12 S^2 (N^3 - N) / ((N + 1) n0 n1 (N^3 - N - T))
        #                         = 12 S^2 N (N - 1) / (n0 n1 (N^3 - N - T))
        num = 12.0 * s1 * s1 * n * (n - 1.0)
        den = n0.astype(np.float64) * n1.astype(np.float64) * untied
        h[defined] = num[defined] / den[defined]
    p = np.full(n_groups, np.nan)
    p[defined] = special.chdtrc(1.0, h[defined])
    return KruskalResult(statistic=h, pvalue=p, n0=n0, n1=n1)
