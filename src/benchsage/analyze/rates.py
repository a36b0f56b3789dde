"""Did the load generator deliver the load it was asked for? A test whose output parser knows the
rate its command asked (wrk2 -R, pgbench -R, memtier --rate-limiting) records, per trial, the
delivered fraction (achieved / asked, vocabulary.RATE_DELIVERED); a trial below
RATE_DELIVERED_FLOOR measured a lighter load than the experiment claims, and the analysis says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchsage.store.table import TrialTable
from benchsage.vocabulary import RATE_DELIVERED, RATE_DELIVERED_FLOOR


@dataclass(frozen=True)
class RateShortfall:
    """In `short` of the `trials` trials of `test` the load generator delivered less than `floor`
    of the rate asked; `lowest`: the smallest fraction delivered."""

    test: str
    short: int
    trials: int
    lowest: float
    floor: float = RATE_DELIVERED_FLOOR


def rate_shortfalls(table: TrialTable) -> list[RateShortfall]:
    """One note per test with trials that fell short of their asked rate, in the table's test order."""
    if RATE_DELIVERED not in table.metric_names:
        return []
    rows = (table.metric == table.metric_names.index(RATE_DELIVERED)) & np.isfinite(table.value)
    tests, values = table.test[rows], table.value[rows]
    out = []
    for code, name in enumerate(table.test_names):
        delivered = values[tests == code]
        short = int(np.count_nonzero(delivered < RATE_DELIVERED_FLOOR))
        if short:
            out.append(RateShortfall(name, short, len(delivered), float(delivered.min())))
    return out
