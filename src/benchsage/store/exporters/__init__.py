"""Exporters of the tidy trial table: one file per format, one `write(table, path)` each.

The tidy table is the format `benchsage analyze --format tidy` reads back: one row per trial
and metric, failed trials included with an empty value and their status and reason.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa

from benchsage.store.exporters import csv, jsonl, parquet

EXPORTERS: dict[str, Callable[[pa.Table, str], None]] = {
    "csv": csv.write,
    "jsonl": jsonl.write,
    "parquet": parquet.write,
}
