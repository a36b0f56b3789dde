"""Rank tests across blocks and groups, computed for many comparisons at once.

van Elteren's stratified Wilcoxon test compares two samples (fixed and random arm) when the
values come in blocks (workers: machines whose levels differ); the k-sample Kruskal-Wallis test
compares the blocks themselves (do the workers measure the same thing?).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from benchsage.stats._grouped import GroupedRanks, check_grouped, grouped_ranks
from benchsage.stats.permutation import floor_p, log_assignments
from benchsage.stats.ranksum import label_rank_sums, rank_sum_variance


@dataclass(frozen=True, eq=False)
class StratifiedResult:
    """Per comparison: the chi-square statistic (1 df), its p-value, the number of strata that
    held both samples (the others carry no information), and the sizes of samples 0 and 1.

    statistic and pvalue are NaN where the test is undefined: no stratum holds both samples,
    or every stratum's values are all equal.
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    strata: np.ndarray
    n0: np.ndarray
    n1: np.ndarray


def _codes(label: np.ndarray, shape: tuple[int, ...], what: str) -> np.ndarray:
    lab = np.asarray(label)
    if lab.shape != shape:
        raise ValueError(f"{what} must have the shape of values {shape}, got {lab.shape}")
    if lab.dtype.kind not in "iub":
        raise ValueError(f"{what} must hold integer codes, got dtype {lab.dtype}")
    return lab.astype(np.int64, copy=False)


