"""The one formatter of quantities: three significant digits in a readable unit."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchsage.report.quantity import NULL, interval, percent, quantity, ratio, sig3


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (0.0432064, "s", "43.2 ms"),
        (0.00085, "s", "850 µs"),
        (2e-7, "s", "200 ns"),
        (0.9996, "s", "1.00 s"),
        (83.2, "s", "83.2 s"),
        (1234, "s", "20.6 min"),
        (7200, "s", "2.00 h"),
        (43.2, "ms", "43.2 ms"),
        (1500, "ms", "1.50 s"),
        (-0.0031, "s", "-3.10 ms"),
        (0, "s", "0 s"),
        (11130, "KiB", "10.9 MiB"),
        (678, "KiB", "678 KiB"),
        (0, "KiB", "0 B"),
        (512, "B", "512 B"),
        (1.21e9, "B/s", "1.21 GB/s"),
        (3.2, "MB/s", "3.20 MB/s"),
        (18835, "req/s", "18.8k req/s"),
        (18835, "1/s", "18.8k/s"),
        (845, "", "845"),
        (11130, "requests", "11.1k requests"),
        (10000, "widgets", "10.0k widgets"),
        (0.5, "J", "500 mJ"),
        (12.345, "%", "12.3%"),
        (None, "s", NULL),
        (math.nan, "s", NULL),
    ],
)
def test_a_value_is_shown_in_a_readable_unit_with_three_significant_digits(value: float, unit: str, text: str) -> None:
    assert quantity(value, unit) == text


def test_an_interval_is_shown_in_its_values_unit() -> None:
    assert interval(0.044, 0.0412, 0.0479, "s") == "44.0 ms [41.2, 47.9]"
    assert interval(0.044, None, None, "s") == "44.0 ms"
    assert interval(None, 1, 2, "s") == NULL


def test_ratios_and_percentages() -> None:
    assert ratio(1.882) == "1.88×"
    assert ratio(None) == NULL
    assert percent(46.93) == "46.9%"
    assert percent(3.8, signed=True) == "+3.80%"
    assert percent(-3.8, signed=True) == "-3.80%"


@given(st.floats(min_value=1e-12, max_value=1e15, allow_nan=False))
def test_sig3_keeps_three_significant_digits_and_no_exponent(x: float) -> None:
    text = sig3(x)
    assert "e" not in text
    digits = text.replace(".", "").lstrip("0")
    assert len(digits) >= 3 or float(text) >= 100  # 1250 keeps four digits, never fewer than three
    assert math.isclose(float(text), x, rel_tol=5.1e-3)


@given(st.floats(min_value=1e-9, max_value=1e7, allow_nan=False))
def test_a_time_is_never_shown_with_more_than_four_characters_of_number(seconds: float) -> None:
    number, _, unit = quantity(seconds, "s").partition(" ")
    assert unit in ("ns", "µs", "ms", "s", "min", "h")
    assert len(number.replace(".", "")) <= 4
