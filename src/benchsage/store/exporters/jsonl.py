"""Tidy table as JSON lines: one object per row, null where a value is missing."""

from __future__ import annotations

import json
import math

import pyarrow as pa


def write(table: pa.Table, path: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in table.to_pylist():
            clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
            fh.write(json.dumps(clean, ensure_ascii=False) + "\n")
