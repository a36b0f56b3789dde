"""The machine's sources of noise, one small class per source (after pyperf's `system show`).

Each source reads /proc and /sys under a root directory (default "/", a fake tree in tests)
and returns a Reading: its title, a value, a state (the vocabulary's OK, WARN or UNKNOWN) and,
when the setting can perturb measurements, concrete advice. A source never raises: unreadable
means UNKNOWN.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from benchsage.agent.sysfs import CLOCK_TICKS, PROCESSES_AND_STEAL, host_cpu_seconds, kernel_cpu_list
from benchsage.vocabulary import OK, UNKNOWN, WARN, format_cpu_list

_CPU = "sys/devices/system/cpu"


@dataclass(frozen=True)
class Reading:
    """What one noise source looks like on this machine right now, in the words `benchsage env`
    shows (a snapshot keeps only its value and state)."""

    name: str
    title: str  # the source's, as a person reads it: "CPU scaling governor"
    value: str | None
    state: str  # the vocabulary's OK, WARN or UNKNOWN
    advice: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)  # the raw numbers behind `value`; "reason" when UNKNOWN


class NoiseSource:
    """One source of noise. Subclasses set `name` and `title` and implement `_read`."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""

    def __init__(self, root: str = "/") -> None:
        self.root = root

    def path(self, relative: str) -> str:
        return os.path.join(self.root, relative)

    def text(self, relative: str) -> str | None:
        """A file's stripped content, or None when it is missing or unreadable."""
        try:
            with open(self.path(relative), encoding="utf-8", errors="replace") as f:
                return f.read().strip()
        except OSError:
            return None

    def cpus(self) -> list[int]:
        """Online CPUs: sys/devices/system/cpu/online, else the cpuN directories."""
        online = self.text(f"{_CPU}/online")
        if online:
            try:
                return kernel_cpu_list(online)
            except ValueError:
                pass
        found = [int(m.group(1)) for p in glob.glob(self.path(f"{_CPU}/cpu[0-9]*")) if (m := re.search(r"cpu(\d+)$", p))]
        if not found and self.root == "/":
            return list(range(os.cpu_count() or 1))
        return sorted(found)

    def per_cpu(self, relative: str) -> dict[int, str]:
        """The readable values of sys/devices/system/cpu/cpuN/<relative>, by CPU."""
        values = {}
        for cpu in self.cpus():
            value = self.text(f"{_CPU}/cpu{cpu}/{relative}")
            if value is not None:
                values[cpu] = value
        return values

    def meminfo(self) -> dict[str, int]:
        """/proc/meminfo in KiB."""
        out: dict[str, int] = {}
        for line in (self.text("proc/meminfo") or "").splitlines():
            key, _, rest = line.partition(":")
            fields = rest.split()
            if fields and fields[0].isdigit():
                out[key.strip()] = int(fields[0])
        return out

    def read(self) -> Reading:
        try:
            return self._read()
        except Exception as exc:  # a source must never take `benchsage env` down with it
            return self.unknown(f"cannot read: {exc}")

    def _read(self) -> Reading:
        raise NotImplementedError

    def ok(self, value: str, **data: Any) -> Reading:
        return Reading(self.name, self.title, value, OK, None, data)

    def warn(self, value: str, advice: str, **data: Any) -> Reading:
        return Reading(self.name, self.title, value, WARN, advice, data)

    def unknown(self, reason: str, **data: Any) -> Reading:
        return Reading(self.name, self.title, None, UNKNOWN, None, {"reason": reason, **data})


def _by_value(per_cpu: Mapping[int, str]) -> str:
    """"performance" when every CPU agrees, else "performance (cpu 0-3), powersave (cpu 4-7)"."""
    groups: dict[str, list[int]] = {}
    for cpu, value in per_cpu.items():
        groups.setdefault(value, []).append(cpu)
    if len(groups) == 1:
        return next(iter(groups))
    return ", ".join(f"{value} (cpu {format_cpu_list(cpus)})" for value, cpus in groups.items())


