"""Load and validate an experiment spec (TOML) into typed, frozen objects.

Every error names the file, the key and what was expected, and is a SpecError (exit 2), so a
typo is never silently ignored and a broken spec never starts an experiment.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from benchsage.errors import SpecError
from benchsage.execute.worker import DEFAULT_OUTPUT_LIMIT
from benchsage.store.table import HARNESS_METRICS

DEFAULT_RUNS = 10
DEFAULT_ALPHA = 0.05
DEFAULT_RESET_TIMEOUT = 60.0
GENERATOR_TIMEOUT = 60.0


@dataclass(frozen=True)
class MetricSpec:
    """A value read from a trial's output, beside the harness's own wall/user/sys time and RSS.

    Exactly one source: `regex` (first group of the last match in stdout), `json` (a dotted
    key path into a JSON object printed on stdout), or `file` (a results file written by the
    test, one number per line, OrderSage style; `line` picks which, 0-based).
    """

    name: str
    unit: str = ""
    better: str = "lower"
    regex: str | None = None
    json: str | None = None
    file: str | None = None
    line: int = 0

    @property
    def source(self) -> str:
        return "regex" if self.regex is not None else "json" if self.json is not None else "file"


@dataclass(frozen=True)
class TestSpec:
    """One unit under evaluation: a command and its settings."""

    __test__ = False  # not a pytest test class

    name: str
    command: str
    timeout: float | None
    env: Mapping[str, str]
    cwd: str  # absolute
    metrics: tuple[MetricSpec, ...] = ()

    @property
    def primary_metrics(self) -> tuple[str, ...]:
        """The correction family: declared metrics, or wall_time for a test that declares none."""
        return tuple(m.name for m in self.metrics) or ("wall_time",)


@dataclass(frozen=True)
class ResetSpec:
    command: str
    timeout: float
    cwd: str
    env: Mapping[str, str]


@dataclass(frozen=True)
class WorkerSpec:
    """Where trials run: "local" now; SSH hosts for fleets."""

    name: str
    kind: str = "local"
    host: str | None = None


@dataclass(frozen=True)
class Spec:
    path: str  # absolute path of the spec file
    name: str
    runs: int
    seed: int | None
    alpha: float
    correction: str
    tests: tuple[TestSpec, ...]
    reset: ResetSpec | None
    workers: tuple[WorkerSpec, ...] = (WorkerSpec("local"),)
    output_limit: int = DEFAULT_OUTPUT_LIMIT
    text: str = ""  # the spec file as written
    generator: str | None = None

    @property
    def folder(self) -> str:
        return os.path.dirname(self.path)

    @property
    def digest(self) -> str:
        """sha256 of what determines the experiment: the spec text and the resolved tests."""
        h = hashlib.sha256(self.text.encode())
        for t in self.tests:
            h.update(b"\0" + t.name.encode() + b"\0" + t.command.encode())
        return h.hexdigest()
