"""The words every layer shares: here, how a duration is written."""

from __future__ import annotations

import pytest

from benchsage.vocabulary import format_duration


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0:00"), (-3, "0:00"), (59.4, "0:59"), (59.6, "1:00"), (61, "1:01"), (3599, "59:59"), (3600, "1:00:00"),
    (3723, "1:02:03"), (100 * 3600 + 5, "100:00:05"),
])
def test_a_duration_reads_as_a_clock_to_the_second(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
