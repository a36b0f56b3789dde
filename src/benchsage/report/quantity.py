"""The one formatter of quantities: a value and its unit in, three significant digits in a
readable unit out ("44.0 ms", "10.9 MiB", "1.21 GB/s", "18.8k req/s"), and ratios as "1.88×".

The terminal, the Markdown and the HTML report all print numbers with units through here, so no
view invents its own rounding. Units are those of parsers/units.py, the one table of units:
a time is shown in ns, µs, ms, s, min or h; a size in binary prefixes (B, KiB, MiB, ...); a
throughput in decimal ones (kB/s, MB/s, ...); rates, counts and units the table does not know
with a metric prefix (k, M, G). An interval is shown in its value's unit ("44.0 ms [41.2, 47.9]").
"""

from __future__ import annotations

import math
from typing import Sequence

from benchsage.parsers.units import UNITS

NULL = "–"  # a value that could not be computed

_TIMES = ((3600.0, "h"), (60.0, "min"), (1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_BINARY = ((1024.0**4, "TiB"), (1024.0**3, "GiB"), (1024.0**2, "MiB"), (1024.0, "KiB"), (1.0, "B"))
_DECIMAL = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
# Prefixes of a unit the table does not know, and of joules and watts (mJ, kW).
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))
# A time below this many minutes (hours) is still shown in seconds (minutes): 83.2 s, 16.7 min.
_SECONDS_UP_TO = 1000.0
_MINUTES_UP_TO = 100.0 * 60.0


def sig3(x: float) -> str:
    """x with three significant digits, never in exponent notation: 44.0, 0.432, 1250, -3.10."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    digits = 2 - math.floor(math.log10(abs(x)))
    rounded = round(x, digits)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > math.floor(math.log10(abs(x))):
        digits -= 1  # 999.6 rounds up to 1000: one digit fewer after the point
    return f"{rounded:.{max(digits, 0)}f}"


def _scale(value: float, unit: str) -> tuple[float, str, str]:
    """(factor, prefix or unit shown, separator): value / factor is shown, followed by the text."""
    known = UNITS.get(unit)
    # Zero is shown in the base unit of its dimension (0 s, 0 B), not in the smallest prefix.
    size = abs(value) if value != 0 else (1.0 / float(known.scale) if known is not None else 1.0)
    if known is not None and known.dimension == "time":
        seconds = size * float(known.scale)
        base = float(known.scale)
        if seconds >= _MINUTES_UP_TO:
            return 3600.0 / base, "h", " "
        if seconds >= _SECONDS_UP_TO:
            return 60.0 / base, "min", " "
        for factor, name in _TIMES[2:]:
            if seconds >= factor * 0.9995 or name == "ns":
                return factor / base, name, " "
    if known is not None and known.dimension in ("size", "size/time"):
        base = float(known.scale)
        in_bytes = size * base
        table, suffix = (_BINARY, "") if known.dimension == "size" else (tuple((f, p + "B") for f, p in _DECIMAL), "/s")
        for factor, name in table:
            if in_bytes >= factor * 0.9995 or factor == 1.0:
                return factor / base, name + suffix, " "
    if unit == "%":
        return 1.0, "%", ""
    if unit in ("J", "W"):
        for factor, name in _SI:
            if size >= factor * 0.9995 or name == "n":
                return factor, name + unit, " "
    # Rates, counts and units the table does not know: a metric prefix on the number.
    return next((factor, name) for factor, name in _DECIMAL if size >= factor * 0.9995 or factor == 1.0) + ("",)


def _suffix(unit: str) -> str:
    """What follows a number with a metric prefix: "/s" for 1/s, " req/s", nothing without a unit."""
    if unit in ("1/s", "/s"):
        return "/s"
    return f" {unit}" if unit else ""


def quantity(value: float | None, unit: str = "") -> str:
    """`value` in `unit`, three significant digits in a readable unit: quantity(0.0432, "s") is
    "43.2 ms", quantity(11130, "KiB") "10.9 MiB", quantity(1.21e9, "B/s") "1.21 GB/s",
    quantity(18835, "req/s") "18.8k req/s"; None is NULL."""
    if value is None or not math.isfinite(value):
        return NULL
    factor, shown, sep = _scale(value, unit)
    number = sig3(value / factor)
    if sep == "" and shown != "%":  # a metric prefix on the number, then the unit
        return f"{number}{shown}{_suffix(unit)}"
    return f"{number}{sep}{shown}"


def interval(value: float | None, low: float | None, high: float | None, unit: str = "") -> str:
    """A value and its interval in the value's unit: "44.0 ms [41.2, 47.9]"; the value alone when
    the interval is not known."""
    if value is None or not math.isfinite(value):
        return NULL
    text = quantity(value, unit)
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return text
    factor, _, _ = _scale(value, unit)
    return f"{text} [{sig3(low / factor)}, {sig3(high / factor)}]"


def quantities(values: Sequence[float | None], unit: str = "") -> list[str]:
    """Several values, each in its own readable unit."""
    return [quantity(v, unit) for v in values]


def ratio(x: float | None) -> str:
    """A ratio as "1.88×" (three significant digits)."""
    return NULL if x is None or not math.isfinite(x) else f"{sig3(x)}×"


def percent(x: float | None, *, signed: bool = False) -> str:
    """A percentage with three significant digits: "46.9%", signed "+3.80%"."""
    if x is None or not math.isfinite(x):
        return NULL
    text = sig3(x) + "%"
    return ("+" + text) if signed and x > 0 else text