def pair_codes(group: np.ndarray, block: np.ndarray, n_blocks: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Dense codes of the (group, block) pairs that occur, ascending by (group, block).

    Returns (code of each row, group of each pair, number of pairs). A dense counter while the
    pairs' key space is small (no sort), np.unique otherwise.
    """
    width = max(int(n_blocks), 1)
    key = group.astype(np.int64) * width + block
    if len(key) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 0
    size = int(key.max()) + 1
    if size <= max(4 * len(key), 1 << 20):
        present = np.bincount(key, minlength=size) > 0
        keys = np.flatnonzero(present)
        code = (np.cumsum(present) - 1)[key]
    else:
        keys, code = np.unique(key, return_inverse=True)
    return code.ravel().astype(np.int64), keys // width, len(keys)


def van_elteren(
    values: np.ndarray,
    group: np.ndarray,
    stratum: np.ndarray,
    label: np.ndarray,
    n_groups: int,
    n_strata: int,
    *,
    ranks: GroupedRanks | None = None,
) -> StratifiedResult:
    """van Elteren's stratified Wilcoxon rank-sum test, for n_groups two-sample comparisons.

    van Elteren (1960), "On the combination of independent two-sample tests of Wilcoxon",
    Bulletin of the International Statistical Institute 37, 351-361; Lehmann, Nonparametrics
    (1975), Section 3.3. Within each stratum j of a comparison the values are ranked on their
    own (ties get their average rank). With n_j values, m_j of them in sample 1, S_j the sum over
    sample 1 of (rank - (n_j + 1) / 2) and T_j the stratum's tie term sum (t**3 - t), S_j and its
    variance are those of the two-sample rank-sum test (stats/ranksum.py):

        Var(S_j) = m_j (n_j - m_j) (n_j**3 - n_j - T_j) / (12 n_j (n_j - 1))
        chi2 = (sum_j w_j S_j)**2 / sum_j w_j**2 Var(S_j),   w_j = 1 / (n_j + 1)

    and p = P(chi2_1 >= chi2). The weights 1 / (n_j + 1) make the test locally most powerful
    against a shift common to all strata (each stratum's rank sum on the ridit scale). With one
    stratum chi2 is the tie-corrected Kruskal-Wallis H of the two samples (kruskal_2); a stratum
    that holds only one sample, or only equal values, adds nothing. Because ranks are taken
    within strata, strata whose levels differ (machines 3x apart) cannot hide a shift between
    the samples, as they do when all values are pooled and ranked together.

    values: float array; group: which comparison each value is in (0..n_groups-1); stratum:
    its block (0..n_strata-1); label: 0/1, which sample.
    ranks: grouped_ranks(values, pair, n_pairs) for pair, _, n_pairs = pair_codes(group,
    stratum, n_strata), when the caller has it already.
    """
    v, g = check_grouped(values, group, n_groups)
    s = _codes(stratum, v.shape, "stratum")
    if len(s) and (int(s.min()) < 0 or int(s.max()) >= n_strata):
        raise ValueError(f"stratum codes must lie in 0..{n_strata - 1}, got {int(s.min())}..{int(s.max())}")
    lab = _codes(label, v.shape, "label")
    if len(lab) and not np.isin(lab, (0, 1)).all():
        raise ValueError("label must hold only 0 and 1 (which of the two samples)")
    pair, pair_group, n_pairs = pair_codes(g, s, n_strata)
    gr = ranks if ranks is not None else grouped_ranks(v, pair, n_pairs)
    n = gr.counts.astype(np.float64)
    m = np.bincount(pair, weights=lab, minlength=n_pairs) if len(pair) else np.zeros(n_pairs)
    s1 = label_rank_sums(gr, lab, n_pairs)
    untied = n * n * n - n - gr.tie_term
    informative = (m > 0) & (m < n) & (untied > 0)
    weight = 1.0 / (n + 1.0)
    var = np.where(informative, rank_sum_variance(n - m, m, gr.tie_term), 0.0)
    numerator = np.bincount(pair_group, weights=np.where(informative, weight * s1, 0.0), minlength=n_groups)
    variance = np.bincount(pair_group, weights=weight * weight * var, minlength=n_groups)
    strata = np.bincount(pair_group, weights=informative, minlength=n_groups).astype(np.int64)
    n1 = np.bincount(g, weights=lab, minlength=n_groups).astype(np.int64) if len(g) else np.zeros(n_groups, np.int64)
    n0 = np.bincount(g, minlength=n_groups).astype(np.int64) - n1
    defined = variance > 0
    chi2 = np.full(n_groups, np.nan)
    chi2[defined] = numerator[defined] ** 2 / variance[defined]
    p = np.full(n_groups, np.nan)
    p[defined] = special.chdtrc(1.0, chi2[defined])
    # never below one over the splits of every stratum: prod_j C(n_j, m_j)
    splits = np.bincount(pair_group, weights=special.gammaln(n + 1.0) - special.gammaln(m + 1.0) - special.gammaln(n - m + 1.0),
                         minlength=n_groups)
    p[defined] = floor_p(p[defined], log_assignments(0.0, -splits[defined]))
    return StratifiedResult(statistic=chi2, pvalue=p, strata=strata, n0=n0, n1=n1)


@dataclass(frozen=True, eq=False)
class KruskalKResult:
    """Per comparison: H (tie-corrected), its degrees of freedom (samples present - 1) and p."""

    statistic: np.ndarray
    df: np.ndarray
    pvalue: np.ndarray


def kruskal_k(values: np.ndarray, group: np.ndarray, sample: np.ndarray, n_groups: int, n_samples: int) -> KruskalKResult:
    """Kruskal-Wallis H of k samples with the tie correction, for n_groups comparisons at once.

    Kruskal & Wallis (1952), "Use of ranks in one-criterion variance analysis", JASA 47(260),
    eq. (1.1) and the tie correction (1.2). With the N values of a comparison ranked together,
    n_i values and mean rank rbar_i in sample i, and T = sum over runs of ties of t**3 - t:

        H = 12 / (N (N + 1)) * sum_i n_i (rbar_i - (N + 1) / 2)**2 / (1 - T / (N**3 - N))

    with k - 1 degrees of freedom, k the number of samples that hold values; p = P(chi2_{k-1}
    >= H). The centred form keeps full precision. NaN where k < 2 or all values are equal.
    Agrees with scipy.stats.kruskal(*samples) to 1e-9 relative.
    """
    v, g, smp, gr, n, pair, pair_group, n_pairs = _ranked_samples(values, group, sample, n_groups, n_samples)
    ranks = gr.ranks()
    centred = ranks - (n[g] + 1.0) / 2.0 if len(v) else ranks
    n_pair = np.bincount(pair, minlength=n_pairs).astype(np.float64)
    sum_pair = np.bincount(pair, weights=centred, minlength=n_pairs)
    with np.errstate(divide="ignore", invalid="ignore"):
        between = np.bincount(pair_group, weights=sum_pair * sum_pair / n_pair, minlength=n_groups)
        k = np.bincount(pair_group, minlength=n_groups)
        untied = n * n * n - n - gr.tie_term
        # H / (1 - T / (N^3 - N)) = 12 B (N^3 - N) / (N (N + 1) (N^3 - N - T)) = 12 B (N - 1) / (N^3 - N - T)
        defined = (k >= 2) & (untied > 0)
        h = np.where(defined, 12.0 * between * (n - 1.0) / untied, np.nan)
    df = np.maximum(k - 1, 0).astype(np.int64)
    p = np.full(n_groups, np.nan)
    p[defined] = special.chdtrc(df[defined].astype(np.float64), h[defined])
    sizes = np.bincount(pair_group, weights=special.gammaln(n_pair + 1.0), minlength=n_groups)
    p[defined] = floor_p(p[defined], log_assignments(n[defined], sizes[defined]))  # never below 1 / (N! / prod n_i!)
    return KruskalKResult(statistic=h, df=df, pvalue=p)


def _ranked_samples(values: np.ndarray, group: np.ndarray, sample: np.ndarray, n_groups: int, n_samples: int) -> tuple:
    """Checked codes, the ranks within each comparison, its size N, and (comparison, sample)
    pair codes: what the k-sample Kruskal-Wallis test and Dunn's test both start from."""
    v, g = check_grouped(values, group, n_groups)
    smp = _codes(sample, v.shape, "sample")
    if len(smp) and (int(smp.min()) < 0 or int(smp.max()) >= n_samples):
        raise ValueError(f"sample codes must lie in 0..{n_samples - 1}, got {int(smp.min())}..{int(smp.max())}")
    gr = grouped_ranks(v, g, n_groups)
    n = gr.counts.astype(np.float64)
    pair, pair_group, n_pairs = pair_codes(g, smp, n_samples)
    return v, g, smp, gr, n, pair, pair_group, n_pairs


@dataclass(frozen=True, eq=False)
class DunnPairs:
    """Dunn's pairwise comparisons: one entry per (comparison, sample i, sample j), i < j, of the
    samples that hold values; z > 0 when sample i ranks higher than sample j."""

    group: np.ndarray
    i: np.ndarray
    j: np.ndarray
    z: np.ndarray
    pvalue: np.ndarray


def dunn(values: np.ndarray, group: np.ndarray, sample: np.ndarray, n_groups: int, n_samples: int) -> DunnPairs:
    """Dunn's test of every pair of samples after a Kruskal-Wallis test, for many comparisons.

    Dunn (1964), "Multiple comparisons using rank sums", Technometrics 6(3), 241-252, with the
    tie correction: the N values of a comparison ranked together (as for kruskal_k), rbar_i the
    mean rank of sample i, T = sum (t**3 - t) over runs of ties,

        z_ij = (rbar_i - rbar_j) / sqrt(s2 (1/n_i + 1/n_j)),   s2 = N (N + 1) / 12 - T / (12 (N - 1))

    and the two-sided p = 2 (1 - Phi(|z_ij|)), uncorrected. With two samples z**2 is the
    Kruskal-Wallis H. Pairs of a comparison whose values are all equal get NaN.
    """
    v, g, smp, gr, n, pair, pair_group, n_pairs = _ranked_samples(values, group, sample, n_groups, n_samples)
    pair_sample = np.zeros(n_pairs, dtype=np.int64)
    pair_sample[pair] = smp
    n_pair = np.bincount(pair, minlength=n_pairs).astype(np.float64)
    mean_rank = np.bincount(pair, weights=gr.ranks(), minlength=n_pairs) / np.maximum(n_pair, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        s2 = n * (n + 1.0) / 12.0 - gr.tie_term / (12.0 * (n - 1.0))
    # Pairs (a, b) of samples within each comparison: pairs are sorted by (group, sample).
    first = np.zeros(n_groups, dtype=np.int64)
    counts = np.bincount(pair_group, minlength=n_groups)
    np.cumsum(counts[:-1], out=first[1:])
    a_list, b_list = [], []
    for k in np.unique(counts[counts >= 2]).tolist():
        groups_k = np.flatnonzero(counts == k)
        ia, ib = np.triu_indices(k, 1)
        a_list.append((first[groups_k][:, None] + ia[None, :]).ravel())
        b_list.append((first[groups_k][:, None] + ib[None, :]).ravel())
    a = np.concatenate(a_list) if a_list else np.zeros(0, dtype=np.int64)
    b = np.concatenate(b_list) if b_list else np.zeros(0, dtype=np.int64)
    gg = pair_group[a]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (mean_rank[a] - mean_rank[b]) / np.sqrt(s2[gg] * (1.0 / n_pair[a] + 1.0 / n_pair[b]))
    z = np.where(s2[gg] > 0, z, np.nan)
    p = np.where(np.isfinite(z), 2.0 * special.ndtr(-np.abs(z)), np.nan)
    # never below 1 / C(n_i + n_j, n_i), one of the splits of the pair's values
    p = floor_p(p, log_assignments(n_pair[a] + n_pair[b], special.gammaln(n_pair[a] + 1.0) + special.gammaln(n_pair[b] + 1.0)))
    return DunnPairs(group=gg, i=pair_sample[a], j=pair_sample[b], z=z, pvalue=p)
