"""Typed results of an analysis: one TestVerdict per (test, metric), diagnostics, the Analysis.

These are the values that cross from analyze/ to report/ and to users of the Python API.
`Analysis.to_json()` produces exactly the JSON of CONTRACT.md (plus extensions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TestVerdict:
    """Fixed arm vs random arm for one test and one metric (paper Tables 3-5, one row)."""

    __test__ = False  # not a pytest test class

    test: str
    metric: str
    primary: bool
    n_fixed: int
    n_random: int
    kw_h: float | None
    kw_p: float | None
    p_adjusted: float | None  # after the family-wise correction of its family
    significant: bool | None
    eta2: float | None
    delta_pct: float | None
    cv_fixed: float | None
    cv_random: float | None
    mean_fixed: float | None
    mean_random: float | None
    median_fixed: float | None
    ci_fixed: tuple[float, float] | None
    median_random: float | None
    ci_random: tuple[float, float] | None
    ci_case: int | None
    unit: str = ""
    better: str = ""
    notes: tuple[str, ...] = ()  # why a field is null


@dataclass(frozen=True)
class Interleaving:
    interleaved: bool | None
    detail: str
    n_fixed_runs: int = 0
    n_random_runs: int = 0


@dataclass(frozen=True)
class PositionEffect:
    test: str
    metric: str
    position: int
    n_at: int
    n_other: int
    median_at: float | None
    median_other: float | None
    effect_pct: float | None
    p: float | None
    p_adjusted: float | None
    significant: bool | None
    # Large experiments bin positions: the row covers position..position_last. None: one position.
    position_last: int | None = None


@dataclass(frozen=True)
class Carryover:
    test: str
    metric: str
    after: str
    n_after: int
    n_other: int
    median_after: float | None
    median_other: float | None
    effect_pct: float | None
    p: float | None
    p_adjusted: float | None
    significant: bool | None


@dataclass(frozen=True)
class Trend:
    test: str
    metric: str
    arm: str
    n: int
    spearman_rho: float | None
    p: float | None
    p_adjusted: float | None = None
    significant: bool | None = None


@dataclass(frozen=True)
class Diagnostics:
    interleaving: Interleaving | None
    position_effects: tuple[PositionEffect, ...] = ()
    carryover: tuple[Carryover, ...] = ()
    trends: tuple[Trend, ...] = ()
    workers: dict[str, Any] | None = None  # software hashes per worker when they differ


@dataclass(frozen=True)
class Analysis:
    """Everything `benchsage analyze` concludes about one data set."""

    tool_version: str
    alpha: float
    correction: str
    alpha_corrected: float | None
    ci_method: str
    ci_level: float
    ci_case_rule: str
    order_matters: bool
    tests: tuple[TestVerdict, ...]
    warnings: tuple[str, ...] = ()
    diagnostics: Diagnostics | None = None
    sources: tuple[str, ...] = ()
    excluded: int = 0
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def significant_tests(self) -> tuple[TestVerdict, ...]:
        return tuple(v for v in self.tests if v.primary and v.significant)

    def to_json(self) -> dict[str, Any]:
        """The analysis JSON of CONTRACT.md: plain numbers, null for what cannot be computed."""
        out: dict[str, Any] = {
            "tool": {"name": "benchsage", "version": self.tool_version},
            "alpha": self.alpha,
            "correction": self.correction,
            "alpha_corrected": self.alpha_corrected,
            "ci_method": self.ci_method,
            "ci_level": self.ci_level,
            "ci_case_rule": self.ci_case_rule,
            "order_matters": self.order_matters,
            "sources": list(self.sources),
            "excluded_trials": self.excluded,
            "tests": [_test_json(v) for v in self.tests],
            "warnings": list(self.warnings),
        }
        if self.diagnostics is not None:
            d = self.diagnostics
            out["diagnostics"] = {
                "interleaving": _record(d.interleaving) if d.interleaving is not None else None,
                "position_effects": [_record(x) for x in d.position_effects],
                "carryover": [_record(x) for x in d.carryover],
                "trends": [_record(x) for x in d.trends],
                "workers": d.workers,
            }
        return _clean(out)


def _record(obj: Any) -> dict[str, Any]:
    # vars() of a flat frozen dataclass: asdict() deep-copies and is ~20x slower, which
    # matters for the tens of thousands of diagnostic rows of a paper-scale dataset.
    return dict(vars(obj))


def _test_json(v: TestVerdict) -> dict[str, Any]:
    d = _record(v)
    d["ci_fixed"] = list(v.ci_fixed) if v.ci_fixed is not None else None
    d["ci_random"] = list(v.ci_random) if v.ci_random is not None else None
    d["notes"] = list(v.notes)
    return d


def _clean(obj: Any) -> Any:
    """JSON has no NaN or Infinity: they become null. numpy scalars become Python numbers."""
    kind = type(obj)
    if kind is float:
        return obj if math.isfinite(obj) else None
    if kind is dict:
        return {k: _clean(v) for k, v in obj.items()}
    if kind is list or kind is tuple:
        return [_clean(v) for v in obj]
    if kind is str or kind is int or kind is bool or obj is None:
        return obj
    if hasattr(obj, "item"):
        return _clean(obj.item())
    return obj
