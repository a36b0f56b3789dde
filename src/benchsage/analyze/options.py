"""How to analyse: the options of `benchsage analyze` / `report` and of benchsage.analyze().

Its own module so that the command line can parse its options before the analysis (and its
imports) is needed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    """How to analyse; None means: the experiment's own setting, else the default."""

    alpha: float | None = None
    correction: str | None = None
    ci_method: str = "exact-binomial"
    ci_level: float = 0.95
    ci_case_rule: str = "paper"
    diagnostics: bool = True
