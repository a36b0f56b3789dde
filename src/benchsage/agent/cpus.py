"""The host's CPUs for pinning trials: which are online, allowed to the agent, and isolated.

A spec's `cpus = "0-3,5"` (parsed by vocabulary.parse_cpu_list) is checked here against the
CPUs of the host the agent runs on (online, and allowed to the agent by its own affinity or
cpuset), and applied by the agent with sched_setaffinity before exec.
"""

from __future__ import annotations

import os
from collections import namedtuple

from benchsage.agent.sysfs import kernel_cpu_list, read_text
from benchsage.vocabulary import format_cpu_list, parse_cpu_list

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would grow the agent
    from typing import Iterable, List, Optional

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


def host_cpus(root: str = "/") -> HostCpus:
    """Online CPUs from `root`/sys/devices/system/cpu/online (else the cpuN folders, else
    os.cpu_count()) and the CPUs this process may run on (os.sched_getaffinity)."""
    online = None  # type: Optional[List[int]]
    text = read_text(os.path.join(root, _CPU_DIR, "online"))
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
    text = read_text(os.path.join(root, "proc/self/cgroup"))
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
            found = read_text(candidate)
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
        text = read_text(os.path.join(root, _CPU_DIR, name))
        try:
            lists.append(kernel_cpu_list(text or ""))
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


# The PM QoS CPU latency device: a limit written to it holds while the file stays open.
CPU_LATENCY_DEVICE = "/dev/cpu_dma_latency"
CPU_LATENCY_ENV = "BENCHSAGE_CPU_LATENCY_DEVICE"  # another path (tests: a host without the device)
_latency_fd = -1


def hold_cpu_latency(limit_us: int) -> None:
    """Hold a PM QoS CPU latency limit of `limit_us` microseconds until the agent exits (its
    descriptor closes): the idle governors keep every CPU in states that wake within the limit
    (0: idle CPUs poll), so wake-ups cost little and the same whatever ran before, as cyclictest
    and tuned's latency-performance profile arrange. The descriptor is close-on-exec: a trial
    or its leftovers never keep the limit alive. Raises OSError (root only, as a rule)."""
    global _latency_fd
    if _latency_fd < 0:
        _latency_fd = os.open(os.environ.get(CPU_LATENCY_ENV) or CPU_LATENCY_DEVICE, os.O_WRONLY | os.O_CLOEXEC)
    os.write(_latency_fd, int(limit_us).to_bytes(4, "little", signed=True))
