"""Readable ticks on the log axes of the report's figures: a handful of labels that never
overlap, plain numbers (0.03, 0.04, 0.06) where the axis spans less than PLAIN_DECADES and
powers of ten (10⁻⁵, 10⁻³) where it spans more; every figure with a log axis calls log_axis.

Labels are chosen when the axis is drawn, from its view limits and its length in pixels, with
each label's width measured in the font it is drawn in, so a resized or re-laid-out figure
stays readable. matplotlib's own LogLocator labels minor ticks on short spans, which is how
"3×10⁻²4×10⁻²6×10⁻²" came to be printed.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from matplotlib.axis import Axis, XAxis
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath
from matplotlib.ticker import FixedLocator, Formatter, LogLocator, MaxNLocator, NullFormatter

MOST_LABELS = 6  # "a handful": more labels than this on one axis is more than anyone reads
PLAIN_DECADES = 2.0  # an axis spanning fewer decades than this is labelled with plain numbers
GAP = 0.6  # free space between two labels, in font sizes
PLAIN_FROM, PLAIN_UP_TO = 1e-4, 1e6  # plain numbers outside this range are written a×10ⁿ
# Mantissas of the labelled ticks of a short span, densest first: the densest that fits wins.
_SUBS = ((1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 5, 6, 8), (1, 2, 3, 5, 7), (1, 2, 5), (1, 3), (1,))
# Decades between two labelled powers of ten on a long span, the smallest that fits wins.
_DECADE_STEPS = (1, 2, 3, 4, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000)
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_MEASURE = TextToPath()

Fits = Callable[[Sequence[float], Sequence[str]], bool]


def power_of_ten(exponent: int) -> str:
    """10ⁿ in superscript digits, which the figure's font has: text, not mathtext."""
    return "10" + str(exponent).translate(_SUPERSCRIPT)


def plain(x: float) -> str:
    """A tick value as written by hand: 0.03, 250, 20,000; a×10ⁿ when tiny or huge."""
    if x == 0:
        return "0"
    if not PLAIN_FROM <= abs(x) < PLAIN_UP_TO:
        exponent = math.floor(math.log10(abs(x)))
        mantissa = f"{x / 10**exponent:.6g}"
        return power_of_ten(exponent) if mantissa == "1" else f"{mantissa}×{power_of_ten(exponent)}"
    # Tick values are round numbers: six significant digits write them exactly.
    text = np.format_float_positional(float(f"{x:.6g}"), trim="-")
    whole, _, frac = text.partition(".")
    if abs(x) >= 10_000:
        whole = f"{int(whole):,}"
    return whole + ("." + frac if frac else "")


def label(x: float, decades: float) -> str:
    """The label of a tick at x on an axis spanning `decades`."""
    if decades >= PLAIN_DECADES and x > 0:
        exponent = round(math.log10(x))
        if math.isclose(x, 10.0**exponent, rel_tol=1e-9):
            return power_of_ten(exponent)
    return plain(x)


def log_ticks(vmin: float, vmax: float, fits: Fits, most: int = MOST_LABELS) -> list[float]:
    """The labelled ticks of a log axis from vmin to vmax (both > 0): the densest round values
    that `fits` accepts (no two labels overlap), at least two and at most `most`."""
    lo, hi = math.log10(vmin), math.log10(vmax)
    decades = hi - lo

    def labelled(ticks: Sequence[float]) -> bool:
        return 2 <= len(ticks) <= most and fits(ticks, [label(t, decades) for t in ticks])

    if decades >= PLAIN_DECADES:
        for step in _DECADE_STEPS:
            exponents = range(math.ceil(lo / step - 1e-9) * step, math.floor(hi + 1e-9) + 1, step)
            ticks = [10.0**e for e in exponents]
            if labelled(ticks):
                return ticks
        return [10.0 ** math.ceil(lo - 1e-9), 10.0 ** math.floor(hi + 1e-9)]
    for subs in _SUBS:
        ticks = [float(f"{m * 10.0**e:.12g}") for e in range(math.floor(lo) - 1, math.ceil(hi) + 1) for m in subs]
        ticks = [t for t in ticks if vmin * (1 - 1e-9) <= t <= vmax * (1 + 1e-9)]
        if labelled(ticks):
            return ticks
    # Less than a factor of ~2: a log axis is nearly linear there, so are its round numbers.
    for bins in range(most, 0, -1):
        ticks = [float(t) for t in MaxNLocator(nbins=bins, steps=[1, 2, 2.5, 5, 10]).tick_values(vmin, vmax)
                 if vmin * (1 - 1e-9) <= t <= vmax * (1 + 1e-9)]
        if labelled(ticks):
            return ticks
    return [vmin, vmax]


