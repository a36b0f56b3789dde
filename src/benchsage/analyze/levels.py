"""A test across the levels of one dimension: the row that the fleet diagnostic (across workers)
and the context effects (across measurement contexts) share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class AcrossLevels:
    """One test and metric across the levels of a dimension (a fleet's workers, the measurement
    contexts): the k-sample Kruskal-Wallis test across them (`kw_h`, `df` = levels - 1, `kw_p`),
    corrected over the tests (`p_adjusted`, `significant`); `spread_pct` = (largest - smallest
    level median) / smallest x 100; each level's median and number of values.

    A row type names its key in a second base class: a dataclass lists the fields of its bases
    from the last to the first, so the key's fields come first."""

    kw_h: float | None
    df: int
    kw_p: float | None
    p_adjusted: float | None
    significant: bool | None
    spread_pct: float | None
    medians: Mapping[str, float | None]
    n: Mapping[str, int]
