"""A sequential experiment's looks, from its journal's record, for the analysis.

The looks were taken while the experiment ran (execute/sequential.py) and are never redone
here: the analysis reports what decided the experiment's length, in runs per arm on each worker.
"""

from __future__ import annotations

from typing import Any, Mapping

from benchsage.analyze.verdict import Sequential
from benchsage.errors import DataError
from benchsage.design.sequential import SequentialPlan
from benchsage.stats.sequential import Look


def sequential_verdict(provenance: Mapping[str, Any]) -> Sequential | None:
    """The looks recorded in a journal's provenance (store/importers/benchsage.py); None for an
    experiment that stopped at a fixed number of runs, and for any other source."""
    recorded = provenance.get("sequential")
    if not recorded:
        return None
    try:
        plan = SequentialPlan.from_meta(recorded["plan"])
        looks = [Look.from_record(record) for record in recorded["looks"]]
        decisions = {(str(key[0]), str(key[1])): value for key, value in plan.decisions(looks).items()}
        return Sequential(summary=plan.summary(looks), decisions=decisions)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        # The journal (store/journal_reader.py) checked the record's fields, not how they fit together.
        raise DataError(f"{provenance.get('directory')}: the journal's record of its looks (table 'looks', meta 'sequential') "
                        f"does not hold together: {type(exc).__name__}: {exc}") from None
