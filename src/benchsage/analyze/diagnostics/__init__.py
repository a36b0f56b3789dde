"""Where does an order effect come from, and was the design sound? Diagnostics of a trial table.

In the random arm every test meets different positions and different predecessors, so the data
itself can say whether running first after the reset, or right after a particular test, moves
a test's values (position.py, carryover.py), and whether the orders balanced those effects
(balance.py). Across runs, the start times say whether the two arms were interleaved in time
(interleaving.py) and whether values drift (trends.py), so that slow drift is not mistaken for
an order effect. Each file states its diagnostic's design choices; all are vectorised over
tests, and each diagnostic's comparisons are corrected as one family. The design's verdicts
come with their details as data (notes.py), which report/words/diagnostics.py puts into words.

Only primary metrics are examined (for imported data: every metric), as they decide the verdict.
A fleet's values, and those of treatment cells (factor levels, contexts), are examined with each
block's level removed (see analyze/pipeline.py and analyze/strata.py): medians are then in the
units of a typical worker and cell.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from benchsage.analyze.diagnostics.balance import BalanceTally, carryover_balance
from benchsage.analyze.diagnostics.carryover import RESET, carryover_part, carryover_rows
from benchsage.analyze.diagnostics.interleaving import interleaving_of_runs, interleaving_of_table, run_starts
from benchsage.analyze.diagnostics.one_vs_rest import RankCache
from benchsage.analyze.diagnostics.position import ALL_TESTS, position_parts, position_rows
from benchsage.analyze.diagnostics.trends import trend_part, trend_rows
from benchsage.analyze.sorted_values import ValueOrder, comparisons
from benchsage.analyze.verdict import Carryover, CarryoverBalance, Diagnostics, Interleaving, PositionEffect, Trend
from benchsage.store.table import TrialTable

__all__ = ["ALL_TESTS", "RESET", "BalanceTally", "Parts", "carryover_balance", "diagnose", "interleaving_of_runs", "run_starts"]


def diagnose(
    table: TrialTable,
    *,
    alpha: float = 0.05,
    correction: str = "bonferroni",
    min_values: int = 5,
    sorted_values: ValueOrder | None = None,
) -> Diagnostics | None:
    """Position effects, carry-over, interleaving, trends and the carry-over balance of a table.

    None when the table knows neither runs, nor positions, nor times: nothing to diagnose.
    sorted_values: sorted_values.sort_values(table), shared with the order analysis; used when every
    row of the table is examined (all primary and finite), which spares two sorts.
    The work is in two halves that can run side by side: effects() and design().
    """
    parts = Parts(table, alpha=alpha, correction=correction, min_values=min_values, sorted_values=sorted_values)
    if not parts.anything:
        return None
    return parts.combine(parts.effects(), parts.design())


class Parts:
    """diagnose() in two independent halves, for callers that run them in two threads:
    effects() (position effects and carry-over) and design() (interleaving, trends and the
    carry-over balance)."""

    def __init__(
        self, table: TrialTable, *, alpha: float = 0.05, correction: str = "bonferroni", min_values: int = 5, sorted_values: ValueOrder | None = None
    ) -> None:
        self.table, self.alpha, self.correction, self.min_values = table, alpha, correction, min_values
        self.anything = bool((table.run >= 0).any() or (table.position >= 0).any() or np.isfinite(table.time).any())
        # The design (run starts, interleaving) is judged on every trial, the effects on primary values.
        keep = table.primary & np.isfinite(table.value)
        self.examined = table if keep.all() else table.select(keep)
        self.comp, self.comp_test, self.comp_metric = comparisons(self.examined)
        # The comparison codes here and in sorted_values.sort_values are the same numbering of (test, metric).
        fits = sorted_values is not None and sorted_values.fits(self.examined)
        self.by_value = sorted_values.order if fits else None  # type: ignore[union-attr]

    def ranked(self) -> RankCache:
        """A ranking of the examined values for position effects and carry-over to share."""
        return RankCache(self.examined.value, self.comp, len(self.comp_test), self.by_value)

    def effects(self) -> tuple[Sequence[PositionEffect], Sequence[Carryover]]:
        t, ranked = self.examined, self.ranked()
        positions = position_parts(t, self.comp, self.comp_test, self.comp_metric, self.min_values, ranked)
        carry = carryover_part(t, self.comp, self.comp_test, self.comp_metric, self.min_values, ranked)
        names, decide = (t.test_names, t.metric_names), (self.alpha, self.correction)
        return (() if positions is None else position_rows(*positions, *names, *decide),
                () if carry is None else carryover_rows(carry, *names, *decide))

    def design(self) -> tuple[Interleaving | None, Sequence[Trend], CarryoverBalance | None]:
        t = self.examined
        starts = run_starts(self.table)
        trend = trend_part(t, starts, self.comp, self.comp_test, self.comp_metric, self.min_values, self.by_value)
        trends = () if trend is None else trend_rows(trend, t.test_names, t.metric_names, self.alpha, self.correction)
        return interleaving_of_table(self.table, starts, self.alpha), trends, carryover_balance(t, self.comp, self.comp_test)

    @staticmethod
    def combine(
        effects: tuple[Sequence[PositionEffect], Sequence[Carryover]], design: tuple[Interleaving | None, Sequence[Trend], CarryoverBalance | None]
    ) -> Diagnostics:
        return Diagnostics(interleaving=design[0], position_effects=effects[0], carryover=effects[1], trends=design[1], carryover_balance=design[2])
