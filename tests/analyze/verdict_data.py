"""Trial tables the verdict is judged on, for the tests of its counts (analyze/summary.py) and
of its words (report/words/verdict.py): the paper's artifact, and a hand-made table."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from benchsage.store.table import TrialTable

ARTIFACT = Path(os.environ.get("BENCHSAGE_TEST_ARTIFACT") or "/nonexistent")  # the OrderSage artifact data; .ci/run sets it


def artifact_table(folder: str, name: str, column: str) -> TrialTable:
    """One of the artifact's result files, its test names from `column`."""
    with open(ARTIFACT / folder / name, newline="") as f:
        rows = list(csv.DictReader(f))
    return TrialTable.from_columns(
        test=[r[column] for r in rows], arm=[r["order_type"] for r in rows], value=[float(r["result"]) for r in rows],
        metric=["result"] * len(rows),
    )


def two_metrics_and_an_untested_test() -> TrialTable:
    """Test a with metrics x (an order effect) and y (none), and test b with one value per arm."""
    rng = np.random.default_rng(1)
    n = 40
    values = np.r_[rng.normal(10, 1, n), rng.normal(14, 1, n), rng.normal(10, 1, n), rng.normal(10, 1, n), [1.0, 2.0]]
    return TrialTable.from_columns(
        test=["a"] * (4 * n) + ["b"] * 2,
        metric=["x"] * (2 * n) + ["y"] * (2 * n) + ["x"] * 2,
        arm=(["fixed"] * n + ["random"] * n) * 2 + ["fixed", "random"],
        value=values,
    )
