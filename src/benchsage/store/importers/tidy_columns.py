"""The columns of the tidy CSV format and what read_columns reads of them, shared by the
in-memory reader (tidy.py) and the block-wise one (tidy_stream.py)."""

from __future__ import annotations

from typing import Any

REQUIRED = ("test", "order", "value")
OPTIONAL = ("metric", "run", "position", "worker", "time", "status", "boot_id")
_TEXT_COLUMNS = ("test", "order", "metric", "run", "worker", "status", "boot_id")


def is_ok(status: str) -> bool:
    return status.strip().lower() == "ok"


# What read_columns reads of a tidy file (tidy_stream.py reads the same, block by block).
REQUEST: dict[str, Any] = dict(
    required=REQUIRED,
    categorical=_TEXT_COLUMNS,
    numeric=("value", "time"),
    integer=("position",),
    status="status",
    is_ok=is_ok,
    needed=("value",),
    strict=("time", "position"),
    codes_only=("run",),
)
