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


def _record(effect: float = 0.10) -> BisectRecord:
    rng = np.random.default_rng(4)
    commits = tuple(f"{i:02d}" + "c" * 38 for i in range(1, N + 1))

    def measure(index, look, runs):
        cols = (0, N) if index is None else (0, N, index)
        level = np.array([effect if c >= FIRST_BAD else 0.0 for c in cols])
        return np.exp(rng.normal(0, 0.02, (runs, len(cols))) + level)

    out = run_search(N, 0.05, 2.0, look_points(30, 3), measure, lambda i: "ld: missing symbol" if i == BROKEN else None)
    rng_ = out.range
    return BisectRecord(good="g" * 40, bad=commits[-1], candidates=commits, subjects={c: f"subject {c[:2]}" for c in commits},
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
    assert doc["subject"] == f"subject {FIRST_BAD:02d}"
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
