"""eta²_H, Δ%, and grouped mean / std / CV against numpy and the OrderSage artifact."""

from __future__ import annotations

import csv
import os
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from benchsage.stats import eta_squared_h, grouped_cv, grouped_mean, grouped_moments, grouped_std, percent_difference

ARTIFACT = Path(os.environ.get("BENCHSAGE_TEST_ARTIFACT") or "/nonexistent")  # the OrderSage artifact data; .ci/run sets it


def test_eta_squared_h_formula():
    assert eta_squared_h(15.440792079207938, 100)[()] == pytest.approx((15.440792079207938 - 1) / 98)
    assert eta_squared_h(5.0, 30, k=3)[()] == pytest.approx(3.0 / 27)
    # OrderSage's column is the k = 1 variant: H / (n - 1).
    assert eta_squared_h(15.440792079207938, 100, k=1)[()] == pytest.approx(0.15596759675967614, rel=1e-12)
    assert np.isnan(eta_squared_h(1.0, 2))
    np.testing.assert_allclose(eta_squared_h(np.array([1.0, 3.0]), np.array([12, 22])), [0.0, 0.1])


def test_percent_difference():
    np.testing.assert_allclose(percent_difference(np.array([100.0, 50.0]), np.array([90.0, 60.0])), [10.0, -20.0])
    assert np.isnan(percent_difference(0.0, 1.0))
    assert np.isnan(percent_difference(np.nan, 1.0))


def test_grouped_moments_match_numpy():
    rng = np.random.default_rng(4)
    values = rng.normal(1e6, 3.0, 3000)  # a large mean and a small spread: precision matters
    group = rng.integers(0, 9, 3000)
    m = grouped_moments(values, group, 10, ddof=1)  # group 9 is empty
    for i in range(9):
        x = values[group == i]
        assert m.n[i] == len(x)
        assert m.mean[i] == pytest.approx(x.mean(), rel=1e-13)
        assert m.std[i] == pytest.approx(x.std(ddof=1), rel=1e-9)
        assert m.cv[i] == pytest.approx(stats.variation(x, ddof=1), rel=1e-9)
    assert m.n[9] == 0 and np.isnan(m.mean[9]) and np.isnan(m.std[9]) and np.isnan(m.cv[9])
    np.testing.assert_allclose(grouped_mean(values, group, 10)[:9], m.mean[:9])
    np.testing.assert_allclose(grouped_std(values, group, 10)[:9], m.std[:9])
    np.testing.assert_allclose(grouped_cv(values, group, 10, ddof=1)[:9], m.cv[:9])


def test_default_cv_is_scipy_variation():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    assert grouped_cv(x, np.zeros(4, int), 1)[0] == pytest.approx(stats.variation(x))


def test_cv_undefined_for_one_value_or_zero_mean():
    cv = grouped_cv(np.array([5.0, -1.0, 1.0]), np.array([0, 1, 1]), 2)
    assert np.isnan(cv).all()


def _artifact_samples(folder: str, name: str, column: str):
    samples = defaultdict(list)
    with open(ARTIFACT / folder / name, newline="") as f:
        for row in csv.DictReader(f):
            samples[row[column], row["order_type"]].append(float(row["result"]))
    return samples


@pytest.mark.artifact
def test_cv_matches_the_artifact():
    """node_stats.csv's per-arm CV (3 decimals) is the population std over the mean (ddof=0)."""
    samples = _artifact_samples("npbench-table4", "all_test_results.csv", "test_command")
    with open(ARTIFACT / "npbench-table4" / "node_stats.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        for arm in ("fixed", "random"):
            x = np.array(samples[row["test_command"], arm])
            cv = grouped_cv(x, np.zeros(len(x), int), 1)[0]
            assert round(cv, 3) == pytest.approx(float(row[f"coeff_of_variation_{arm}"]))
    # With ddof=1 the spmv fixed arm would print 0.049, not the artifact's 0.048.
    x = np.array(samples["./npBench-spmv.sh", "fixed"])
    assert round(grouped_cv(x, np.zeros(len(x), int), 1, ddof=1)[0], 3) == 0.049
