"""Worker kinds: how the controller reaches a host's agent. One file per kind.

A transport only says which argv runs a command on its host with stdin and stdout connected,
and how to read its own error messages; the agent protocol is the same over all of them.
Adding a worker kind is adding a file here and a line in KINDS.
"""

from __future__ import annotations

from benchsage.execute.transports.base import Transport
from benchsage.execute.transports.command import CommandTransport
from benchsage.execute.transports.local import LocalTransport
from benchsage.execute.transports.slurm import SlurmTransport
from benchsage.execute.transports.ssh import SshTransport

KINDS: dict[str, type] = {
    "local": LocalTransport,
    "ssh": SshTransport,
    "slurm": SlurmTransport,
    "command": CommandTransport,
}

__all__ = ["KINDS", "Transport", "CommandTransport", "LocalTransport", "SlurmTransport", "SshTransport"]
