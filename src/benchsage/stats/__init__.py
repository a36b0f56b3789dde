"""Pure statistics on numpy arrays, vectorised over many comparisons at once.

No I/O, no printing, no pandas. Every function cites the formula or paper it implements and
returns small named results; scipy is used for distribution functions only.
"""

from benchsage.stats.cicase import CI_CASE_RULES, ci_case
from benchsage.stats.correction import METHODS as CORRECTIONS
from benchsage.stats.correction import Correction, adjust
from benchsage.stats.effect import (
    DEFAULT_CV_DDOF,
    GroupedMoments,
    eta_squared_h,
    grouped_cv,
    grouped_mean,
    grouped_moments,
    grouped_std,
    percent_difference,
)
from benchsage.stats.median_ci import (
    CI_METHODS,
    MedianCI,
    exact_binomial_coverage,
    exact_binomial_rank,
    grouped_median_ci,
    le_boudec_ranks,
    min_sample_size,
)
from benchsage.stats.ranksum import KruskalResult, RankSumResult, kruskal_2, mann_whitney, mann_whitney_z, rank_sum_test
from benchsage.stats.spearman import SpearmanResult, spearman_grouped
from benchsage.stats.stratified import DunnPairs, KruskalKResult, StratifiedResult, dunn, kruskal_k, van_elteren

__all__ = [
    "CI_CASE_RULES",
    "CI_METHODS",
    "CORRECTIONS",
    "DEFAULT_CV_DDOF",
    "Correction",
    "DunnPairs",
    "GroupedMoments",
    "KruskalKResult",
    "KruskalResult",
    "MedianCI",
    "RankSumResult",
    "SpearmanResult",
    "StratifiedResult",
    "adjust",
    "ci_case",
    "dunn",
    "eta_squared_h",
    "exact_binomial_coverage",
    "exact_binomial_rank",
    "grouped_cv",
    "grouped_mean",
    "grouped_median_ci",
    "grouped_moments",
    "grouped_std",
    "kruskal_2",
    "kruskal_k",
    "le_boudec_ranks",
    "mann_whitney",
    "mann_whitney_z",
    "min_sample_size",
    "percent_difference",
    "rank_sum_test",
    "spearman_grouped",
    "van_elteren",
]
