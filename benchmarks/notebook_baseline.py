"""The analysis of a tidy trial CSV done the way the paper's notebook and OrderSage's stats did it.

Two versions, both kept as plain as the originals (no vectorisation, no tricks):

--cells notebook (the default): every analysis cell of the paper artifact's notebook
(Analysis_of_long_term_CloudLab_dataset.ipynb in ordersage/paper-artifact), run on one tidy file
with the test (and metric) as the configuration: pandas.read_csv; the Shapiro-Wilk normality
test of every configuration in each arm (its SW_test, one row appended with .loc per
configuration); the order test (its calc_main: percent difference, the effect size, which calls
scipy.stats.kruskal, and kruskal again for the p-value, one .loc row per configuration); the
sign and size summary of the differences; the medians' normal-approximation CIs of each
configuration and arm (its ci and CI_compare_fixed_and_random, .loc rows) and their CI cases
(CI_count_cases); the Bonferroni decision. Left out, which favours the baseline: the notebook's
download, its row-by-row preprocessing of its own columns (multithreading flags, which a tidy
file does not have) and its plots.

--cells kruskal-ci: only the Kruskal-Wallis loop (one kruskal call per test, rows appended with
pd.concat) and the CI loop with its CI cases, then Bonferroni.

    python benchmarks/notebook_baseline.py FILE.csv [--cells notebook|kruskal-ci] [--alpha 0.05] [-o decisions.csv]

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
    """--cells kruskal-ci."""
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


def shapiro_wilk(df: pd.DataFrame, key: list[str]) -> tuple[pd.DataFrame, tuple[int, int, float]]:
    """The notebook's SW_test: a Shapiro-Wilk p-value per configuration, and how many are not normal."""
    table = pd.DataFrame(columns=["S-W Test", "length", *key])
    for k, grp in df.groupby(key):
        table.loc[len(table)] = [stats.shapiro(grp["value"])[1], len(grp), *k]
    not_normal = int((table["S-W Test"] < 0.05).sum())
    return table, (not_normal, len(table) - not_normal, not_normal / len(table))


def eta_squared_kw(experiment: np.ndarray, control: np.ndarray) -> float:
    """The notebook's effect size: it runs the Kruskal-Wallis test for H (with k = 1, as it does)."""
    h = stats.kruskal(experiment, control)[0]
    k = 1
    return (h - k + 1) / (len(experiment) + len(control) - k)


def order_effects(df: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """The notebook's calc_main: per configuration, percent difference, effect size and KW p."""
    table = pd.DataFrame(columns=[*key, "P_Diff", "effect_size_KW", "Kruskal_p"])
    for k, grp in df.groupby(key):
        rand = grp[grp["random"] == 1]["value"].values.astype(np.float64)
        fixed = grp[grp["random"] == 0]["value"].values.astype(np.float64)
        try:
            row = [(rand.mean() - fixed.mean()) / fixed.mean() * 100, eta_squared_kw(rand, fixed), stats.kruskal(rand, fixed)[1]]
        except ValueError:  # all values identical: the notebook would stop here; carry on as the other baseline does
            row = [(rand.mean() - fixed.mean()) / fixed.mean() * 100, np.nan, np.nan]
        table.loc[len(table)] = [*k, *row]
    return table


def median_cis(df: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """The notebook's CI_compare_fixed_and_random: the median and its CI per configuration and arm."""
    table = pd.DataFrame(columns=[*key, "random", "pth_quantile", "low", "high"])
    for k, grp in df.groupby([*key, "random"]):
        table.loc[len(table)] = [*k, *get_ci(grp["value"].values)]
    return table


def count_cases(cis: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """The notebook's CI_count_cases: each configuration's CI case (and the gap between
    intervals that do not overlap), from the two rows of median_cis, read one value at a time."""
    table = pd.DataFrame(columns=[*key, "Case", "Inner_diff"])
    for k, grp in cis.groupby(key):
        rand, fixed = grp[grp["random"] == 1], grp[grp["random"] == 0]
        r_m, r_lo, r_hi = rand["pth_quantile"].values[0], rand["low"].values[0], rand["high"].values[0]
        f_m, f_lo, f_hi = fixed["pth_quantile"].values[0], fixed["low"].values[0], fixed["high"].values[0]
        gap = r_lo - f_hi if r_hi > f_hi else f_lo - r_hi
        table.loc[len(table)] = [*k, f"Case {ci_case(f_m, f_lo, f_hi, r_m, r_lo, r_hi)}", gap if gap >= 0 else None]
    return table


def analyze_notebook(path: str, alpha: float = 0.05) -> pd.DataFrame:
    """--cells notebook: the notebook's analysis cells in its order, on one tidy file."""
    df = pd.read_csv(path)
    if "status" in df.columns:
        df = df[df["status"] == "ok"]
    df["random"] = (df["order"] == "random").astype(int)
    key = ["test", "metric"] if "metric" in df.columns else ["test"]
    fixed, rand = df[df["random"] == 0], df[df["random"] == 1]
    normality = [shapiro_wilk(fixed, key)[1], shapiro_wilk(rand, key)[1]]
    effects = order_effects(df, key)
    effects["abs_P_Diff"] = effects["P_Diff"].apply(abs)
    effects["Pos_or_Neg"] = effects.apply(lambda row: "positive" if row["P_Diff"] > 0 else "negative", axis=1)
    small_p = effects[effects["Kruskal_p"] < 0.05]
    signs = {side: (len(part), part["abs_P_Diff"].median(), part["abs_P_Diff"].quantile(0.9))
             for side, part in small_p.groupby("Pos_or_Neg")}
    cases = count_cases(median_cis(df, key), key)
    alpha_bc = alpha / len(effects)
    out = effects.merge(cases, on=key)
    out["kw_p"] = out["Kruskal_p"].astype(np.float64)
    out["alpha_corrected"] = alpha_bc
    out["significant"] = out["kw_p"] < alpha_bc
    print(f"notebook: not normal (fixed, random): {normality[0][0]}, {normality[1][0]}; among p < 0.05: {signs}; "
          f"cases: {cases['Case'].value_counts().to_dict()}", file=sys.stderr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--cells", choices=("notebook", "kruskal-ci"), default="notebook",
                        help="the paper notebook's analysis cells (default), or only its Kruskal-Wallis and CI loops")
    parser.add_argument("-o", "--output", default=None, help="write the per-test results as CSV here (default: stdout)")
    args = parser.parse_args()
    # Appending to an empty frame warns in recent pandas; notebooks ignore that too.
    warnings.simplefilter("ignore", FutureWarning)
    t0 = time.perf_counter()
    results = (analyze_notebook if args.cells == "notebook" else analyze)(args.file, args.alpha)
    elapsed = time.perf_counter() - t0
    results.to_csv(args.output or sys.stdout, index=False)
    print(f"baseline: {len(results)} tests, {int(results['significant'].sum())} significant, {elapsed:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
