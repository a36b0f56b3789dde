"""What every view of the report reads: the analysis, the table it was computed from, and what
several views share, worked out once."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Mapping

from benchsage.analyze.verdict import Analysis, TestVerdict
from benchsage.report.json import analysis_json
from benchsage.store.table import TrialTable


@dataclasses.dataclass(frozen=True)
class Material:
    """analysis and table: the report's subject; primary: the tests of the correction family;
    detail: the tests whose detail is shown (detail.choose_detail), and the note saying which
    when not all are."""

    analysis: Analysis
    table: TrialTable
    primary: tuple[TestVerdict, ...]
    detail: tuple[TestVerdict, ...]
    detail_note: str

    @functools.cached_property
    def detail_ids(self) -> Mapping[tuple[str, str], str]:
        """The anchor of each detailed (test, metric), which the tests tables link to."""
        return {(v.test, v.metric): f"d-{i}" for i, v in enumerate(self.detail)}

    @functools.cached_property
    def doc(self) -> Mapping[str, Any]:
        """The analysis JSON, which the treatment sections read (the shapes users script
        against), without the diagnostics, whose rows are the costly part of it."""
        return analysis_json(dataclasses.replace(self.analysis, diagnostics=None))
