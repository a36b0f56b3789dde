"""Apply the statistics to a trial table and produce typed verdicts.

The package is also callable, so that `benchsage.analyze(source, ...)` is the notebook API
(see benchsage.api.analyze) while `benchsage.analyze.order` and friends stay importable.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from benchsage.api import analyze

        return analyze(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
