"""The readers of a spec's TOML values: each checks a key's type and range and returns it with
its default, or raises a SpecError naming the file, the table and the key.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Iterator, Mapping

from benchsage.errors import SpecError
from benchsage.vocabulary import parse_cpu_list

WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")  # a name of a factor, level or sweep: letters, digits, _ . -


class Where:
    """Builds error messages that name the file and the key."""

    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, where: str, what: str) -> SpecError:
        return SpecError(f"{self.path}: {where}: {what}" if where else f"{self.path}: {what}")


def type_name(value: Any) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "true/false", list: "an array", dict: "a table"}.get(
        type(value), type(value).__name__
    )


def check_keys(w: Where, where: str, table: Mapping[str, Any], allowed: set[str]) -> None:
    for key in table:
        if key not in allowed:
            hint = ", ".join(sorted(allowed))
            raise w.error(where, f"unknown key '{key}' (expected one of: {hint})")


def tables(w: Where, items: Any, key: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """The tables of an array of tables ([[key]]): (1-based number, "[[key]] #n", table)."""
    if not isinstance(items, list):
        raise w.error("", f"'{key}' must be an array of tables ([[{key}]]), got {type_name(items)}")
    for i, item in enumerate(items, 1):
        here = f"[[{key}]] #{i}"
        if not isinstance(item, dict):
            raise w.error(here, f"must be a table, got {type_name(item)}")
        yield i, here, item


def string(w: Where, where: str, table: Mapping[str, Any], key: str, *, required: bool = False, default: str | None = None) -> str | None:
    if key not in table:
        if required:
            raise w.error(where, f"missing required key '{key}'")
        return default
    value = table[key]
    if not isinstance(value, str):
        raise w.error(where, f"key '{key}' must be a string, got {type_name(value)}")
    if required and not value.strip():
        raise w.error(where, f"key '{key}' must not be empty")
    return value


def number(w: Where, where: str, table: Mapping[str, Any], key: str, default: float | None, *, positive: bool = True) -> float | None:
    if key not in table:
        return default
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise w.error(where, f"key '{key}' must be a number, got {type_name(value)}")
    if positive and value <= 0:
        raise w.error(where, f"key '{key}' must be positive, got {value}")
    return float(value)


def integer(w: Where, where: str, table: Mapping[str, Any], key: str, default: int | None, *, minimum: int) -> int | None:
    if key not in table:
        return default
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise w.error(where, f"key '{key}' must be an integer, got {type_name(value)}")
    if value < minimum:
        raise w.error(where, f"key '{key}' must be at least {minimum}, got {value}")
    return value


def env(w: Where, where: str, table: Mapping[str, Any], inherited: Mapping[str, str]) -> dict[str, str]:
    if "env" not in table:
        return dict(inherited)
    value = table["env"]
    if not isinstance(value, dict):
        raise w.error(where, f"key 'env' must be a table of strings, got {type_name(value)}")
    env = dict(inherited)
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise w.error(where, f"env.{k} must be a string, got {type_name(v)}")
        env[k] = str(v)
    return env


def cwd(w: Where, where: str, table: Mapping[str, Any], base: str) -> str:
    value = string(w, where, table, "cwd")
    return base if value is None else os.path.normpath(os.path.join(base, value))


def string_list(w: Where, where: str, table: Mapping[str, Any], key: str, *, required: bool = False) -> tuple[str, ...]:
    if key not in table:
        if required:
            raise w.error(where, f"missing required key '{key}'")
        return ()
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise w.error(where, f"key '{key}' must be an array of strings, got {type_name(value)}")
    if required and not value:
        raise w.error(where, f"key '{key}' must not be empty")
    return tuple(value)


def cpus(w: Where, where: str, table: dict[str, Any], default: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """`cpus`: a CPU list in taskset syntax ("0-3,6", "1-7:2"); whether the worker's host has
    them is checked when it connects."""
    if "cpus" not in table:
        return default
    value = table["cpus"]
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else string(w, where, table, "cpus")
    assert text is not None
    try:
        return tuple(parse_cpu_list(text))
    except ValueError as exc:
        raise w.error(where, f"key 'cpus': {exc}") from None
