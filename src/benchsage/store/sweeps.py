"""The sweep levels of an experiment's tests, as its journal recorded them when it was created
(execute/create.py: meta "sweeps", the declared sweeps, and "test_sweeps", each expanded test's
levels): a "sweep:NAME" dimension per sweep, constant within a test, for the trial table and
the tidy export alike.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from benchsage.vocabulary import SWEEP_PREFIX


def sweep_levels(meta: Mapping[str, Any], test_names: Sequence[str]) -> dict[str, list[str | None]]:
    """Each "sweep:NAME" dimension, in the sweeps' declared order, with each test's level (None:
    the test does not sweep NAME); {} for an experiment without sweeps."""
    per_test: Mapping[str, Mapping[str, Any]] = meta.get("test_sweeps") or {}
    names = [str(s["name"]) for s in meta.get("sweeps") or ()]
    names += [n for levels in per_test.values() for n in levels if n not in names]
    out: dict[str, list[str | None]] = {}
    for name in dict.fromkeys(names):
        levels = [(per_test.get(test) or {}).get(name) for test in test_names]
        out[SWEEP_PREFIX + name] = [None if level is None else str(level) for level in levels]
    return out
