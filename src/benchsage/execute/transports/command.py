"""Any transport a user names: an argv prefix that runs a command on the host with stdin and
stdout connected, such as `docker exec -i C` or `kubectl exec -i POD --`."""

from __future__ import annotations

from benchsage.execute.transports.base import Failure, python_failure


class CommandTransport:
    kind = "command"

    def __init__(self, transport: list[str], python: str = "python3") -> None:
        self.transport = list(transport)
        self.python = python

    def argv(self, command: list[str]) -> list[str]:
        return [*self.transport, *command]

    def describe(self) -> str:
        return " ".join(self.transport)

    def explain(self, exit_status: int | None, stderr: str) -> Failure | None:
        return python_failure(self.python, exit_status, stderr)
