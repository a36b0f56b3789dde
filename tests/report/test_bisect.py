"""A bisect search summarised (analyze/bisect.py) and shown (report/bisect.py, html/bisect.py),
on a search run by design.bisect.run_search over simulated values."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from benchsage.analyze.bisect import summarize
from benchsage.design.bisect import BUILD_FAILED, BisectRecord, look_points, run_search
from benchsage.report.bisect import bisect_json, render_bisect
from benchsage.report.html.bisect import render_bisect_page
from benchsage.report.terminal import make_console

N, FIRST_BAD, BROKEN = 20, 13, 10


def _record(effect: float = 0.10, n: int = N, first_bad: int = FIRST_BAD, broken: int | None = BROKEN) -> BisectRecord:
    rng = np.random.default_rng(4)
    commits = tuple(f"{i:04d}" + "c" * 36 for i in range(1, n + 1))

    def measure(index, look, runs):
        cols = (0, n) if index is None else (0, n, index)
        level = np.array([effect if c >= first_bad else 0.0 for c in cols])
        return np.exp(rng.normal(0, 0.02, (runs, len(cols))) + level)

    out = run_search(n, 0.05, 2.0, look_points(30, 3), measure, lambda i: "ld: missing symbol" if i == broken else None)
    rng_ = out.range
    return BisectRecord(good="g" * 40, bad=commits[-1], candidates=commits, subjects={c: f"subject {c[:4]}" for c in commits},
                        test="t", metric="time", unit="s", better="lower", alpha=0.05, min_effect=2.0, points=look_points(30, 3),
                        check=dataclasses.replace(out.check, commit=commits[-1]),
                        probes=tuple(dataclasses.replace(p, commit=commits[p.index - 1]) for p in out.probes),
                        skipped=tuple((commits[i - 1], why, line) for i, why, line in out.skipped), range=rng_, builds=2 + len(out.probes),
                        direction=out.direction)


def test_summary_json_and_page() -> None:
    record = _record()
    result = summarize(record)
    assert result.first_bad == record.candidates[FIRST_BAD - 1] and result.decided
    assert result.parent == record.candidates[FIRST_BAD - 2]
    assert result.effect_pct == pytest.approx(10.5, abs=2.0) and result.ci[0] < result.effect_pct < result.ci[1]
    doc = bisect_json(result)
    assert list(doc)[:9] == ["first_bad", "subject", "parent", "effect_pct", "ci", "builds", "trials", "probes", "skipped"]
    assert doc["subject"] == f"subject {FIRST_BAD:04d}"
    assert all(set(p) == {"commit", "verdict", "runs", "ratio_to_good", "ci"} for p in doc["probes"])
    json.dumps(doc)  # plain JSON
    if BROKEN in [p.index for p in record.probes] or any(s[1] == BUILD_FAILED for s in record.skipped):
        assert doc["skipped"][0]["last_line"] == "ld: missing symbol"
    page = render_bisect_page(result)
    assert page.count("<svg") == 1 and record.candidates[FIRST_BAD - 1][:12] in page and "first bad" in page
    console = make_console(force_terminal=False)
    with console.capture() as cap:
        render_bisect(result, console)
    assert cap.get().startswith(f"First bad commit: {record.candidates[FIRST_BAD - 1][:12]}")


def test_no_change_is_an_answer() -> None:
    result = summarize(_record(effect=0.0))
    assert result.first_bad is None and not result.change and result.decided and result.probes == ()
    assert bisect_json(result)["first_bad"] is None
    assert "No change between good and bad" in render_bisect_page(result)


def test_a_change_on_one_worker_only_is_named_as_such() -> None:
    rng = np.random.default_rng(9)
    workers: dict[int, list[str]] = {}

    def measure(index, look, runs):
        cols = (0, N) if index is None else (0, N, index)
        names = ["a" if i % 2 == 0 else "b" for i in range(runs)]
        workers.setdefault(index or 0, []).extend(names)
        slow = np.array([[0.10 if c >= FIRST_BAD and w == "a" else 0.0 for c in cols] for w in names])
        return np.exp(rng.normal(0, 0.01, (runs, len(cols))) + slow)

    out = run_search(N, 0.05, 2.0, look_points(30, 3), measure, lambda i: None)
    commits = tuple(f"{i:02d}" + "d" * 38 for i in range(1, N + 1))
    record = BisectRecord(good="g" * 40, bad=commits[-1], candidates=commits, subjects={}, test="t", metric="time", unit="s",
                          better="lower", alpha=0.05, min_effect=2.0, points=look_points(30, 3),
                          check=dataclasses.replace(out.check, commit=commits[-1], workers=tuple(workers[0])),
                          probes=tuple(dataclasses.replace(p, commit=commits[p.index - 1], workers=tuple(workers[p.index]))
                                       for p in out.probes),
                          skipped=(), range=out.range, builds=2 + len(out.probes), direction=out.direction)
    result = summarize(record)
    assert result.first_bad == commits[FIRST_BAD - 1]
    assert result.changed_on == ("a",) and result.unchanged_on == ("b",)
    doc = bisect_json(result)
    assert set(doc["probes"][0]["workers"]) == {"a", "b"}
    assert "on a only, not on b" in render_bisect_page(result)


def _crowded() -> BisectRecord:
    """1,000 commits, the change at 501: the late probes sit a few commits apart."""
    return _record(n=1000, first_bad=501, broken=None)


def test_the_probes_labels_never_overlap_and_the_ones_that_matter_are_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.transforms import Bbox

    from benchsage.report import bisectplot

    result = summarize(_crowded())
    assert result.first_bad == _crowded().candidates[500] and len(result.probes) >= 8
    drawn = {}
    thin = bisectplot._thin_labels

    def keep(fig, ax, priority):  # the figure as drawn, to measure its labels
        thin(fig, ax, priority)
        drawn["ax"] = ax

    monkeypatch.setattr(bisectplot, "_thin_labels", keep)
    bisectplot.probes_figure(result)
    ticks = [tick.label1 for tick in drawn["ax"].xaxis.get_major_ticks() if tick.label1.get_text()]
    labels = [t for t in ticks if t.get_visible()]
    boxes: list[Bbox] = [t.get_window_extent() for t in labels]
    assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert {"good", "bad", result.first_bad[:12]} <= {t.get_text() for t in labels}
    hidden = [t for t in ticks if not t.get_visible()]
    assert hidden and len(labels) >= 6  # crowded enough to mean something, and most of the range still labelled
    room = bisectplot._GAP * 100 / 72  # points to pixels at the figure's dpi

    def extent(t):  # an invisible text measures as nothing: where it would be drawn
        t.set_visible(True)
        try:
            return t.get_window_extent()
        finally:
            t.set_visible(False)

    assert all(any(extent(t).padded(room).overlaps(b) for b in boxes) for t in hidden)  # hidden only where there is no room
    svg = bisectplot.probes_figure(result).svg
    assert all(t.get_text() not in svg for t in hidden) and all(t.get_text() in svg for t in labels)


@pytest.mark.browser
def test_the_browser_draws_the_probes_labels_apart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The labels' boxes as Chromium lays them out (its own fonts, not matplotlib's measure)."""
    import re

    import browser

    if not browser.available():
        pytest.skip("chromium is not installed")
    page = render_bisect_page(summarize(_crowded()))
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    measure = """<script>
      var boxes = Array.prototype.map.call(document.querySelectorAll('g[id^="fig-bisect-xtick_"] text'), function (t) {
        var r = t.getBoundingClientRect(); return [t.textContent, r.left, r.top, r.right, r.bottom].join(",");
      });
      document.body.setAttribute("data-boxes", boxes.join(";"));
    </script></body>"""
    path = tmp_path / "bisect.html"
    path.write_text(page.replace("</body>", measure), encoding="utf-8")
    (found,) = re.findall(r'<body[^>]* data-boxes="([^"]*)"', browser.dump_dom(path))
    boxes = [(name, *map(float, rest)) for name, *rest in (item.split(",") for item in found.split(";"))]
    assert len(boxes) >= 6 and {"good", "bad"} <= {b[0] for b in boxes}
    assert all(right > left and bottom > top for _, left, top, right, bottom in boxes)
    for i, (a, l1, t1, r1, b1) in enumerate(boxes):
        for b, l2, t2, r2, b2 in boxes[i + 1:]:
            assert r1 <= l2 or r2 <= l1 or b1 <= t2 or b2 <= t1, f"{a} and {b} overlap"