class CPUGovernor(NoiseSource):
    name = "governor"
    title = "CPU scaling governor"

    def _read(self) -> Reading:
        governors = self.per_cpu("cpufreq/scaling_governor")
        if not governors:
            return self.unknown("no cpufreq governor (no frequency scaling driver, or a virtual machine)")
        driver = self.text(f"{_CPU}/cpu{min(governors)}/cpufreq/scaling_driver")
        value = _by_value(governors)
        data = {"per_cpu": governors, "driver": driver}
        if all(g == "performance" for g in governors.values()):
            return self.ok(value, **data)
        return self.warn(
            value,
            "Use the 'performance' governor: the clock then does not depend on how busy the CPU "
            "was just before a trial (sudo cpupower frequency-set -g performance).",
            **data,
        )


class CPUFrequency(NoiseSource):
    name = "cpu_frequency"
    title = "CPU frequency limits"

    def _read(self) -> Reading:
        lo = self.per_cpu("cpufreq/scaling_min_freq")
        hi = self.per_cpu("cpufreq/scaling_max_freq")
        cpus = sorted(set(lo) & set(hi))
        if not cpus:
            return self.unknown("no cpufreq limits (no frequency scaling driver, or a virtual machine)")
        limits = {cpu: (int(lo[cpu]) // 1000, int(hi[cpu]) // 1000) for cpu in cpus}  # MHz
        hw_max = self.per_cpu("cpufreq/cpuinfo_max_freq")
        governors = self.per_cpu("cpufreq/scaling_governor")
        value = _by_value({cpu: f"{a}-{b} MHz" for cpu, (a, b) in limits.items()})
        capped = [cpu for cpu in cpus if cpu in hw_max and int(hw_max[cpu]) // 1000 > limits[cpu][1]]
        if capped:
            value += f" (capped below the hardware maximum on cpu {format_cpu_list(capped)})"
        data = {"per_cpu_mhz": {cpu: list(v) for cpu, v in limits.items()}}
        if len(set(limits.values())) > 1:
            return self.warn(
                value,
                "CPUs have different frequency limits, so a trial's speed depends on where it "
                "lands: set the same limits everywhere (cpupower frequency-set -d/-u) or pin "
                "trials (cpus = \"LIST\" in the spec).",
                **data,
            )
        low, high = limits[cpus[0]]
        if low == high or all(governors.get(cpu) == "performance" for cpu in cpus):
            return self.ok(value, **data)
        return self.warn(
            value,
            f"The clock may move between {low} and {high} MHz during a trial: fix it "
            f"(sudo cpupower frequency-set -d {high}MHz -u {high}MHz) or use the 'performance' governor.",
            **data,
        )


class TurboBoost(NoiseSource):
    name = "turbo"
    title = "Turbo boost"

    def _read(self) -> Reading:
        no_turbo = self.text(f"{_CPU}/intel_pstate/no_turbo")
        if no_turbo in ("0", "1"):
            knob, on = f"/{_CPU}/intel_pstate/no_turbo", no_turbo == "0"
            off_cmd = f"echo 1 | sudo tee {knob}"
        else:
            boost = self.text(f"{_CPU}/cpufreq/boost")
            if boost not in ("0", "1"):
                return self.unknown("no turbo control (intel_pstate/no_turbo, cpufreq/boost) found")
            knob, on = f"/{_CPU}/cpufreq/boost", boost == "1"
            off_cmd = f"echo 0 | sudo tee {knob}"
        if not on:
            return self.ok("off", control=knob)
        return self.warn(
            "on",
            "Disable turbo boost: with it the clock depends on temperature and on how many cores "
            f"are busy, which changes between trials ({off_cmd}).",
            control=knob,
        )


class SMT(NoiseSource):
    name = "smt"
    title = "Simultaneous multithreading"

    def _read(self) -> Reading:
        control = self.text(f"{_CPU}/smt/control")
        active = self.text(f"{_CPU}/smt/active")
        if control in ("notsupported", "notimplemented"):
            return self.ok("not supported", control=control)
        if active == "1":
            return self.warn(
                "on",
                "Sibling hardware threads share a core's caches and execution units: disable SMT "
                f"(echo off | sudo tee /{_CPU}/smt/control) or pin trials to one thread per core.",
                control=control,
            )
        if active == "0" or control in ("off", "forceoff"):
            return self.ok("off", control=control)
        return self.unknown("no smt/active or smt/control in sysfs")


class ASLR(NoiseSource):
    name = "aslr"
    title = "Address space layout randomization"
    _MODES: ClassVar[dict[str, str]] = {"0": "off", "1": "partial (no heap)", "2": "full"}

    def _read(self) -> Reading:
        raw = self.text("proc/sys/kernel/randomize_va_space")
        if raw not in self._MODES:
            return self.unknown("cannot read /proc/sys/kernel/randomize_va_space")
        if raw == "2":
            return self.ok("full", mode=int(raw))
        # Why full randomization (as pyperf advises): a fixed layout can bias every trial the
        # same way (Mytkowicz et al.); randomized, layout becomes noise the statistics see.
        return self.warn(
            self._MODES[raw],
            "Enable full randomization (echo 2 | sudo tee /proc/sys/kernel/randomize_va_space): "
            "one fixed memory layout can bias every trial the same way.",
            mode=int(raw),
        )


class IsolatedCPUs(NoiseSource):
    name = "isolated_cpus"
    title = "Isolated CPUs"

    def _read(self) -> Reading:
        isolated_text = self.text(f"{_CPU}/isolated")
        if isolated_text is None:
            return self.unknown(f"no /{_CPU}/isolated")
        isolated = kernel_cpu_list(isolated_text)
        nohz = kernel_cpu_list(self.text(f"{_CPU}/nohz_full") or "")
        cpus = self.cpus()
        data = {"isolated": isolated, "nohz_full": nohz, "cpus": len(cpus)}
        if isolated:
            value = format_cpu_list(isolated) + (f" (nohz_full {format_cpu_list(nohz)})" if nohz else "")
            return self.ok(value, **data)
        if len(cpus) < 2:
            return self.ok("none (one CPU)", **data)
        last = format_cpu_list(cpus[len(cpus) // 2 :])
        return self.warn(
            "none",
            "Trials share every CPU with the rest of the system: isolate some "
            f"(isolcpus={last} nohz_full={last} rcu_nocbs={last} on the kernel command line) and "
            f"pin trials to them (cpus = \"{last}\" in the spec's [experiment]).",
            **data,
        )


class LoadAverage(NoiseSource):
    """The load average, and once the agent has measured for a while, the CPU time other work
    took. An experiment's own trials keep about one task runnable back to back, so its 1-minute
    load climbs towards 1 on an idle machine within a minute: judged by the load alone, every
    run after the first minute said "other work keeps the machine busy", of the experiment's own
    work. Between two readings at least a second apart the source instead counts the CPU time the
    host spent in processes (/proc/stat; steal included, another virtual machine's work; not
    interrupts, which a trial's own I/O causes) minus the experiment's own (_own_cpu: the agent,
    the trials and resets it waited for, the controller or the ssh session that started it)."""

    name = "load"
    title = "Load average"

    def _read(self) -> Reading:
        raw = self.text("proc/loadavg")
        if not raw:
            return self.unknown("cannot read /proc/loadavg")
        fields = raw.split()
        load1, load5, load15 = (float(x) for x in fields[:3])
        cpus = max(1, len(self.cpus()))
        # Every other runnable task takes CPU time from trials. Above a tenth of the machine
        # (and at least half a CPU, so a lone short-lived command does not trip it) the
        # machine is not idle enough to measure on.
        threshold = max(0.5, 0.1 * cpus)
        data: dict[str, Any] = {"load1": load1, "load5": load5, "load15": load15, "cpus": cpus, "threshold": threshold}
        value = f"{load1:.2f} {load5:.2f} {load15:.2f} ({cpus} CPUs)"
        others = self._others()
        if others is not None:
            share, own, seconds = others
            data.update(others=share, own=own, over=seconds)
            value += f"; other work {share:.2f} CPUs"
            if share <= threshold:
                return self.ok(value, **data)
            return self.warn(
                value,
                f"Other work took {share:.2f} CPUs of {cpus} over the last {seconds:.0f} s (the experiment's own "
                f"processes left out; above {threshold:.2f}): trials will also measure waiting for a CPU; stop it or use an "
                "idle machine.",
                **data,
            )
        if load1 <= threshold:
            return self.ok(value, **data)
        return self.warn(
            value,
            f"Other work keeps the machine busy (1-minute load {load1:.2f} on {cpus} CPUs, above "
            f"{threshold:.2f}): trials will also measure waiting for a CPU; stop it or use an idle machine.",
            **data,
        )

    def _others(self) -> tuple[float, float, float] | None:
        """CPUs' worth of other work and of the experiment's since the last reading of this root
        at least _OTHERS_AFTER seconds ago, and over how many seconds; None before that (the
        load says it then)."""
        busy = self._host_busy()
        if busy is None:
            return None
        now = (time.monotonic(), busy, self._own_cpu())
        last = _cpu_samples.get(self.root)
        if last is None:
            _cpu_samples[self.root] = now
            return None
        seconds = now[0] - last[0]
        if seconds < _OTHERS_AFTER:
            return _cpu_others.get(self.root)  # too short to tell (the clock ticks in 10 ms): as last time
        _cpu_samples[self.root] = now
        own = (now[2] - last[2]) / seconds
        share = max(0.0, (now[1] - last[1]) / seconds - own)
        _cpu_others[self.root] = (share, own, seconds)
        return share, own, seconds

    def _host_busy(self) -> float | None:
        """The host's CPU seconds in processes (and steal), not in interrupts: a trial's network
        and disk interrupts are handled outside its own CPU time, so they would count as other work."""
        try:
            return host_cpu_seconds(self.path("proc/stat"), PROCESSES_AND_STEAL)
        except (OSError, ValueError):
            return None

    def _own_cpu(self) -> float:
        """CPU seconds of the experiment's processes on this host: this one and the trials and
        resets it waited for, and two generations of its parents with theirs. Read in the agent's
        snapshot helper, those are the agent with its trials and the controller (or the ssh
        session); only their growth between two readings counts."""
        t = os.times()
        own = t.user + t.system + t.children_user + t.children_system
        pid = os.getppid()
        for _ in range(2):
            fields = (self.text(f"proc/{pid}/stat") or "").rpartition(")")[2].split()
            if len(fields) < 15:  # after the command's parentheses: state, ppid, ... utime (11) to cstime (14)
                break
            try:
                own += sum(int(x) for x in fields[11:15]) / CLOCK_TICKS
                pid = int(fields[1])
            except ValueError:
                break
            if pid <= 1:
                break
        return own


# A reading of the others' CPU needs this many seconds since the last (CPU time is counted in
# clock ticks: over a second on two CPUs, within 0.02 CPUs).
_OTHERS_AFTER = 1.0
# By root: (monotonic time, host busy seconds, own CPU seconds) of the reading the next is
# measured from, and the last shares of other work and of the experiment's, and their seconds.
_cpu_samples: dict[str, tuple[float, float, float]] = {}
_cpu_others: dict[str, tuple[float, float, float]] = {}


class MemoryPressure(NoiseSource):
    name = "memory"
    title = "Memory available and pressure"

    def _read(self) -> Reading:
        info = self.meminfo()
        if "MemTotal" not in info or "MemAvailable" not in info:
            return self.unknown("cannot read MemTotal/MemAvailable from /proc/meminfo")
        total, available = info["MemTotal"], info["MemAvailable"]
        share = available / total if total else 0.0
        stall = None
        for line in (self.text("proc/pressure/memory") or "").splitlines():
            if line.startswith("some "):
                stall = float(dict(kv.split("=", 1) for kv in line.split()[1:])["avg60"])
        data = {"total_kib": total, "available_kib": available, "some_avg60": stall}
        value = f"{available / 1048576:.1f} of {total / 1048576:.1f} GiB available ({share:.0%})"
        if stall is not None:
            value += f", {stall:.2f}% stalled"
        # Below a tenth available the kernel reclaims page cache that trials rely on; a
        # percent of the last minute stalled means reclaim is already slowing tasks down.
        if share >= 0.10 and (stall is None or stall <= 1.0):
            return self.ok(value, **data)
        return self.warn(
            value,
            "Memory is short: trials may wait for reclaim and lose their page cache; free memory "
            "or run less at the same time.",
            **data,
        )


class Swap(NoiseSource):
    name = "swap"
    title = "Swap in use"

    def _read(self) -> Reading:
        info = self.meminfo()
        if "SwapTotal" not in info:
            return self.unknown("cannot read SwapTotal from /proc/meminfo")
        total, free = info["SwapTotal"], info.get("SwapFree", 0)
        used = max(0, total - free)
        data = {"total_kib": total, "used_kib": used}
        if total == 0:
            return self.ok("no swap", **data)
        value = f"{used / 1024:.0f} MiB used of {total / 1048576:.1f} GiB"
        if used == 0:
            return self.ok(value, **data)
        return self.warn(
            value,
            "Memory is swapped out; a trial that touches it waits for the disk. Free memory, then "
            "bring it back (sudo swapoff -a && sudo swapon -a).",
            **data,
        )


class ThermalThrottle(NoiseSource):
    name = "thermal_throttle"
    title = "Thermal throttling"

    def _read(self) -> Reading:
        core = self.per_cpu("thermal_throttle/core_throttle_count")
        package = self.per_cpu("thermal_throttle/package_throttle_count")
        if not core and not package:
            return self.unknown("no thermal_throttle counters (virtual machine or not an Intel CPU)")
        # The package counter is repeated on every CPU of the package: count it once per value.
        core_events = sum(int(v) for v in core.values())
        package_events = max((int(v) for v in package.values()), default=0)
        data = {"core_events": core_events, "package_events": package_events}
        if core_events == 0 and package_events == 0:
            return self.ok("never since boot", **data)
        return self.warn(
            f"{core_events} core and {package_events} package events since boot",
            "The CPUs have slowed down to cool off: heat can lower the clock in the middle of a "
            "trial. Improve cooling, disable turbo, or leave idle time between runs.",
            **data,
        )


def _enabled_on(enabled: list[int], online: list[int]) -> str:
    """"" when a state is enabled on every CPU, " (disabled)" on none, else on which."""
    if len(enabled) == len(online):
        return ""
    return " (disabled)" if not enabled else f" (enabled on cpu {format_cpu_list(enabled)} only)"


_idle_layouts: dict[tuple[Any, ...], dict[int, list[tuple[str, int]]]] = {}
# The PM QoS CPU latency limit when no process holds a request (PM_QOS_CPU_LATENCY_DEFAULT_VALUE).
_QOS_NONE = 2_000_000_000
# Idle states whose exit latency is at most this many microseconds (POLL, C1, C1E) cost a
# wake-up little and about the same whatever the idle time; deeper ones (C3, C6) do not.
SHALLOW_US = 10


class CPUIdle(NoiseSource):
    name = "cpu_idle"
    title = "CPU idle states (C-states)"

    def _read(self) -> Reading:
        driver = self.text(f"{_CPU}/cpuidle/current_driver")
        governor = self.text(f"{_CPU}/cpuidle/current_governor_ro") or self.text(f"{_CPU}/cpuidle/current_governor")
        states: dict[str, dict[str, Any]] = {}  # name -> exit latency and the CPUs it is enabled on
        online = self.cpus()
        for cpu, layout in self._layout(driver, online).items():
            for k, (name, latency) in enumerate(layout):
                state = states.setdefault(name, {"latency_us": latency, "enabled_cpus": []})
                if self.text(f"{_CPU}/cpu{cpu}/cpuidle/state{k}/disable") != "1":
                    state["enabled_cpus"].append(cpu)
        qos = self._qos_limit()
        poll_ns = self.text("sys/module/haltpoll/parameters/guest_halt_poll_ns")
        data = {"driver": driver, "governor": governor, "qos_latency_us": qos, "guest_halt_poll_ns": poll_ns,
                "states": [{"name": n, "latency_us": v["latency_us"], "enabled_cpus": format_cpu_list(v["enabled_cpus"])}
                           for n, v in states.items()]}
        if driver is None and not states:
            return self.unknown("no cpuidle driver: the kernel's default idle (halt) on every CPU", **data)
        # What the idle governor may choose: enabled states within the PM QoS limit.
        allowed = [(v["latency_us"], n) for n, v in states.items() if v["enabled_cpus"] and (qos is None or v["latency_us"] <= qos)]
        deepest = max(allowed, default=(0, "none"))
        value = ", ".join(f"{n} {v['latency_us']} us" + _enabled_on(v["enabled_cpus"], online) for n, v in states.items())
        value = f"{driver or 'no driver'}" + (f" / {governor}" if governor else "") + (f": {value}" if value else "")
        if qos is not None:
            value += f"; PM QoS limit {qos} us"
        data.update(deepest=deepest[1], deepest_latency_us=deepest[0])
        if driver == "haltpoll" and poll_ns == "0" and qos != 0:
            return self.warn(
                value + "; no halt polling",
                "An idle virtual CPU halts at once (guest_halt_poll_ns is 0) and waking it goes through "
                "the hypervisor: every wake-up of a trial, or of the harness between trials, pays for it. "
                "Hold a PM QoS latency limit of 0 while measuring and idle CPUs poll instead: cpu_latency = 0 "
                "under [experiment] (each host's agent holds it while it runs).",
                **data,
            )
        if deepest[0] <= SHALLOW_US:
            return self.ok(value, **data)
        return self.warn(
            value,
            f"Waking a CPU from {deepest[1]} takes up to {deepest[0]} us, and how deep it sleeps depends on how "
            "long it was idle: a trial's wake-ups vary with what ran before it. Keep the CPUs in shallow "
            f"states while measuring: cpu_latency = {SHALLOW_US} under [experiment] (each host's agent holds "
            f"that PM QoS limit while it runs), or sudo cpupower idle-set -D {SHALLOW_US + 1} (cpupower "
            "idle-set -E enables them again).",
            **data,
        )

    def _layout(self, driver: str | None, online: list[int]) -> dict[int, list[tuple[str, int]]]:
        """Each online CPU's idle states (name, exit latency in us), read once per driver: only
        which are disabled changes while the machine runs (read every time)."""
        key = (self.root, driver, tuple(online))
        layout = _idle_layouts.get(key)
        if layout is None:
            layout = {}
            for cpu in key[2]:
                states = layout[cpu] = []
                while (name := self.text(f"{_CPU}/cpu{cpu}/cpuidle/state{len(states)}/name")) is not None:
                    states.append((name, int(self.text(f"{_CPU}/cpu{cpu}/cpuidle/state{len(states)}/latency") or 0)))
            _idle_layouts[key] = layout
        return layout

    def _qos_limit(self) -> int | None:
        """The PM QoS CPU latency limit (us) a process holds (/dev/cpu_dma_latency, readable by
        root), or None when none does or it cannot be read."""
        try:
            with open(self.path("dev/cpu_dma_latency"), "rb") as f:
                raw = f.read(4)
        except OSError:
            return None
        if len(raw) != 4:
            return None
        limit = int.from_bytes(raw, "little", signed=True)
        return None if limit >= _QOS_NONE else limit


_detect_virt_cache: dict[str, str | None] = {}
_CONTAINERS = frozenset(
    {"docker", "podman", "lxc", "lxc-libvirt", "systemd-nspawn", "openvz", "rkt", "wsl", "proot", "pouch", "container-other"}
)


def _systemd_detect_virt() -> str | None:
    """systemd-detect-virt's answer, run once per process (it cannot change while we run)."""
    if "answer" not in _detect_virt_cache:
        answer = None
        try:
            proc = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True, timeout=5)
            answer = proc.stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            pass
        _detect_virt_cache["answer"] = answer
    return _detect_virt_cache["answer"]


class Virtualization(NoiseSource):
    name = "virtualization"
    title = "Virtualization"

    def _read(self) -> Reading:
        detected = _systemd_detect_virt() if self.root == "/" else None
        cpuinfo = self.text("proc/cpuinfo") or ""
        hypervisor = bool(re.search(r"^flags\s*:.*\bhypervisor\b", cpuinfo, re.MULTILINE))
        product = self.text("sys/class/dmi/id/product_name")
        data = {"systemd_detect_virt": detected, "hypervisor_flag": hypervisor, "product_name": product}
        kinds = []
        if detected and detected != "none":
            kinds.append(detected)
        # systemd-detect-virt names the innermost layer: a container may also run in a VM.
        if hypervisor and (detected is None or detected in _CONTAINERS):
            kinds.append("virtual machine (hypervisor flag)")
        elif not kinds and product and re.search(r"virtual|kvm|qemu|vmware|hvm domu|bochs", product, re.IGNORECASE):
            kinds.append(f"virtual machine ({product})")
        if not kinds:
            if detected is None and not cpuinfo:
                return self.unknown("neither systemd-detect-virt nor /proc/cpuinfo is available", **data)
            return self.ok("none (bare metal)", **data)
        return self.warn(
            ", ".join(kinds),
            "Virtual machines and containers share their host with others (steal time, noisy "
            "neighbours, frequency scaling you cannot see): compare only runs on the same host, "
            "and prefer bare metal for small effects.",
            **data,
        )


class CPUModel(NoiseSource):
    name = "cpu"
    title = "CPU model and count"

    def _read(self) -> Reading:
        cpuinfo = self.text("proc/cpuinfo") or ""
        model = None
        for key in ("model name", "Hardware", "cpu model", "Processor", "cpu", "uarch"):
            m = re.search(rf"^{re.escape(key)}\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
            if m:
                model = m.group(1).strip()
                break
        cpus = self.cpus()
        cores = {
            (self.text(f"{_CPU}/cpu{c}/topology/physical_package_id"), self.text(f"{_CPU}/cpu{c}/topology/core_id"))
            for c in cpus
        }
        physical = len(cores) if cores and all(None not in pair for pair in cores) else None
        data = {"model": model, "cpus": len(cpus), "cores": physical, "online": format_cpu_list(cpus)}
        if model is None and not cpus:
            return self.unknown("cannot read /proc/cpuinfo", **data)
        value = f"{model or 'unknown model'} x {len(cpus)}"
        if physical is not None and physical != len(cpus):
            value += f" ({physical} cores)"
        return self.ok(value, **data)


class Kernel(NoiseSource):
    name = "kernel"
    title = "Kernel"

    def _read(self) -> Reading:
        release = self.text("proc/sys/kernel/osrelease")
        version = self.text("proc/sys/kernel/version")
        if release is None and self.root == "/":
            uname = os.uname()
            release, version = uname.release, uname.version
        if release is None:
            return self.unknown("cannot read /proc/sys/kernel/osrelease")
        return self.ok(release, release=release, version=version)


SOURCES: tuple[type[NoiseSource], ...] = (
    CPUModel,
    Kernel,
    CPUGovernor,
    CPUFrequency,
    TurboBoost,
    SMT,
    ASLR,
    IsolatedCPUs,
    LoadAverage,
    MemoryPressure,
    Swap,
    ThermalThrottle,
    CPUIdle,
    Virtualization,
)


def collect_noise(root: str = "/") -> list[Reading]:
    """Read every source, in a fixed order (the order `benchsage env` prints)."""
    return [source(root).read() for source in SOURCES]
