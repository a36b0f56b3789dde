"""The unit table: exact conversions of what the tools print, and refusals that say why."""

from __future__ import annotations

import pytest

from benchsage.parsers import units


@pytest.mark.parametrize(("text", "seconds"), [
    ("850.00us", 0.00085), ("4.30ms", 0.0043), ("1.02s", 1.02), ("1.02s ", 1.02), ("1.5m", 90.0), ("2h", 7200.0),
    ("12ns", 1.2e-08), ("3µs", 3e-06), ("101.00us", 0.000101), ("12.37ms", 0.01237),
])
def test_printed_durations_read_exactly_in_seconds(text: str, seconds: float) -> None:
    assert units.time(text) == seconds


def test_counts_take_metric_prefixes_and_wrk_sizes_binary_ones() -> None:
    assert units.count("12.34k") == 12340.0
    assert units.count("1.5M") == 1_500_000.0
    assert units.count("850") == 850.0
    assert units.binary_bytes("13.41MB") == 13.41 * 1024 * 1024
    assert units.binary_bytes("8.12KB") == 8314.88
    assert units.binary_bytes("512B") == 512.0


def test_decimal_and_binary_prefixes_are_kept_apart() -> None:
    assert units.convert("1", "KB", "B") == 1000.0
    assert units.convert("1", "KiB", "B") == 1024.0
    assert units.convert("1", "GB", "MB") == 1000.0
    assert units.convert("1", "GiB", "MiB") == 1024.0
    assert units.convert("2", "MiB/s", "B/s") == 2097152.0
    assert units.convert("4.30", "ms", "s") == 0.0043
    assert units.convert("0.0043", "s", "ms") == 4.3
    assert units.convert("250", "us", "ms") == 0.25


def test_what_cannot_be_converted_says_which_unit() -> None:
    with pytest.raises(units.UnitError, match=r"cannot convert 'ms' \(time\) to 'MB' \(size\)"):
        units.convert("1", "ms", "MB")
    with pytest.raises(units.UnitError, match="unknown unit 'furlong'"):
        units.convert("1", "furlong", "s")
    with pytest.raises(units.UnitError, match="'4.30xs' is not a duration"):
        units.time("4.30xs")
    with pytest.raises(units.UnitError, match="not a number with a unit"):
        units.time("fast")
