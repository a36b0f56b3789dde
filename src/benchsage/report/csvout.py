"""The per-test verdicts as CSV, for spreadsheets, pandas and R."""

from __future__ import annotations

import csv

from benchsage.analyze.verdict import Analysis

FIELDS = (
    "test", "metric", "primary", "unit", "better", "n_fixed", "n_random", "kw_h", "kw_p", "p_adjusted", "significant",
    "eta2", "delta_pct", "cv_fixed", "cv_random", "mean_fixed", "mean_random", "median_fixed", "ci_fixed_low",
    "ci_fixed_high", "median_random", "ci_random_low", "ci_random_high", "ci_case",
)


def write_analysis_csv(analysis: Analysis, path: str) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        for v in analysis.tests:
            row = {f: getattr(v, f, None) for f in FIELDS}
            row["ci_fixed_low"], row["ci_fixed_high"] = v.ci_fixed or (None, None)
            row["ci_random_low"], row["ci_random_high"] = v.ci_random or (None, None)
            writer.writerow({k: ("" if val is None else val) for k, val in row.items()})
