"""benchsage: performance experiments that survive the ordering trap.

Runs every test in a fixed order and in fresh random orders, interleaved, with a reset before
every run and every trial journaled, then says with statistics whether the order mattered.

Notebook API: `benchsage.load(source)` -> DataFrame of trials; `benchsage.analyze(source)` ->
Result (`.tests`, `.diagnostics`, `.report(path)`).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "analyze", "load"]


def load(*args: Any, **kwargs: Any) -> Any:
    """The trials of an experiment directory or data file(s) as a pandas DataFrame."""
    from benchsage.api import load as _load

    return _load(*args, **kwargs)


def __getattr__(name: str) -> Any:
    # `benchsage.analyze` is the analyze subpackage, which is callable (see analyze/__init__.py).
    if name == "analyze":
        import benchsage.analyze as module

        return module
    raise AttributeError(f"module 'benchsage' has no attribute {name!r}")
