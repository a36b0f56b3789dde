"""Energy of the CPU packages during a trial, from the RAPL counters of Linux's powercap sysfs.

Each package domain (/sys/class/powercap/intel-rapl:N whose name is package-N; AMD processors
since Zen have the same zones, from the same driver) has a cumulative counter, energy_uj, that wraps around at
max_energy_range_uj. The agent reads all package counters just before and just after a trial;
joules() turns two readings into the energy in between. Stdlib only, Python 3.8+: this module
travels with the agent.
"""

from __future__ import annotations

import os
import re
from collections import namedtuple

from benchsage.agent.sysfs import read_text

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would grow the agent
    from typing import Dict, List, Optional, Tuple

POWERCAP = "/sys/class/powercap"
# Top-level zones only ("intel-rapl:0", not the sub-zones "intel-rapl:0:0" for core, uncore or
# dram, which the package already includes).
_ZONE = re.compile(r"^([a-z][a-z0-9_-]*):(\d+)$")
# One control type only, so that no package is counted twice: the MSR interface first; the
# MMIO interface of some Intel platforms shows the same packages again.
_PREFERRED = ("intel-rapl", "intel-rapl-mmio")


class EnergyError(Exception):
    """The counters cannot be read (any more): one line, for the agent to report once."""


class Domain(namedtuple("Domain", "zone name energy_file max_range_uj")):
    """A package domain: its zone folder name ("intel-rapl:0"), its name ("package-0"), the
    path of its energy_uj, and the counter's range in microjoules."""

    __slots__ = ()


class EnergySupport(namedtuple("EnergySupport", "available reason domains")):
    """Whether package energy can be read here: `available`, one line `reason` (which domains,
    or why not and what would enable it), and the package `domains`."""

    __slots__ = ()


class Rapl:
    """The package domains under `root` (a folder shaped like /sys/class/powercap)."""

    def __init__(self, root: str = POWERCAP) -> None:
        self.root = root
        self._support = None  # type: Optional[EnergySupport]

    @property
    def domains(self) -> List[Domain]:
        return list(self.probe().domains)

    def probe(self) -> EnergySupport:
        """Find the package domains and try reading each counter once. Never raises; cached."""
        if self._support is None:
            self._support = self._probe()
        return self._support

    def _probe(self) -> EnergySupport:
        try:
            names = sorted(os.listdir(self.root))
        except FileNotFoundError:
            return EnergySupport(False, "no %s: the kernel has no powercap (RAPL needs an x86 machine with the intel_rapl_msr "
                                        "module; virtual machines usually have none)" % self.root, ())
        except OSError as exc:
            return EnergySupport(False, "cannot list %s: %s" % (self.root, exc.strerror), ())
        by_type = {}  # type: Dict[str, List[Tuple[int, str]]]
        for name in names:
            match = _ZONE.match(name)
            if match:
                by_type.setdefault(match.group(1), []).append((int(match.group(2)), name))
        if not by_type:
            return EnergySupport(False, "no RAPL zones in %s (modprobe intel_rapl_msr, on x86)" % self.root, ())
        order = [t for t in _PREFERRED if t in by_type] + sorted(t for t in by_type if t not in _PREFERRED)
        problems = []  # type: List[str]
        for control_type in order:
            domains = []  # type: List[Domain]
            for _, zone in sorted(by_type[control_type]):
                folder = os.path.join(self.root, zone)
                label = read_text(os.path.join(folder, "name"))
                if label is None or not label.startswith("package"):
                    continue  # psys (the platform) or another domain that is not a package
                energy = os.path.join(folder, "energy_uj")
                try:
                    _read_uj(energy)
                    max_range = _read_uj(os.path.join(folder, "max_energy_range_uj"))
                except PermissionError:
                    problems.append("%s is readable by root only (Linux 5.10+, since CVE-2020-8694): run the agent as root, "
                                    "or let its user read it (chmod a+r %s/*/energy_uj, e.g. by a udev rule)" % (energy, self.root))
                    break
                except (OSError, ValueError) as exc:
                    problems.append("cannot read %s: %s" % (energy, getattr(exc, "strerror", None) or exc))
                    break
                if max_range <= 0:
                    problems.append("%s has no counter range (max_energy_range_uj is %d)" % (folder, max_range))
                    break
                domains.append(Domain(zone, label, energy, max_range))
            else:
                if domains:
                    listed = ", ".join("%s (%s)" % (d.name, d.zone) for d in domains)
                    return EnergySupport(True, "RAPL package energy: " + listed, tuple(domains))
                continue
            break  # a package domain could not be read: say why, do not fall back to another interface
        if problems:
            return EnergySupport(False, problems[0], ())
        return EnergySupport(False, "no package domain among the RAPL zones in %s" % self.root, ())

    def read(self) -> Tuple[int, ...]:
        """Each package's energy_uj now, in the order of `domains`. Raises EnergyError."""
        support = self.probe()
        if not support.available:
            raise EnergyError(support.reason)
        try:
            return tuple(_read_uj(d.energy_file) for d in support.domains)
        except (OSError, ValueError) as exc:
            raise EnergyError("cannot read RAPL energy: %s" % (getattr(exc, "strerror", None) or exc)) from None

    def joules(self, before: Tuple[int, ...], after: Tuple[int, ...]) -> float:
        """Energy of all packages between two readings, in joules.

        A counter that went down wrapped around once: its delta is after - before +
        max_energy_range_uj. More than one wrap between the readings cannot be seen: at
        typical ranges (~262 kJ) that takes over 40 minutes at 100 W per package, so trials
        longer than range / power under-count.
        """
        domains = self.probe().domains
        if len(before) != len(domains) or len(after) != len(domains):
            raise ValueError("readings have %d and %d counters, for %d package domains" % (len(before), len(after), len(domains)))
        total = 0
        for domain, b, a in zip(domains, before, after):
            delta = a - b
            if delta < 0:
                delta += domain.max_range_uj
            total += delta
        return total / 1e6


def _read_uj(path: str) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return int(os.read(fd, 64))
    finally:
        os.close(fd)
