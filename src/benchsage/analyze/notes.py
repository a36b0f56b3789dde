"""The notes of an analysis: why a field of a test row is null, and the warnings about the data,
its environment and its workers.

Each note is a small frozen value, its kind and the data it is about; report/words/notes.py puts
it into words. Notes about one subject live next to it when that is clearer (measurement.py's
RssAtFloor, identity.py's IdentityDiffers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable


# Why a field of a test row is null (TestVerdict.notes).


@dataclass(frozen=True)
class EmptyArm:
    """An arm ("fixed" or "random") holds no values: nothing to compare."""

    arm: str


@dataclass(frozen=True)
class TooFewToTest:
    """An arm holds fewer than `least` values, the fewest Kruskal-Wallis needs per arm."""

    n_fixed: int
    n_random: int
    least: int


@dataclass(frozen=True)
class AllEqual:
    """All `n` values of both arms equal `value`: Kruskal-Wallis is undefined."""

    n: int
    value: float


@dataclass(frozen=True)
class NoStrata:
    """No block has values in both arms (or each block's values are all equal): the
    stratified test, which compares the arms within blocks, has nothing to compare. The blocks
    are workers, treatment cells, or each worker's treatment cells."""

    workers: bool = True
    cells: bool = False


@dataclass(frozen=True)
class TooFewForCI:
    """An arm's `n` values are fewer than `least`, the fewest a `level` CI of the median by
    `method` needs."""

    arm: str
    n: int
    level: float
    method: str
    least: int


@dataclass(frozen=True)
class ZeroFixedMean:
    """The fixed arm's mean is 0: Δ% is undefined."""


# Warnings of the analysis (Analysis.warnings, beside the importers' own, which are text).


@dataclass(frozen=True)
class NonFinite:
    """`count` values were not finite numbers (NaN or infinity) and were left out."""

    count: int


@dataclass(frozen=True)
class NoValues:
    """The data holds no values: there are no trials to analyze."""


@dataclass(frozen=True)
class OnTest:
    """The notes of one test row, as a warning naming the test and metric."""

    __test__ = False  # not a pytest test class

    test: str
    metric: str
    notes: tuple[Any, ...]


@dataclass(frozen=True)
class WorkersDiffer:
    """The fleet diagnostic found workers whose results differ: in `differing` of `tests` tests;
    `largest`: the largest spread (percent, test, metric), None when no spread is known;
    `outliers`: each worker found odd and in how many tests, most often first."""

    differing: int
    tests: int
    largest: tuple[float, str, str] | None
    outliers: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class SnapshotMissing:
    """Workers of the data without any environment snapshot: whether they ran the same software
    cannot be checked."""

    workers: tuple[str, ...]


@dataclass(frozen=True)
class SettingDiffers:
    """A setting of the snapshots (a name of identity.STABLE_FIELDS) differs between runs:
    each value with its runs, most runs first; `by_worker`, when each worker had one value
    throughout, that value of each worker (sorted by worker), else None."""

    setting: str
    values: tuple[tuple[Any, int], ...]
    by_worker: tuple[tuple[str, Any], ...] | None = None


@dataclass(frozen=True)
class SettingChanged:
    """A setting changed between runs of one worker: each value with its runs, most first."""

    setting: str
    worker: str
    values: tuple[tuple[Any, int], ...]


@dataclass(frozen=True)
class NoiseWarned:
    """A time-varying noise source (its name in a snapshot's "noise") warned before `warned` of
    the `runs` runs that read it; `example`: the value of the first warning."""

    source: str
    warned: int
    runs: int
    example: Any


@dataclass(frozen=True)
class FileChanged:
    """A file the tests execute changed between runs of `worker` (within `group`, a group of runs
    whose files are compared, "" for all): each digest (None: missing) with its runs."""

    path: str
    group: str
    worker: str
    versions: tuple[tuple[str | None, int], ...]


@dataclass(frozen=True)
class FileDiffers:
    """A file the tests execute differs between workers (within `group`, "" for all runs): each
    worker (sorted) with its digests (None: missing), most runs first."""

    path: str
    group: str
    digests: tuple[tuple[str, tuple[str | None, ...]], ...]


def distinct(notes: Iterable[Any]) -> list[Any]:
    """The notes without repeats, in order (equal notes once; two different notes stay even
    when they read the same, which the report's words merge)."""
    seen: set[Any] = set()
    out = []
    for note in notes:
        try:
            hash(note)
            key = note
        except TypeError:  # a note holding a mapping: by its fields' text
            key = (type(note), repr(note))
        if key not in seen:
            seen.add(key)
            out.append(note)
    return out
