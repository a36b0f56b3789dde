"""Tidy table as Parquet, for pandas, polars, R's arrow and DuckDB."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq


def write(table: pa.Table, path: str) -> None:
    pq.write_table(table, path)
