"""The agent's wire: one JSON object per line each way, on its stdin and a private stdout.

The agent says hello first (its protocol version, interpreter, host, boot id and what it can
measure), answers one request at a time, and says goodbye before it exits on request. Its stdin
is read raw, so that a trial's wait can watch it: when it closes, the controller is gone.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would add ~0.7 MiB to the agent
    from typing import Any, Dict, Mapping, Optional

PROTOCOL = 1
# The key that opens the agent's first message. A login shell or a transport may print a banner
# (a motd, .bashrc output, module messages) on stdout before the agent starts; the controller
# skips every line until one that carries this key.
MARKER = "benchsage-agent"
MIN_PYTHON = (3, 8)
CHUNK = 1 << 16  # the default pipe capacity: one read empties a full pipe
# Bounds on what a reply carries, so that the controller can cap each line it reads
# (execute/replies.py): a collected results file, and the agent's own words (an error, a note).
COLLECT_LIMIT = 16 << 20
TEXT_LIMIT = 4096


class ControllerGone(Exception):
    """The agent's stdin closed: the controller (or the connection to it) is gone."""


class RequestChannel:
    """The agent's request channel: raw fd 0 with a line buffer, readable during a trial."""

    def __init__(self, fd: int = 0) -> None:
        self.fd = fd
        self.buf = bytearray()
        self.closed = False

    def fill(self) -> None:
        try:
            data = os.read(self.fd, CHUNK)
        except OSError as exc:
            if exc.errno in (errno.EINTR, errno.EAGAIN):
                return
            data = b""
        if not data:
            self.closed = True
        self.buf += data

    def readline(self) -> Optional[bytes]:
        searched = 0  # a long line (a deploy's piece of a file) is searched for its end once, not per read
        while True:
            line = take_line(self.buf, searched)
            if line is not None:
                return line
            if self.closed:
                return None
            searched = len(self.buf)
            self.fill()


def take_line(buf: bytearray, start: int = 0) -> Optional[bytes]:
    """The first whole line of `buf`, newline included, taken out of it; None while there is none
    (`start`: bytes known to hold no newline)."""
    nl = buf.find(b"\n", start)
    if nl < 0:
        return None
    line = bytes(buf[: nl + 1])
    del buf[: nl + 1]
    return line


def send(fd: int, message: Mapping[str, Any]) -> None:
    """Write one message as a line, whole."""
    data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[n:]


def hello(boot_id: Optional[str], measurement: Dict[str, Any]) -> Dict[str, Any]:
    """The first line the agent says, opened by the marker."""
    return {
        MARKER: PROTOCOL,
        "hello": {
            "protocol": PROTOCOL,
            "python": "%d.%d.%d" % sys.version_info[:3],
            "pid": os.getpid(),
            "host": os.uname().nodename,
            "slurm_node": os.environ.get("SLURMD_NODENAME"),
            "boot_id": boot_id,
            "measurement": measurement,
        }
    }


GOODBYE = {"bye": True}  # the last line, on request: only this means the agent finished


def error(text: str) -> Dict[str, Any]:
    """The reply to a request the agent could not carry out."""
    return {"error": text[:TEXT_LIMIT]}


# What a result usually says, left out of it when it says just that (the controller puts it
# back, execute/replies.py read_result): a shorter line is quicker to decode between trials.
RESULT_DEFAULTS = {"timed_out": False, "stdout": "", "stderr": "", "stdout_dropped": 0, "stderr_dropped": 0, "files": {},
                   "error": None, "oom_kills": 0}


def encode_result(result: Dict[str, Any]) -> Dict[str, Any]:
    """A run's result as it travels: output bytes and collected files in base64, and only
    what differs from RESULT_DEFAULTS; its words (error, note) cut at TEXT_LIMIT."""
    out = {}  # type: Dict[str, Any]
    for key, value in result.items():
        if key in ("error", "note") and value:
            value = value[:TEXT_LIMIT]
        elif key in ("stdout", "stderr"):
            value = base64.b64encode(value).decode("ascii")
        elif key == "files":
            value = {k: (None if v is None else base64.b64encode(v).decode("ascii")) for k, v in value.items()}
        if key not in RESULT_DEFAULTS or value != RESULT_DEFAULTS[key] or type(value) is not type(RESULT_DEFAULTS[key]):
            out[key] = value
    return out
