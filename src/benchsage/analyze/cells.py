"""The treatment cells of a trial table, and each test's arms in each cell.

A cell is a row's combination of the levels varied between runs on purpose: the factors
("factor:NAME") and the measurement context ("context"). Levels 5x apart (a server written in
Python and one in C) pooled in one order test dilute it and give medians that describe neither
level, so the order analysis ranks within cells as within workers (analyze/strata.py) and gives
each cell's own medians here. Not cells: the observer level (the order analysis keeps the
lightest: treatments.order_rows), a sweep's level (part of an expanded test's name), and a
context's own settings ("context:env_bytes", ...: described by its "context").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchsage.analyze.sorted_values import ValueOrder
from benchsage.analyze.verdict import CellArms
from benchsage.stats._grouped import refine_order
from benchsage.stats.median_ci import grouped_median_ci
from benchsage.stats.stratified import pair_codes
from benchsage.store.table import FIXED_CODE, RANDOM_CODE, TrialTable
from benchsage.vocabulary import CONTEXT, FACTOR_PREFIX

Cell = tuple[tuple[str, str], ...]


@dataclass(frozen=True, eq=False)
class TreatmentCells:
    """code: each row's cell, 0..len(cells) - 1. cells: each cell as ((dimension, level), ...) in
    the table's dimension order, named as the user wrote them (a factor by its name, the context
    as "context"), ordered by the levels' codes; a dimension whose level a row does not know is
    left out of its cell (and such rows form a cell of their own)."""

    code: np.ndarray
    cells: tuple[Cell, ...]


def cell_dimensions(table: TrialTable) -> list[int]:
    """The indices (into table.dims) of the dimensions that make the cells."""
    return [k for k, d in enumerate(table.dims) if d == CONTEXT or d.startswith(FACTOR_PREFIX)]


def dimension_name(dim: str) -> str:
    """A cell dimension as users name it: "factor:server" is "server" (as a comparison's
    per_factor_cell names it), the context "context"."""
    return dim[len(FACTOR_PREFIX):] if dim.startswith(FACTOR_PREFIX) else dim


def treatment_cells(table: TrialTable) -> TreatmentCells | None:
    """The cells of the table's rows; None without factors or a context (or without rows)."""
    ks = cell_dimensions(table)
    if not ks or len(table) == 0:
        return None
    known = table.treatment[:, ks].astype(np.int64) + 1  # 0: not known
    radix = np.array([len(table.dim_levels[k]) + 1 for k in ks], dtype=np.int64)
    if math.prod(radix.tolist()) <= max(4 * len(table), 1 << 20):
        # One integer per combination, the first dimension most significant: the order of np.unique(axis=0).
        weight = np.cumprod(np.concatenate([radix[1:], [1]])[::-1])[::-1]
        key = known @ weight
        present = np.bincount(key, minlength=int(weight[0] * radix[0])) > 0
        keys = np.flatnonzero(present)
        code = (np.cumsum(present) - 1)[key]
        combos = (keys[:, None] // weight[None, :]) % radix[None, :]
    else:
        combos, code = np.unique(known, axis=0, return_inverse=True)
    names = [dimension_name(table.dims[k]) for k in ks]
    cells = tuple(
        tuple((name, table.dim_levels[k][level - 1]) for name, k, level in zip(names, ks, combo.tolist()) if level > 0)
        for combo in combos
    )
    return TreatmentCells(code.ravel().astype(np.int64), cells)


def cell_arms(table: TrialTable, cells: TreatmentCells, sv: ValueOrder, *, level: float, method: str) -> list[tuple[CellArms, ...]]:
    """Each comparison's cells (numbered as sv.group; the cells that hold its values, in cell
    order): per arm its size, and its median with the distribution-free interval at `level` by
    `method` (stats.median_ci), from the table's own values (finite, sorted as sv), all from
    one pass over the shared sort."""
    n_groups, n_cells = len(sv.combos), len(cells.cells)
    value = np.asarray(table.value, dtype=np.float64)
    arm_of_cell = cells.code * 2 + table.arm.astype(np.int64)  # 2c: fixed arm in cell c, 2c + 1: random
    pair, pair_group, n_pairs = pair_codes(sv.group, arm_of_cell, 2 * n_cells)
    ci = grouped_median_ci(value, pair, n_pairs, level, method, order=refine_order(sv.order, pair, n_pairs))
    pair_block = np.zeros(n_pairs, dtype=np.int64)
    pair_block[pair] = arm_of_cell
    out: list[list[CellArms]] = [[] for _ in range(n_groups)]
    found: dict[tuple[int, int], dict[int, int]] = {}  # (comparison, cell) -> {arm: pair}, in pair order
    for j, (g, b) in enumerate(zip(pair_group.tolist(), pair_block.tolist())):
        found.setdefault((g, b // 2), {})[b % 2] = j
    n, median, low, high = ci.n.tolist(), ci.median.tolist(), ci.low.tolist(), ci.high.tolist()

    def arm(j: int | None) -> tuple[int, float | None, tuple[float, float] | None]:
        if j is None:
            return 0, None, None
        interval = (low[j], high[j]) if math.isfinite(low[j]) and math.isfinite(high[j]) else None
        return int(n[j]), (median[j] if math.isfinite(median[j]) else None), interval

    for (g, c), arms in found.items():
        nf, mf, cf = arm(arms.get(FIXED_CODE))
        nr, mr, cr = arm(arms.get(RANDOM_CODE))
        out[g].append(CellArms(cells.cells[c], nf, nr, mf, mr, cf, cr))
    return [tuple(arms) for arms in out]
