"""Choose the importer for each source and combine several sources into one TrialTable.

A directory is a benchsage experiment (its journal); a file is recognised by its columns.
Several files (say one per worker) are combined; runs stay distinct and the run start times
each file brought along are renumbered with the runs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

from benchsage.errors import DataError, UsageError
from benchsage.store.importers import _csv, ordersage, tidy
from benchsage.store.importers.base import Importer, check_arms
from benchsage.store.table import TrialTable, concat

IMPORTERS: tuple[Importer, ...] = (ordersage.IMPORTER, tidy.IMPORTER)
FORMATS: tuple[str, ...] = ("auto", "benchsage") + tuple(i.name for i in IMPORTERS)


def load_source(path: str | Path, format: str = "auto") -> TrialTable:
    """One experiment directory or data file as a TrialTable (both arms must have rows)."""
    table = _load(Path(path), format)
    check_arms(table, str(path))
    return table


def load_sources(paths: Sequence[str | Path], format: str = "auto") -> TrialTable:
    """Several sources combined into one table; the arms are checked on the combination."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise UsageError("no data source given: name an experiment directory or a data file")
    tables = [_load(p, format) for p in paths]
    table = combine(tables)
    where = str(paths[0]) if len(paths) == 1 else f"{len(paths)} sources ({', '.join(str(p) for p in paths)})"
    check_arms(table, where)
    return table


def combine(tables: Sequence[TrialTable]) -> TrialTable:
    """table.concat, keeping provenance["run_starts"] valid for the renumbered runs."""
    if len(tables) == 1:
        return tables[0]
    combined = concat(tables)
    starts: dict[int, float] = {}
    environment: list[Any] = []
    offset = 0
    # concat shifts each table's run ids by one more than the largest id so far; do the same.
    for t in tables:
        for rid, start in dict(t.provenance.get("run_starts") or {}).items():
            starts[int(rid) + offset] = start
        environment.extend(t.provenance.get("environment") or ())
        known = t.run >= 0
        if known.any():
            offset = int(t.run[known].max()) + offset + 1
    provenance = dict(combined.provenance)
    if starts:
        provenance["run_starts"] = starts
    if environment:
        provenance["environment"] = environment
    return dataclasses.replace(combined, provenance=provenance)


def detect_format(path: Path) -> Importer:
    """The importer whose columns the file has."""
    columns = _csv.header(path)
    for importer in IMPORTERS:
        if importer.sniff(columns):
            return importer
    # Name the missing columns of the format the file resembles most, else list the formats.
    best = max(IMPORTERS, key=lambda i: sum(c in columns for c in i.required))
    if any(c in columns for c in best.required):
        _csv.require_columns(path, columns, best.required)
    expected = "; ".join(f"{i.name}: {', '.join(i.columns)}" for i in IMPORTERS)
    raise DataError(
        f"{path}: cannot tell the format from its columns ({', '.join(columns) or 'none'}); "
        f"expected the columns of {expected}, or pass --format"
    )


def _load(path: Path, format: str) -> TrialTable:
    if format not in FORMATS:
        raise DataError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    if format == "benchsage" or (format == "auto" and path.is_dir()):
        if not path.is_dir():
            raise DataError(f"{path}: not an experiment directory (the benchsage format is a directory written by `benchsage run`)")
        return _read_experiment(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or directory")
    if path.is_dir():
        raise DataError(f"{path}: is a directory; --format {format} reads a file (use --format auto or benchsage for an experiment directory)")
    importer = detect_format(path) if format == "auto" else _by_name(format)
    return importer.read(path, require_both_arms=False)


def _by_name(name: str) -> Importer:
    return next(i for i in IMPORTERS if i.name == name)


def _read_experiment(path: Path) -> TrialTable:
    # Imported late: the journal reader pulls in SQLite and the spec machinery.
    from benchsage.store.importers.benchsage import read_experiment

    return read_experiment(path)


__all__ = ["FORMATS", "IMPORTERS", "combine", "detect_format", "load_source", "load_sources"]