def _fits(axis: Axis, decades_of: Callable[[], tuple[float, float]]) -> Fits:
    """Whether labels at these ticks leave GAP between neighbours on `axis` as drawn now:
    positions from the view limits and the axes' size in pixels, sizes from the labels' font."""

    def fits(ticks: Sequence[float], texts: Sequence[str]) -> bool:
        lo, hi = decades_of()
        horizontal = isinstance(axis, XAxis)
        box = axis.axes.bbox
        length = box.width if horizontal else box.height
        font = _tick_font(axis)
        scale = axis.figure.dpi / 72.0
        pos = (np.log10(np.asarray(ticks)) - lo) / (hi - lo) * length
        if horizontal:
            size = np.array([_MEASURE.get_text_width_height_descent(t, font, ismath=False)[0] for t in texts]) * scale
        else:
            size = np.full(len(texts), font.get_size_in_points() * 1.2 * scale)
        gap = GAP * font.get_size_in_points() * scale
        return bool(np.all(np.diff(pos) >= (size[1:] + size[:-1]) / 2 + gap))

    return fits


def _tick_font(axis: Axis) -> FontProperties:
    return axis.majorTicks[0].label1.get_fontproperties()


def _view_decades(axis: Axis) -> tuple[float, float]:
    vmin, vmax = sorted(axis.get_view_interval())
    return math.log10(vmin), math.log10(vmax)


class _Locator(LogLocator):
    """The labelled ticks of log_ticks; LogLocator's limits for a single value or none."""

    def tick_values(self, vmin: float, vmax: float) -> list[float]:  # type: ignore[override]
        vmin, vmax = sorted((vmin, vmax))
        if not (vmin > 0 and math.isfinite(vmax)) or vmin == vmax:
            vmin, vmax = self.nonsingular(vmin, vmax)
        if self.axis is None:
            return log_ticks(vmin, vmax, lambda ticks, texts: True)
        return log_ticks(vmin, vmax, _fits(self.axis, lambda: (math.log10(vmin), math.log10(vmax))))


class _Labels(Formatter):
    """Each tick of _Locator written as `label` writes it for the axis's span."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        lo, hi = _view_decades(self.axis)
        return label(x, hi - lo)


class _FixedLabels(Formatter):
    """Given labels at given values (a sweep's levels), every `stride`-th shown: the smallest
    stride whose labels fit, so levels in even steps keep evenly spaced labels."""

    def __init__(self, at: Sequence[float], texts: Sequence[str]) -> None:
        self.texts = {float(x): t for x, t in zip(at, texts)}

    def format_ticks(self, values: Sequence[float]) -> list[str]:
        texts = [self.texts.get(float(v), plain(float(v))) for v in values]
        if len(values) <= 2:
            return texts
        fits = _fits(self.axis, lambda: _view_decades(self.axis))
        for stride in range(1, len(values)):
            keep = list(range(0, len(values), stride))
            if len(keep) <= MOST_LABELS and fits([values[i] for i in keep], [texts[i] for i in keep]):
                break
        return [t if i in keep else "" for i, t in enumerate(texts)]

    def __call__(self, x: float, pos: int | None = None) -> str:
        return self.texts.get(float(x), plain(float(x)))


def log_axis(axis: Axis, at: Sequence[float] | None = None, labels: Sequence[str] | None = None) -> None:
    """Give the log-scaled `axis` readable ticks. Without `at`: round values (log_ticks),
    unlabelled minor ticks between them. With `at` (and their `labels`, default plain numbers):
    a tick at each of those values, labelled where the labels fit (every k-th), no minor ticks."""
    if at is None:
        axis.set_major_locator(_Locator())
        axis.set_major_formatter(_Labels())
        axis.set_minor_locator(LogLocator(subs="auto"))
    else:
        axis.set_major_locator(FixedLocator(list(at)))
        axis.set_major_formatter(_FixedLabels(at, labels if labels is not None else [plain(float(x)) for x in at]))
        axis.set_minor_locator(FixedLocator([]))
    axis.set_minor_formatter(NullFormatter())
