"""The analysis of a tidy trial CSV done the way the paper's notebook and OrderSage's stats did it.

pandas.read_csv; a groupby loop over tests calling scipy.stats.kruskal(fixed, random) per test
and appending each result row to a DataFrame (pd.concat per row); a second groupby loop for the
median CIs (normal-approximation ranks, Le Boudec, as OrderSage's get_ci) and the CI cases;
then the Bonferroni decision. This is the baseline benchsage's analysis is timed against, so it
is kept as plain as the original: no vectorisation, no tricks.

    python benchmarks/notebook_baseline.py FILE.csv [--alpha 0.05] [-o decisions.csv]

Writes one row per test (and metric) with its p-value and significance decision.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pandas as pd
import scipy.stats as stats


def percent_difference(fixed: np.ndarray, random: np.ndarray) -> float:
    return (fixed.mean() - random.mean()) / fixed.mean() * 100


def effect_size(fixed: np.ndarray, random: np.ndarray, h: float) -> float:
    k = 2
    n = len(fixed) + len(random)
    return (h - k + 1) / (n - k)


def get_ci(s: np.ndarray, alpha: float = 0.95, p: float = 0.5) -> tuple[float, float, float]:
    """The p-quantile and its CI from normal-approximation ranks (Le Boudec 2010, p. 36), 0-based as in OrderSage."""
    n = len(s)
    q = np.quantile(s, p)
    eta = stats.norm.ppf((1 + alpha) / 2.0)
    lo_rank = max(int(np.floor(n * p - eta * np.sqrt(n * p * (1 - p)))), 0)
    hi_rank = min(int(np.ceil(n * p + eta * np.sqrt(n * p * (1 - p))) + 1), n - 1)
    s_sorted = sorted(s.tolist())
    return q, s_sorted[lo_rank], s_sorted[hi_rank]


def ci_case(f_m: float, f_lo: float, f_hi: float, r_m: float, r_lo: float, r_hi: float) -> int:
    """The paper's cases: 1 no overlap, 2 a median inside the other interval, 3 otherwise."""
    if r_lo > f_hi or f_lo > r_hi:
        return 1
    if r_lo <= f_m <= r_hi or f_lo <= r_m <= f_hi:
        return 2
    return 3


def kw_loop(df: pd.DataFrame, group: list[str]) -> pd.DataFrame:
    results = pd.DataFrame(columns=group + ["n_fixed", "n_random", "kw_h", "kw_p", "delta_pct", "eta2"])
    for key, grp in df.groupby(group):
        fixed = grp[grp["order"] == "fixed"]["value"].values.astype(np.float64)
        random = grp[grp["order"] == "random"]["value"].values.astype(np.float64)
        try:
            h, p = stats.kruskal(fixed, random)
        except ValueError:  # all values identical
            h, p = np.nan, np.nan
        row = dict(zip(group, key))
        row.update(n_fixed=len(fixed), n_random=len(random), kw_h=h, kw_p=p,
                   delta_pct=percent_difference(fixed, random), eta2=effect_size(fixed, random, h))
        results = pd.concat([results, pd.DataFrame([row])], ignore_index=True)
    return results


def ci_loop(df: pd.DataFrame, group: list[str]) -> pd.DataFrame:
    cis = pd.DataFrame(columns=group + ["median_fixed", "ci_fixed_low", "ci_fixed_high", "median_random", "ci_random_low", "ci_random_high", "ci_case"])
    for key, grp in df.groupby(group):
        fixed = grp[grp["order"] == "fixed"]["value"].values.astype(np.float64)
        random = grp[grp["order"] == "random"]["value"].values.astype(np.float64)
        f_m, f_lo, f_hi = get_ci(fixed)
        r_m, r_lo, r_hi = get_ci(random)
        row = dict(zip(group, key))
        row.update(median_fixed=f_m, ci_fixed_low=f_lo, ci_fixed_high=f_hi, median_random=r_m,
                   ci_random_low=r_lo, ci_random_high=r_hi, ci_case=ci_case(f_m, f_lo, f_hi, r_m, r_lo, r_hi))
        cis = pd.concat([cis, pd.DataFrame([row])], ignore_index=True)
    return cis


def analyze(path: str, alpha: float = 0.05) -> pd.DataFrame:
    df = pd.read_csv(path)
    if "status" in df.columns:
        df = df[df["status"] == "ok"]
    group = ["test", "metric"] if "metric" in df.columns else ["test"]
    results = kw_loop(df, group)
    results = results.merge(ci_loop(df, group), on=group)
    m = int(results["kw_p"].notna().sum())
    results["alpha_corrected"] = alpha / m
    results["significant"] = results["kw_p"].astype(np.float64) < alpha / m
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("-o", "--output", default=None, help="write the per-test results as CSV here (default: stdout)")
    args = parser.parse_args()
    # Appending to an empty frame warns in recent pandas; notebooks ignore that too.
    warnings.simplefilter("ignore", FutureWarning)
    t0 = time.perf_counter()
    results = analyze(args.file, args.alpha)
    elapsed = time.perf_counter() - t0
    results.to_csv(args.output or sys.stdout, index=False)
    print(f"baseline: {len(results)} tests, {int(results['significant'].sum())} significant, {elapsed:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
