"""The figure of a bisect search: the metric of every probed commit relative to good, in commit
order, with its 95 % interval, good and bad at the ends, and the change marked."""

from __future__ import annotations

from matplotlib.figure import Figure

from benchsage.analyze.bisect import BisectResult
from benchsage.design.bisect import BAD, GOOD
from benchsage.report.plots import FIXED_COLOUR, NEUTRAL_COLOUR, SIGNIFICANT_COLOUR, Plot, new_figure, render, styled
from benchsage.report.words.bisect import short

_COLOURS = {GOOD: FIXED_COLOUR, BAD: SIGNIFICANT_COLOUR}


@styled
def probes_figure(r: BisectResult) -> Plot:
    fig = new_figure(7.0, 3.2)
    ax = fig.add_subplot(1, 1, 1)
    points = [(0, 1.0, (1.0, 1.0), GOOD, "good")]
    points += [(p.index, p.ratio_to_good, p.ci, p.verdict, short(p.commit)) for p in r.probes]
    points.append((r.candidates, r.bad_vs_good.ratio_to_good, r.bad_vs_good.ci, BAD, "bad"))
    points.sort(key=lambda p: p[0])
    for x, m, (lo, hi), verdict, _ in points:
        colour = _COLOURS.get(verdict, NEUTRAL_COLOUR)
        if lo is not None and hi is not None:
            ax.vlines(x, lo, hi, colors=colour, linewidth=1.5)
        ax.plot([x], [m], "o", color=colour, markersize=5)
    ax.axhline(1.0, color=NEUTRAL_COLOUR, linewidth=0.8, linestyle="--")
    if r.first_bad is not None:
        at = next((p.index for p in r.probes if p.commit == r.first_bad), r.candidates)
        ax.axvline(at - 0.5, color=SIGNIFICANT_COLOUR, linewidth=1.0, linestyle=":")
        ax.annotate(f"first bad: {short(r.first_bad)}", (at - 0.5, 1.0), xytext=(4, 6), textcoords="offset points",
                    fontsize=7, color=SIGNIFICANT_COLOUR)
    ax.set_xticks([p[0] for p in points], [p[4] for p in points], rotation=90, ha="center", fontsize=6, parse_math=False)
    ax.set_xlim(-0.5, r.candidates + 0.5)
    ax.set_ylabel(f"{r.metric} / good (median of runs)", fontsize=8)
    ax.set_xlabel("commits in first-parent order (probed ones labelled where there is room)", fontsize=8)
    ax.margins(y=0.15)
    _thin_labels(fig, ax, _label_priority(r))
    svg = render(fig, "fig-bisect")
    return Plot("fig-bisect", "The probed commits", f"{r.metric} of {r.test} at each probed commit relative to good, "
                "in commit order: the median of the within-run ratios and its 95 % interval; blue: decided good, red: bad, "
                "grey: undecided.", svg)


_GAP = 3.0  # points kept free around a label: the browser draws the text, with its own font's widths


def _label_priority(r: BisectResult) -> list[int]:
    """Commit positions whose label matters most first: good, bad, the first bad commit and the
    last good probe before it, then the probes in the order they were made (the early ones
    spread over the range; the late ones crowd around the change)."""
    first = [0, r.candidates]
    if r.first_bad is not None:
        at = next((p.index for p in r.probes if p.commit == r.first_bad), r.candidates)
        first += [at] + [max((p.index for p in r.probes if p.index < at and p.verdict == GOOD), default=0)]
    return first + [p.index for p in r.probes]


def _thin_labels(fig: Figure, ax, priority: list[int]) -> None:  # type: ignore[no-untyped-def]
    """Hide the tick labels that would overlap one shown before them in `priority`: every commit
    probed keeps its point and tick, and its row in the table."""
    fig.draw_without_rendering()
    pad = _GAP * fig.dpi / 72
    labels = {round(t): label for t, label in zip(ax.get_xticks(), ax.get_xticklabels())}
    shown: list = []
    for at in dict.fromkeys(priority):
        label = labels.get(at)
        if label is None:
            continue
        box = label.get_window_extent().expanded(1.0, 1.0).padded(pad / 2)
        if any(box.overlaps(other) for other in shown):
            label.set_visible(False)
        else:
            shown.append(box)
