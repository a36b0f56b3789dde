"""The local worker: trials run on this machine, spawned by an agent in a child process.

The agent is small, so a trial's max_rss is its own, not the ~40 MiB of the controller that a
process spawned by the controller would inherit at exec.
"""

from __future__ import annotations

import sys
from typing import Sequence

from benchsage.execute.agentworker import AgentWorker
from benchsage.execute.transports.local import LocalTransport


class LocalWorker(AgentWorker):
    """The Worker protocol on this machine; connects on first use."""

    def __init__(
        self,
        name: str = "local",
        *,
        python: Sequence[str] | None = None,
        boot_id_command: str | None = None,
        log: str | None = None,
    ) -> None:
        words = list(python) if python else [sys.executable]
        super().__init__(
            name,
            LocalTransport(" ".join(words)),
            python=words,
            boot_id_command=boot_id_command,
            reconnect_timeout=10.0,
            log=log,
        )
