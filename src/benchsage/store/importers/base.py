"""The one small interface every file importer implements, and checks they all share.

An importer turns one file into a TrialTable. It says from a file's column names whether it
can read it (`sniff`), so `--format auto` needs no format-specific code in detect.py; adding a
format means adding a file here and one line in detect.IMPORTERS.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from benchsage.errors import DataError
from benchsage.store.table import ARMS, TrialTable


class ReadFile(Protocol):
    def __call__(self, path: str | Path, *, require_both_arms: bool = True) -> TrialTable: ...


@dataclass(frozen=True)
class Importer:
    """A file format that `benchsage analyze --format NAME` reads."""

    name: str  # the --format value
    description: str  # one line for help texts and error messages
    columns: tuple[str, ...]  # what auto-detection looks for, for error messages
    required: tuple[str | tuple[str, ...], ...]  # columns the reader needs; a tuple is "one of"
    sniff: "SniffColumns"
    read: ReadFile


class SniffColumns(Protocol):
    def __call__(self, columns: Sequence[str]) -> bool: ...


def check_arms(table: TrialTable, where: str) -> None:
    """Both arms must have analysable rows, or there is nothing to compare."""
    counts = np.bincount(table.arm.astype(np.int64), minlength=2) if len(table) else np.zeros(2, dtype=np.int64)
    empty = [ARMS[i] for i in (0, 1) if counts[i] == 0]
    if empty:
        have = ", ".join(f"{counts[i]} {ARMS[i]}" for i in (0, 1))
        raise DataError(
            f"{where}: no analysable rows in the {' and '.join(empty)} arm ({have}); "
            "benchsage compares a fixed-order arm with a random-order arm and needs both"
        )


def exclusion_summary(
    path: Path,
    ok: np.ndarray,
    status: np.ndarray,
    status_names: Sequence[str],
    run: np.ndarray,
    position: np.ndarray,
    test: np.ndarray,
    *,
    ok_label: str = "ok",
) -> tuple[int, tuple[str, ...]]:
    """How many trials were left out because their status was not ok, and the warning to print.

    Trials, not rows, are counted when runs and positions say which rows belong to one trial
    (a failed trial of a test with three metrics is one exclusion, not three).
    """
    bad = ~ok
    if not bad.any():
        return 0, ()
    r, p = run[bad], position[bad]
    if bool(np.all(r >= 0)) and bool(np.all(p >= 0)):
        keys = np.stack([r, p.astype(np.int64), test[bad].astype(np.int64)], axis=1)
        uniq, first = np.unique(keys, axis=0, return_index=True)
        count, unit = len(uniq), "trials"
        kinds = status[bad][first]
    else:
        count, unit = int(bad.sum()), "rows"
        kinds = status[bad]
    per = np.bincount(kinds, minlength=len(status_names))
    detail = ", ".join(f"{status_names[i] or '(empty)'}: {int(per[i])}" for i in np.flatnonzero(per))
    return count, (f"{path}: {count} {unit} excluded because their status is not {ok_label} ({detail})",)
