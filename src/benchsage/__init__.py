"""benchsage: performance experiments that survive the ordering trap.

Runs every test in a fixed order and in fresh random orders, interleaved, with a reset before
every run and every trial journaled, then says with statistics whether the order mattered.

Notebook API: `benchsage.load(source)` -> DataFrame of trials; `benchsage.analyze(source)` ->
Result (`.tests`, `.diagnostics`, `.report(path)`); both are benchsage.api's.
"""

from __future__ import annotations

import types
from typing import Any

import benchsage.analyze
from benchsage.vocabulary import VERSION as __version__

__all__ = ["__version__", "analyze", "load"]


def load(*args: Any, **kwargs: Any) -> Any:
    """The trials of an experiment directory or data file(s) as a pandas DataFrame."""
    from benchsage.api import load as _load

    return _load(*args, **kwargs)


class _CallableModule(types.ModuleType):
    """`benchsage.analyze` is the analyze subpackage, and calling it is benchsage.api.analyze,
    so that `benchsage.analyze(source)` works while `benchsage.analyze.order` stays importable."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from benchsage.api import analyze as _analyze

        return _analyze(*args, **kwargs)


benchsage.analyze.__class__ = _CallableModule
