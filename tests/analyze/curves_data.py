"""Swept experiments for the curve tests: wrk over conns (and size), with a governor factor,
as a tidy CSV file (the importer's route) or a TrialTable built directly."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path
from typing import Sequence

import numpy as np

from benchsage.store.table import TrialTable

LEVELS = ("2", "8", "32")
GOVERNORS = ("performance", "schedutil")


def swept_columns(seed: int = 0, *, levels: Sequence[str] = LEVELS, governors: Sequence[str] = GOVERNORS, runs: int = 10,
                  slow_at: str | None = "32", slowdown: float = 1.4, sizes: Sequence[str] = (), noise: float = 0.03) -> dict[str, list]:
    """Rows of a tidy file: per governor and arm, `runs` runs that each run every expanded test
    (wrk[conns=L] or wrk[conns=L,size=S]) once, metrics p99 (s) and rps. Latency grows with
    conns; with schedutil it is `slowdown` times higher at conns=`slow_at` (rps lower by as much)."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("test", "order", "value", "metric", "run", "position", "sweep:conns", "factor:governor")}
    if sizes:
        cols["sweep:size"] = []
    cells = list(itertools.product(levels, sizes or (None,)))
    run = 0
    for governor, arm, _ in itertools.product(governors, ("fixed", "random"), range(runs)):
        order = list(range(len(cells))) if arm == "fixed" else list(rng.permutation(len(cells)))
        for position, c in enumerate(order):
            conns, size = cells[c]
            test = f"wrk[conns={conns}]" if size is None else f"wrk[conns={conns},size={size}]"
            slow = slowdown if governor == "schedutil" and conns == slow_at else 1.0
            p99 = 0.001 * float(conns) ** 0.5 * slow * (2.0 if size == "64k" else 1.0) * np.exp(noise * rng.standard_normal())
            for metric, value in (("p99", p99), ("rps", 1.0 / p99)):
                row = {"test": test, "order": arm, "value": value, "metric": metric, "run": run, "position": position,
                       "sweep:conns": conns, "factor:governor": governor}
                if size is not None:
                    row["sweep:size"] = size
                for k in cols:
                    cols[k].append(row[k])
        run += 1
    return cols


def write_tidy(path: Path, cols: dict[str, list]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(list(cols))
        w.writerows(zip(*cols.values()))
    return path


def swept_table(cols: dict[str, list], **meta) -> TrialTable:
    """The same rows as a TrialTable built in memory (units as a wrk parser would declare them)."""
    from benchsage.store.table import MetricInfo

    treatments = {k: cols[k] for k in cols if ":" in k}
    infos = {"p99": MetricInfo("p99", "s", "lower"), "rps": MetricInfo("rps", "1/s", "higher")}
    return TrialTable.from_columns(test=cols["test"], arm=cols["order"], value=cols["value"], metric=cols["metric"],
                                   run=cols["run"], position=cols["position"], treatments=treatments,
                                   metrics_info=infos, **meta)
