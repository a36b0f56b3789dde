"""Experiments with treatment cells as tables, for the tests of the stratified order analysis: a
factor (or a measurement context) whose levels are far apart, each run in one cell, the cells
alternating over the runs of each arm as the plan draws them."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from benchsage.store.table import TrialTable

LEVELS = {"python": 1.0, "nginx": 5.0}  # a server's time per request, 5x apart


def factor_table(
    levels: Mapping[str, float] = LEVELS,  # noqa: B006 - read only
    *,
    runs_per_arm: int = 12,
    effect: float = 0.10,
    cv: float = 0.05,
    seed: int = 0,
    tests: int = 2,
    workers: Sequence[str] = ("local",),
    dimension: str = "factor:server",
    late: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> TrialTable:
    """Every worker runs every test in 2 * runs_per_arm runs, fixed and random alternating; run r
    is in cell r // 2 % len(levels) (late: the first half of each worker's runs in the first
    cell, the rest in the others, as a factor changed once half-way). Test t0's values are
    `effect` higher in the fixed arm; lognormal noise of about this CV; `dimension` names the
    treatment column; `extra`: more treatment columns, each a function of the row's cell level."""
    rng = np.random.default_rng(seed)
    names = list(levels)
    rows: dict[str, list[Any]] = {k: [] for k in ("test", "arm", "value", "worker", "run", "position", "time", "cell")}
    for w_index, worker in enumerate(workers):
        for r in range(2 * runs_per_arm):
            arm = "fixed" if r % 2 == 0 else "random"
            cell = names[r * len(names) // (2 * runs_per_arm)] if late else names[r // 2 % len(names)]
            order = list(range(tests)) if arm == "fixed" else rng.permutation(tests).tolist()
            for position, t in enumerate(order):
                value = levels[cell] * (1.0 + t) * float(rng.lognormal(0.0, cv))
                if t == 0 and arm == "fixed":
                    value *= 1.0 + effect
                rows["test"].append(f"t{t}")
                rows["arm"].append(arm)
                rows["value"].append(value)
                rows["worker"].append(worker)
                rows["run"].append(w_index * 1000 + r)
                rows["position"].append(position)
                rows["time"].append(1.7e9 + 10.0 * r + position)
                rows["cell"].append(cell)
    cells = rows.pop("cell")
    treatments = {dimension: cells, **{dim: [of(c) for c in cells] for dim, of in (extra or {}).items()}}
    return TrialTable.from_columns(**rows, treatments=treatments)


def pooled(table: TrialTable) -> TrialTable:
    """The same rows without their treatment columns: what the analysis saw before cells."""
    return TrialTable.from_columns(
        test=np.array(table.test_names)[table.test], arm=table.arm, value=table.value,
        worker=np.array(table.worker_names)[table.worker], run=table.run, position=table.position, time=table.time,
    )
