"""How trials are measured on this machine, for `benchsage env`: what the local agent says in its
hello (cgroups, leftovers, energy, CPUs), one small class per aspect, each a Reading with its
title and advice, and what follows for every trial here (the metrics it records, what becomes of
the processes it leaves running).

The readings come from a real agent started as an experiment starts it, so `env` reports
exactly what a trial would get, including the agent's own affinity and its cgroup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Sequence

from benchsage.agent.noise import Reading
from benchsage.errors import BenchsageError
from benchsage.execute.local import LocalWorker
from benchsage.vocabulary import HARNESS_METRICS, OFF, OK, OPTIONAL_HARNESS_METRICS, UNKNOWN, WARN, format_cpu_list

_LEFTOVERS = {
    "cgroup": "killed and counted (the trial's cgroup)",
    "subreaper": "killed and counted (the agent adopts them as child subreaper)",
    "process group": "only the trial's process group is killed",
}


@dataclass(frozen=True)
class MeasurementDescription:
    """How trials are measured on a host, as its agent says it: the agent's own words, a
    reading of each aspect, and what follows for every trial there."""

    agent: Mapping[str, Any] | None  # the `measurement` of the agent's hello; None when it is not known
    aspects: tuple[Reading, ...]  # one per aspect; without the agent's words, one UNKNOWN reading saying why
    metrics: tuple[str, ...] = ()  # the harness metrics each trial records there
    missing: tuple[str, ...] = ()  # the optional harness metrics it does not (the aspects say why)
    leftovers: str | None = None  # what becomes of the processes a trial leaves running


def local_measurement() -> tuple[dict[str, Any] | None, str | None]:
    """(the `measurement` of a local agent's hello, None) or (None, why it is not known).

    Starts the agent the way `benchsage run` does and says goodbye at once."""
    worker = LocalWorker()
    try:
        hello = worker.connect()
    except BenchsageError as exc:
        return None, f"the local agent did not start: {exc}"
    finally:
        worker.close()
    measurement = hello.get("measurement")
    if not isinstance(measurement, Mapping):
        return None, "the local agent did not say how it measures (its hello has no measurement)"
    return dict(measurement), None


def describe_measurement(measurement: Mapping[str, Any] | None, error: str | None = None) -> MeasurementDescription:
    """Every aspect of an agent's `measurement` read, and what follows for a trial; without a
    `measurement`, one unknown reading of the agent giving `error` as the reason."""
    if measurement is None:
        reason = error or "the local agent's measurement is not known"
        return MeasurementDescription(None, (Reading("agent", "Local agent", None, UNKNOWN, None, {"reason": reason}),))
    aspects = tuple(aspect(measurement).read() for aspect in ASPECTS)
    given = {metric for aspect, r in zip(ASPECTS, aspects) if r.state == OK for metric in aspect.metrics}
    return MeasurementDescription(
        agent=measurement,
        aspects=aspects,
        metrics=HARNESS_METRICS + tuple(m for m in OPTIONAL_HARNESS_METRICS if m in given),
        missing=tuple(m for m in OPTIONAL_HARNESS_METRICS if m not in given),
        leftovers=next(r.value for r in aspects if r.name == Leftovers.name),
    )


class MeasurementAspect:
    """One aspect of how trials are measured. Subclasses set `name` and `title` and implement
    `read`; `metrics`: the optional harness metrics a trial records when the aspect reads OK."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    metrics: ClassVar[tuple[str, ...]] = ()

    def __init__(self, measurement: Mapping[str, Any]) -> None:
        self.m = measurement

    def read(self) -> Reading:
        raise NotImplementedError

    def reading(self, value: str, state: str, advice: str | None = None, **data: Any) -> Reading:
        return Reading(self.name, self.title, value, state, advice, data)


class TrialCgroups(MeasurementAspect):
    name = "cgroups"
    title = "Trial cgroups (peak_memory, cpu_time)"
    metrics = ("peak_memory", "cpu_time")

    def read(self) -> Reading:
        method, reason = self.m.get("cgroup"), str(self.m.get("cgroup_reason") or "")
        if method:
            return self.reading(str(method), OK, None, method=method, reason=reason)
        return self.reading(
            "none", OFF, f"peak_memory and cpu_time are not recorded: {reason or 'no reason given'}", method=None, reason=reason
        )


class Leftovers(MeasurementAspect):
    name = "leftovers"
    title = "Leftover processes"

    def read(self) -> Reading:
        method = str(self.m.get("leftovers") or "")
        value = _LEFTOVERS.get(method, method or "unknown")
        if method in ("cgroup", "subreaper"):
            return self.reading(value, OK, None, method=method)
        return self.reading(
            value, WARN,
            "a process that leaves it (setsid, a daemon) outlives its trial unseen and may perturb the next one: "
            "give the agent cgroups (see above), or run it where prctl(PR_SET_CHILD_SUBREAPER) works (Linux)",
            method=method or None,
        )


class Energy(MeasurementAspect):
    name = "energy"
    title = "Package energy (RAPL)"
    metrics = ("energy",)

    def read(self) -> Reading:
        reason = str(self.m.get("energy_reason") or "")
        if self.m.get("energy"):
            return self.reading("measured", OK, None, reason=reason)
        return self.reading("not measured", OFF, f"energy is not recorded: {reason or 'no reason given'}", reason=reason)


class PinningCpus(MeasurementAspect):
    name = "cpus"
    title = "CPUs for trials"

    def read(self) -> Reading:
        online, allowed = _cpus(self.m.get("cpus_online")), _cpus(self.m.get("cpus_allowed"))
        isolated, nohz = _cpus(self.m.get("cpus_isolated")), _cpus(self.m.get("cpus_nohz_full"))
        value = "; ".join(
            f"{label} {format_cpu_list(cpus) or 'none'}"
            for label, cpus in (("online", online), ("allowed", allowed), ("isolated", isolated), ("nohz_full", nohz))
        )
        cpus, state, advice = suggest_cpus(online, allowed, isolated, nohz)
        return self.reading(value, state, advice, online=online, allowed=allowed, isolated=isolated, nohz_full=nohz, suggested=cpus)


ASPECTS: tuple[type[MeasurementAspect], ...] = (TrialCgroups, Leftovers, Energy, PinningCpus)


def _cpus(value: Any) -> list[int]:
    return sorted({int(c) for c in value}) if isinstance(value, (list, tuple)) else []


def suggest_cpus(online: Sequence[int], allowed: Sequence[int], isolated: Sequence[int], nohz_full: Sequence[int]) -> tuple[str | None, str, str]:
    """(the CPU list to give `cpus`, or None; the state; the advice) for a host's CPUs.

    Isolated CPUs (isolcpus=) the agent may run on are the ones to use. Without them every CPU
    is shared with the rest of the system; CPU 0 usually takes more of the interrupts and
    housekeeping than the others, so another CPU is the better of ordinary choices, though it
    is not kept clear the way an isolated one is.
    """
    usable = sorted(set(allowed) & set(isolated))
    if usable:
        listed = format_cpu_list(usable)
        tick = set(usable) & set(nohz_full)
        extra = (f"; nohz_full also stops the scheduler tick on {format_cpu_list(sorted(tick))} while one task runs there"
                 if tick else "; nohz_full is not set for them (the scheduler tick still interrupts a trial)")
        return listed, OK, (f'pin trials to the isolated CPUs: cpus = "{listed}" under [experiment] (or per [[test]]): '
                            f"the kernel keeps other tasks off them{extra}")
    if isolated:
        iso = format_cpu_list(sorted(isolated))
        return None, WARN, (
            f"CPUs {iso} are isolated, but the agent's cpuset leaves them out (it may use {format_cpu_list(allowed)} only), "
            f"so benchsage refuses cpus = \"{iso}\"; run benchsage in a cpuset that includes them "
            f'and pin trials with cpus = "{iso}"'
        )
    others = [c for c in allowed if c != 0]
    if len(online) < 2 or not others:
        return None, OK, "one CPU only: there is nothing to choose; no CPU is isolated from the rest of the system"
    choice = str(others[-1])
    return choice, WARN, (
        "no CPU is isolated: other tasks and interrupts reach every CPU. CPU 0 usually takes more of them than the "
        f'others (timers, interrupts that cannot move), so pin single-threaded trials elsewhere, e.g. cpus = "{choice}" '
        "under [experiment]: that spares them some interrupts, not the rest of the system's work. To keep a CPU for "
        f"trials alone, isolate it (isolcpus={choice} nohz_full={choice} rcu_nocbs={choice} on the kernel command line) "
        "and pin to it"
    )
