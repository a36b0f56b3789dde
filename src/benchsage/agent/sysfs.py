"""The kernel's files (/proc, /sys, cgroup and powercap folders) as the agent reads them: a
file's text, or None when it is missing or unreadable, and CPU lists as the kernel writes them.
"""

from __future__ import annotations

import os

from benchsage.vocabulary import parse_cpu_list

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would grow the agent
    from typing import List, Optional, Tuple


def read_text(path: str) -> Optional[str]:
    """A file's content without surrounding blanks, or None when it cannot be read."""
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def kernel_cpu_list(text: str) -> List[int]:
    """A CPU list as the kernel shows it in sysfs or a cpuset file: [] when the file is empty
    (no CPUs) or reads "(null)" (nohz_full on a kernel built with it but booted without it),
    else its CPUs; a trailing newline is fine. Raises ValueError for anything else."""
    text = text.strip()
    return [] if not text or text == "(null)" else parse_cpu_list(text)


PROC_STAT = "/proc/stat"
BUSY = (0, 1, 2, 5, 6, 7)  # user, nice, system, irq, softirq, steal (guest time is inside user)
PROCESSES_AND_STEAL = (0, 1, 2, 7)  # user, nice, system, steal: busy but for interrupts
CLOCK_TICKS = float(os.sysconf("SC_CLK_TCK"))


def host_cpu_seconds(path: str = PROC_STAT, fields: Tuple[int, ...] = BUSY) -> float:
    """CPU seconds this host's CPUs have spent busy since boot, all CPUs together (steal too:
    time another virtual machine took from this one's CPUs), counting the columns `fields` of
    /proc/stat's 'cpu' line (from 0, user). Raises OSError, or ValueError when the file does not
    start with its 'cpu' line."""
    with open(path, "rb") as f:
        first = f.readline().split()
    if not first or first[0] != b"cpu":
        raise ValueError("%s does not start with the 'cpu' line" % path)
    ticks = [int(v) for v in first[1:]]
    return sum(ticks[i] for i in fields if i < len(ticks)) / CLOCK_TICKS
