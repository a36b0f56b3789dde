"""The one table of units: what each unit a tool prints (or a spec names) is in its base unit
(seconds, bytes, 1/s, bytes/s, a plain count), and the exact conversion between two of them.

Conversions go through decimal arithmetic from the printed text, so `850.00us` reads as exactly
the double nearest 0.00085 and `1.5m` as 90.0: a value is rounded once, when it becomes a float.
Decimal prefixes of sizes are powers of 1000 (kB, KB, MB), binary ones powers of 1024 (KiB, MiB);
a tool that prints "MB" meaning MiB (wrk) says so by converting with `binary_bytes`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation


class UnitError(ValueError):
    """A unit is unknown, or cannot be converted to another (a time to a size); str says which."""


@dataclass(frozen=True)
class Unit:
    dimension: str  # "time", "size", "rate", "size/time", "count"
    scale: Decimal  # how many base units one of this unit is


_K, _KI = Decimal(1000), Decimal(1024)
_TIME = {"ns": Decimal("1e-9"), "us": Decimal("1e-6"), "µs": Decimal("1e-6"), "μs": Decimal("1e-6"), "ms": Decimal("1e-3"),
         "s": Decimal(1), "sec": Decimal(1), "m": Decimal(60), "min": Decimal(60), "h": Decimal(3600)}
_SIZE = {"B": Decimal(1), "kB": _K, "KB": _K, "MB": _K ** 2, "GB": _K ** 3, "TB": _K ** 4,
         "KiB": _KI, "MiB": _KI ** 2, "GiB": _KI ** 3, "TiB": _KI ** 4}
_COUNT = {"": Decimal(1), "k": _K, "K": _K, "M": _K ** 2, "G": _K ** 3}

UNITS: dict[str, Unit] = {
    **{name: Unit("time", scale) for name, scale in _TIME.items()},
    **{name: Unit("size", scale) for name, scale in _SIZE.items()},
    **{f"{name}/s": Unit("size/time", scale) for name, scale in _SIZE.items()},
    **{name: Unit("rate", Decimal(1)) for name in ("1/s", "/s", "Hz", "ops/s", "req/s", "requests/s", "tps")},
    **{name: Unit("count", Decimal(1)) for name in ("count", "requests", "errors", "ops")},
}
BASE = {"time": "s", "size": "B", "rate": "1/s", "size/time": "B/s", "count": ""}

_QUANTITY = re.compile(r"\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*(\S*)\s*")


def unit(name: str) -> Unit:
    try:
        return UNITS[name]
    except KeyError:
        raise UnitError(f"unknown unit {name!r} (known: {', '.join(UNITS)})") from None


def _decimal(value: str | float | int | Decimal) -> Decimal:
    if isinstance(value, Decimal):
        return value
    try:
        # repr of a float is its shortest exact text: 0.1 stays 0.1, not 0.1000000000000000055...
        return Decimal(value.strip() if isinstance(value, str) else repr(value) if isinstance(value, float) else value)
    except InvalidOperation:
        raise UnitError(f"not a number: {value!r}") from None


def _float(value: Decimal) -> float:
    out = float(value)
    if out != out or out in (float("inf"), float("-inf")):
        raise UnitError(f"not a finite number: {value}")
    return out


def convert(value: str | float | int | Decimal, source: str, target: str) -> float:
    """`value` in unit `source` expressed in unit `target` (both of the same dimension)."""
    a, b = unit(source), unit(target)
    if a.dimension != b.dimension:
        raise UnitError(f"cannot convert {source!r} ({a.dimension}) to {target!r} ({b.dimension})")
    return _float(_decimal(value) * a.scale / b.scale)


def convertible(source: str, target: str) -> bool:
    return source in UNITS and target in UNITS and UNITS[source].dimension == UNITS[target].dimension


def to_base(value: str | float | int | Decimal, source: str) -> float:
    """`value` in unit `source` expressed in its dimension's base unit (s, B, 1/s, B/s)."""
    return _float(_decimal(value) * unit(source).scale)


def split(text: str) -> tuple[Decimal, str]:
    """A printed quantity ("850.00us", "1.02s ", "12.34k", "13.41MB") as its number and suffix."""
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise UnitError(f"not a number with a unit: {text.strip()!r}")
    return _decimal(match.group(1)), match.group(2)


def time(text: str) -> float:
    """A printed duration ("850.00us", "4.30ms", "1.02s", "1.5m") in seconds."""
    number, suffix = split(text)
    if suffix not in _TIME:
        raise UnitError(f"{text.strip()!r} is not a duration (units: {', '.join(_TIME)})")
    return to_base(number, suffix)


def count(text: str) -> float:
    """A printed count or rate with a metric prefix ("12.34k", "1.2M", "850") as a plain number."""
    number, suffix = split(text)
    if suffix not in _COUNT:
        raise UnitError(f"{text.strip()!r} is not a number with a metric prefix (k, M, G)")
    return _float(number * _COUNT[suffix])


def binary_bytes(text: str) -> float:
    """A size printed with binary prefixes but without the i ("13.41MB" meaning MiB, as wrk
    prints them) in bytes."""
    number, suffix = split(text)
    prefix = suffix[:-1] if suffix.endswith("B") else suffix
    scale = {"": Decimal(1), "K": _KI, "k": _KI, "M": _KI ** 2, "G": _KI ** 3, "T": _KI ** 4, "P": _KI ** 5}.get(prefix)
    if scale is None:
        raise UnitError(f"{text.strip()!r} is not a size (B, KB, MB, GB, TB)")
    return _float(number * scale)
