"""Effect sizes and descriptive statistics: eta squared of H, percent difference, and the
mean, standard deviation and coefficient of variation of many groups at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchsage.stats._grouped import check_grouped

# node_stats.csv of the OrderSage artifact reports CV with the population standard deviation
# (scipy.stats.variation, ddof=0): e.g. NPB spmv fixed arm 0.048, where ddof=1 gives 0.0486.
# benchsage uses the same so that its numbers can be compared with OrderSage's directly; the
# difference is a factor sqrt(n / (n - 1)), 1% at n = 50.
DEFAULT_CV_DDOF = 0


def eta_squared_h(h: np.ndarray | float, n: np.ndarray | int, k: int = 2) -> np.ndarray:
    """eta²_H = (H - k + 1) / (n - k): the share of rank variance explained by the groups.

    Tomczak & Tomczak (2014), "The need to report effect size estimates revisited",
    Trends in Sport Sciences 21(1), eq. for the Kruskal-Wallis H with k groups and n values.
    Negative when H < k - 1 (no effect at all); left as is rather than clipped, as in R's
    rstatix::kruskal_effsize. NaN where n <= k. OrderSage computed H / (n - 1), i.e. k = 1.
    """
    h = np.asarray(h, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (h - k + 1.0) / (n - k)
    return np.where(n > k, out, np.nan)


def percent_difference(mean_fixed: np.ndarray | float, mean_random: np.ndarray | float) -> np.ndarray:
    """Δ% = (F - R) / F × 100, F and R the means of the fixed and random arms.

    Duplyakin et al., USENIX ATC 2023, Section 5 (positive: the fixed arm's mean is larger).
    NaN where F is 0 or either mean is NaN.
    """
    f = np.asarray(mean_fixed, dtype=np.float64)
    r = np.asarray(mean_random, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = (f - r) / f * 100.0
    return np.where(f != 0, out, np.nan)


@dataclass(frozen=True, eq=False)
class GroupedMoments:
    """Per group: count, mean, standard deviation (with the ddof used) and CV = std / mean."""

    n: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    cv: np.ndarray
    ddof: int


def grouped_moments(values: np.ndarray, group: np.ndarray, n_groups: int, ddof: int = DEFAULT_CV_DDOF) -> GroupedMoments:
    """Count, mean, std and coefficient of variation of every group, via np.bincount.

    std = sqrt(sum (x - mean)**2 / (n - ddof)), two passes (mean first) so that large values
    with a small spread keep their precision; NaN where n <= ddof. CV = std / mean, as
    scipy.stats.variation (signed; NaN where the mean is 0 or n < 2: a single value has no
    spread to speak of).
    """
    v, g = check_grouped(values, group, n_groups)
    n = np.bincount(g, minlength=n_groups).astype(np.int64)
    nf = n.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean = np.bincount(g, weights=v, minlength=n_groups) / nf
        dev = v - mean[g] if len(v) else v
        ss = np.bincount(g, weights=dev * dev, minlength=n_groups)
        std = np.where(nf > ddof, np.sqrt(ss / (nf - ddof)), np.nan)
        cv = np.where((n >= 2) & (mean != 0), std / mean, np.nan)
    mean = np.where(n > 0, mean, np.nan)
    return GroupedMoments(n=n, mean=mean, std=std, cv=cv, ddof=int(ddof))


def grouped_mean(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Mean of each group; NaN for an empty group."""
    return grouped_moments(values, group, n_groups).mean


def grouped_std(values: np.ndarray, group: np.ndarray, n_groups: int, ddof: int = 1) -> np.ndarray:
    """Standard deviation of each group (ddof=1: the sample standard deviation)."""
    return grouped_moments(values, group, n_groups, ddof=ddof).std


def grouped_cv(values: np.ndarray, group: np.ndarray, n_groups: int, ddof: int = DEFAULT_CV_DDOF) -> np.ndarray:
    """Coefficient of variation std / mean of each group; ddof=0 by default to match OrderSage."""
    return grouped_moments(values, group, n_groups, ddof=ddof).cv
