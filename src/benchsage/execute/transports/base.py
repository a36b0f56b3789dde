"""The transport interface, and the reading of failures every transport shares."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Failure:
    """Why an agent could not be started or was lost, from the transport's own words.

    `setup` failures are configuration (unknown host key, no usable python, login refused):
    retrying will not help, nothing runs until the user fixes it. Others may be transient.
    """

    reason: str
    setup: bool = False


class Transport(Protocol):
    kind: str

    def argv(self, command: list[str]) -> list[str]:
        """The argv that runs `command` on the host, with stdin and stdout connected."""
        ...

    def describe(self) -> str:
        """Where it goes, for messages: "ssh node1", "srun on c042", "this machine"."""
        ...

    def explain(self, exit_status: int | None, stderr: str) -> Failure | None:
        """A clear reason for a start or a connection that failed, or None to use the default."""
        ...


_NOT_FOUND = re.compile(r"(command not found|No such file or directory|not found|can't open|cannot execute)", re.I)


def python_failure(python: str, exit_status: int | None, stderr: str) -> Failure | None:
    """The host could not run the agent's interpreter (exit 126/127 from the remote shell)."""
    if exit_status in (126, 127) or (stderr and _NOT_FOUND.search(stderr) and python.split()[0] in stderr):
        return Failure(
            f"cannot run {python!r} there ({last_line(stderr) or f'exit status {exit_status}'}); "
            f"set `python` in its [[worker]] to a Python 3.8+ interpreter on that host",
            setup=True,
        )
    return None


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
