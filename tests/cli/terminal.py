"""benchsage on a pseudo-terminal, as a user at a terminal runs it (the rich progress bar)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path


def on_a_terminal(*args: str, cwd: Path) -> tuple[int, str]:
    """Run benchsage with its stderr on a pseudo-terminal 200 columns wide, as a user sees it
    (the rich progress bar); (exit status, the frames it drew, escape sequences removed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "benchsage", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    drawn = b""
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                chunk = b""
            if not chunk:
                break
            drawn += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    proc.wait(timeout=60)
    return proc.returncode, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn.decode(errors="replace"))
