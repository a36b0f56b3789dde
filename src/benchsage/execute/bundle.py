"""What the controller sends a transport: the bootstrap command and the agent's module bundle.

The bundle is every module of the agent's folder (benchsage/agent/) and vocabulary.py, which
the bootstrap serves under their usual names on a host where benchsage is not installed; a new
file in the agent's folder travels without being listed here. The interpreter runs with -S:
the agent needs the standard library only, and skipping site-packages keeps it small.
"""

from __future__ import annotations

import base64
import json
import os
from functools import lru_cache

from benchsage import agent, vocabulary
from benchsage.agent.bootstrap import BOOTSTRAP

PACKAGES = ("benchsage", "benchsage.agent")
MAIN = "benchsage.agent.serve"


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


def bundle_modules() -> dict[str, str]:
    """The source of each module the agent may import, by module name."""
    folder = os.path.dirname(os.path.abspath(agent.__file__))
    modules = {}
    for filename in sorted(os.listdir(folder)):
        stem, ext = os.path.splitext(filename)
        if ext == ".py":
            modules[agent.__name__ if stem == "__init__" else f"{agent.__name__}.{stem}"] = _read(os.path.join(folder, filename))
    modules[vocabulary.__name__] = _read(vocabulary.__file__)
    return modules


@lru_cache(maxsize=1)
def bundle_bytes() -> bytes:
    """The length line and the JSON bundle, as the bootstrap reads them from stdin."""
    payload = json.dumps({"modules": bundle_modules(), "packages": list(PACKAGES), "main": MAIN}).encode()
    return b"%d\n" % len(payload) + payload


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()
