"""CPU lists for pinning trials: parse and print taskset's list syntax, and what the host offers.

A spec's `cpus = "0-3,5"` is parsed here, checked against the CPUs of the host the agent runs
on (online, and allowed to the agent by its own affinity or cpuset), and applied by the agent
with sched_setaffinity before exec. Stdlib only, Python 3.8+: this module travels with the agent.
"""

from __future__ import annotations

import os
from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would grow the agent
    from typing import Iterable, List, Optional, Set

_CPU_DIR = "sys/devices/system/cpu"


class HostCpus(namedtuple("HostCpus", "online allowed")):
    """The host's online CPUs (sorted) and those a trial may be pinned to, both lists of CPU
    numbers: the agent's cpuset where it can be read (a process may widen its own affinity to
    any CPU of its cpuset: with isolcpus= every process starts off the isolated CPUs, yet may
    be pinned to them), else the agent's own affinity."""

    __slots__ = ()


class Isolation(namedtuple("Isolation", "isolated nohz_full")):
    """CPUs the kernel keeps other work off: `isolated` (isolcpus=) and `nohz_full` (no
    scheduler tick while one task runs), both sorted lists, empty when none or unknown."""

    __slots__ = ()


def parse_cpu_list(text: str) -> List[int]:
    """The CPUs of a list in taskset/cpuset syntax, sorted and without repeats.

    Comma-separated items, each "N", "A-B" (inclusive) or "A-B:S" (every S-th CPU from A to B,
    taskset's stride): "0-3,5,8-11:2" is [0, 1, 2, 3, 5, 8, 10]. Blanks around items are
    allowed. Raises ValueError naming the bad item: empty lists or items, negative or
    non-decimal numbers, reversed ranges, zero strides.
    """
    if not text.strip():
        raise ValueError("empty CPU list %r: give CPU numbers like \"0-3,5\"" % text)
    cpus = set()  # type: Set[int]
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise ValueError("bad CPU list %r: an empty item (two commas in a row, or a comma at an end)" % text)
        if item.startswith("-"):
            raise ValueError("bad CPU list %r: %r is negative" % (text, item))
        span, colon, stride_text = item.partition(":")
        low_text, dash, high_text = span.partition("-")
        low = _number(low_text, item, text)
        high = _number(high_text, item, text) if dash else low
        stride = _number(stride_text, item, text) if colon else 1
        if colon and not dash:
            raise ValueError("bad CPU list %r: %r has a stride but no range (write A-B:S)" % (text, item))
        if high < low:
            raise ValueError("bad CPU list %r: %r is a reversed range" % (text, item))
        if stride < 1:
            raise ValueError("bad CPU list %r: %r has stride 0" % (text, item))
        cpus.update(range(low, high + 1, stride))
    return sorted(cpus)


def _number(word: str, item: str, text: str) -> int:
    word = word.strip()
    if not word:
        raise ValueError("bad CPU list %r: %r is missing a number" % (text, item))
    if not (word.isascii() and word.isdigit()):
        where = "" if word == item else " in %r" % item
        raise ValueError("bad CPU list %r: %r%s is not a CPU number" % (text, word, where))
    return int(word)


def format_cpu_list(cpus: Iterable[int]) -> str:
    """The shortest list without strides: [0, 1, 2, 5, 7, 8] -> "0-2,5,7-8"; [] -> ""."""
    ranges = []  # type: List[List[int]]
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(lo) if lo == hi else "%d-%d" % (lo, hi) for lo, hi in ranges)


def host_cpus(root: str = "/") -> HostCpus:
    """Online CPUs from `root`/sys/devices/system/cpu/online (else the cpuN folders, else
    os.cpu_count()) and the CPUs this process may run on (os.sched_getaffinity)."""
    online = None  # type: Optional[List[int]]
    text = _text(os.path.join(root, _CPU_DIR, "online"))
    if text:
        try:
            online = parse_cpu_list(text)
        except ValueError:
            online = None
    if online is None:
        try:
            names = os.listdir(os.path.join(root, _CPU_DIR))
            found = sorted(int(n[3:]) for n in names if n.startswith("cpu") and n[3:].isdigit())
            online = found or None
        except OSError:
            pass
    if online is None:
        online = list(range(os.cpu_count() or 1))
    allowed = _cpuset(root)
    if allowed is None:
        try:
            allowed = sorted(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # not Linux
            allowed = list(online)
    return HostCpus(online, allowed)


def _cpuset(root: str) -> Optional[List[int]]:
    """The effective CPUs of this process's cpuset (cgroup v1 cpuset or v2), None if unknown."""
    text = _text(os.path.join(root, "proc/self/cgroup"))
    if not text:
        return None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        controllers, path = parts[1].split(","), parts[2].lstrip("/")
        if "cpuset" in controllers:
            candidates = [os.path.join(root, "sys/fs/cgroup/cpuset", path, "cpuset.effective_cpus")]
        elif parts[0] == "0" and parts[1] == "":
            candidates = [os.path.join(root, "sys/fs/cgroup", path, "cpuset.cpus.effective"),
                          os.path.join(root, "sys/fs/cgroup/unified", path, "cpuset.cpus.effective")]
        else:
            continue
        for candidate in candidates:
            found = _text(candidate)
            if found:
                try:
                    return parse_cpu_list(found)
                except ValueError:
                    return None
    return None


def isolated(root: str = "/") -> Isolation:
    """The isolated (isolcpus=) and nohz_full CPUs, from `root`/sys/devices/system/cpu."""
    lists = []
    for name in ("isolated", "nohz_full"):
        text = _text(os.path.join(root, _CPU_DIR, name))
        try:
            # nohz_full reads "(null)" on kernels built with it but booted without it
            lists.append(parse_cpu_list(text) if text and text != "(null)" else [])
        except ValueError:
            lists.append([])
    return Isolation(lists[0], lists[1])


def check(cpus: Iterable[int], host: HostCpus) -> Optional[str]:
    """None when the host can run on every CPU of `cpus`, else one line naming those it cannot."""
    wanted = sorted(set(cpus))
    if not wanted:
        return "no CPUs to pin to"
    missing = [c for c in wanted if c not in set(host.online)]
    if missing:
        return "CPU%s %s: not on this host (online: %s)" % (
            "s" if len(missing) > 1 else "", format_cpu_list(missing), format_cpu_list(host.online))
    barred = [c for c in wanted if c not in set(host.allowed)]
    if barred:
        return ("CPU%s %s: online but not allowed to the agent (it may run on %s only: a cpuset or a taskset around it); "
                "choose among those" % ("s" if len(barred) > 1 else "", format_cpu_list(barred), format_cpu_list(host.allowed)))
    return None


def _text(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None
