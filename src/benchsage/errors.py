"""The exceptions benchsage raises on purpose, and the exit status each maps to.

cli.py turns any of these into one line on stderr and its exit status; anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_EFFECT = 1
EXIT_BAD_INPUT = 2
EXIT_UNFINISHED = 3
EXIT_TESTS_FAILED = 4  # a test had no successful trial, or failed in more than half of them


class BenchsageError(Exception):
    """Base class: a message for the user and an exit status."""

    exit_status = EXIT_BAD_INPUT


class SpecError(BenchsageError):
    """The experiment spec is missing, malformed or invalid."""


class DataError(BenchsageError):
    """A data file or experiment directory cannot be read as trials."""


class UsageError(BenchsageError):
    """Arguments that make no sense together (a journal directory of another experiment...)."""


class WorkerError(BenchsageError):
    """A worker cannot run trials (cannot start a process, host unreachable)."""

    exit_status = EXIT_UNFINISHED


class ExperimentError(BenchsageError):
    """The experiment could not finish (a reset failed, it was interrupted); what was measured is kept."""

    exit_status = EXIT_UNFINISHED


class WorkerSetupError(BenchsageError):
    """A worker cannot be used as configured (unknown host key, no usable python, login refused):
    nothing ran on it; fix the configuration and start again."""


class WorkerLost(WorkerError):
    """The connection to a worker's agent ended without its goodbye (host down, network cut)."""


class BadReply(WorkerError):
    """A worker's agent sent a reply the controller cannot accept (a wrong type, a missing key,
    a line past its cap): the host is broken or hostile; that worker is lost, never retried."""


class TestsFailed(BenchsageError):
    """A test failed in every one of its first trials and the experiment stopped; what was
    measured is kept (`--ignore-failures` carries on instead)."""

    __test__ = False  # not a pytest test class
    exit_status = EXIT_TESTS_FAILED
