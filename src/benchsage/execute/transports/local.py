"""The local worker's transport: the agent is a plain child process of the controller.

Trials are spawned by the small agent, not by the controller, so they neither inherit the
controller's memory (max_rss) nor share its interpreter's state.
"""

from __future__ import annotations

from benchsage.execute.transports.base import Failure, python_failure


class LocalTransport:
    kind = "local"

    def __init__(self, python: str | None = None) -> None:
        self.python = python

    def argv(self, command: list[str]) -> list[str]:
        return list(command)

    def describe(self) -> str:
        return "this machine"

    def explain(self, exit_status: int | None, stderr: str) -> Failure | None:
        return python_failure(self.python or "python3", exit_status, stderr)
