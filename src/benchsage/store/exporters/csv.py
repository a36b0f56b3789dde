"""Tidy table as CSV (what `benchsage analyze --format tidy` reads)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pacsv


def write(table: pa.Table, path: str) -> None:
    pacsv.write_csv(table, path, pacsv.WriteOptions(include_header=True, quoting_style="needed"))
