"""The local worker: trials run on this machine, in processes the controller spawns itself.

A thin adapter from the Worker protocol to capture.run_process and snapshot.collect; an SSH
worker implements the same three methods for a fleet.
"""

from __future__ import annotations

from typing import Any, Sequence

from benchsage.execute.capture import run_process
from benchsage.execute.snapshot import collect
from benchsage.execute.worker import ProcessRequest, ProcessResult


class LocalWorker:
    """Runs trials and resets on this machine (the Worker protocol)."""

    kind = "local"

    def __init__(self, name: str = "local") -> None:
        self.name = name

    def run(self, request: ProcessRequest) -> ProcessResult:
        """Run one command and block until it ends or times out; never raises for the command."""
        return run_process(request)

    def snapshot(self, files: Sequence[str], cwd: str) -> dict[str, Any]:
        """This machine's environment snapshot, the sha256 of `files`, and this worker's name."""
        snap = collect(files, cwd)
        snap["worker"] = self.name
        return snap

    def close(self) -> None:
        """Nothing to release: no trial outlives run(), and no connection is kept."""

    def __enter__(self) -> LocalWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
