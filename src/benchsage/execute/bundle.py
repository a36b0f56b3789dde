"""What the controller sends a transport: the bootstrap command and the agent's module bundle.

The bundle is the agent and the stdlib-only modules it imports when it takes a snapshot (noise
readings and the snapshot itself), with stub packages so that they import each other by their
usual names on a host where benchsage is not installed. The interpreter runs with -S: the
agent needs the standard library only, and skipping site-packages keeps it small.
"""

from __future__ import annotations

import base64
import json
import os
from functools import lru_cache

import benchsage
from benchsage.execute.agent import BOOTSTRAP

_HERE = os.path.dirname(os.path.abspath(__file__))
# In dependency order: each module's imports are installed before it runs.
_MODULES = ("cpus", "noise", "snapshot", "cgroups", "energy", "agent")


def agent_argv(python: list[str]) -> list[str]:
    """The command that starts the agent on a host, with `python` (argv words) running it.

    The bootstrap travels base64-encoded on one line, so that any login shell (sh, bash, csh,
    fish) passes it through a remote command line unchanged.
    """
    return [*python, "-S", "-u", "-c", _bootstrap_line()]


@lru_cache(maxsize=1)
def _bootstrap_line() -> str:
    encoded = base64.b64encode(BOOTSTRAP.encode()).decode("ascii")
    return f'import base64;exec(base64.b64decode("{encoded}"))'


@lru_cache(maxsize=1)
def bundle_bytes() -> bytes:
    """The length line and the JSON bundle, as the bootstrap reads them from stdin."""
    modules = {}
    for name in _MODULES:
        with open(os.path.join(_HERE, name + ".py"), encoding="utf-8") as f:
            modules[f"benchsage.execute.{name}"] = f.read()
    payload = json.dumps(
        {
            "modules": modules,
            "packages": ["benchsage", "benchsage.execute"],
            "main": "benchsage.execute.agent",
            "version": benchsage.__version__,
        }
    ).encode()
    return b"%d\n" % len(payload) + payload
