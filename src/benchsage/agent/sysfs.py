"""The kernel's files (/proc, /sys, cgroup and powercap folders) as the agent reads them: a
file's text, or None when it is missing or unreadable, and CPU lists as the kernel writes them.
"""

from __future__ import annotations

from benchsage.vocabulary import parse_cpu_list

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would grow the agent
    from typing import List, Optional


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
