"""The observer effect: strace perturbs a syscall-heavy test more than a CPU loop; the effects
against scipy, corrected per family."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from benchsage.analyze.treatments import analyze_treatments
from benchsage.analyze.treatments.notes import ObserverPerturbs

sys.path.insert(0, str(Path(__file__).parent))
from treatment_data import build, const  # noqa: E402


def test_strace_perturbs_a_syscall_heavy_test_more_than_a_cpu_loop() -> None:
    def syscalls(c, o, f):
        return 0.004 * (3.0 if o == "strace" else 1.0)

    def loop(c, o, f):
        return 0.050 * (1.01 if o == "strace" else 1.0)

    table = build({"syscalls": syscalls, "loop": loop}, contexts=0, runs=20, observer=("none", "strace"))
    result = analyze_treatments(table)
    effects = {e.test: e for e in result.observer}
    assert effects["syscalls"].significant and effects["syscalls"].effect_pct == pytest.approx(200, abs=5)
    assert effects["syscalls"].effect_pct > 5 * abs(effects["loop"].effect_pct)
    assert all(e.baseline == "none" and e.level == "strace" for e in result.observer)
    (warning,) = [w for w in result.warnings if isinstance(w, ObserverPerturbs)]
    assert (warning.level, warning.baseline, warning.test, warning.metric) == ("strace", "none", "syscalls", "wall_time")
    assert warning.effect_pct == effects["syscalls"].effect_pct


def test_observer_effects_match_scipy_and_are_corrected_per_family() -> None:
    def t(c, o, f):
        return 0.01 * (1.1 if o == "perf" else 1.3 if o == "strace" else 1.0)

    table = build({"x": t, "y": const(0.02)}, contexts=0, runs=18, observer=("none", "perf", "strace"), cv=0.05)
    effects = analyze_treatments(table).observer
    assert [(e.test, e.level) for e in effects] == [("x", "perf"), ("x", "strace"), ("y", "perf"), ("y", "strace")]
    frame = table.to_pandas()
    for e in effects:
        level = frame[(frame.test == e.test) & (frame.observer == e.level)].value.to_numpy()
        base = frame[(frame.test == e.test) & (frame.observer == "none")].value.to_numpy()
        assert e.p == pytest.approx(stats.mannwhitneyu(level, base, method="exact").pvalue, rel=1e-9)
        assert e.p_adjusted == pytest.approx(min(1.0, 4 * e.p), rel=1e-12)
        assert e.effect_pct == pytest.approx((np.median(level) - np.median(base)) / np.median(base) * 100, rel=1e-12)
    assert effects[1].significant and effects[1].effect_pct == pytest.approx(30, abs=4)
