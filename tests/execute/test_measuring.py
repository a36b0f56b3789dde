"""How trials are measured on this machine, for `benchsage env`: the local agent's hello read
aspect by aspect (cgroups, leftovers, energy, CPUs), the CPUs it suggests, and what follows for
every trial (the metrics it records, its leftovers)."""

from __future__ import annotations

from typing import Any

import pytest

from benchsage.errors import WorkerError
from benchsage.execute.local import LocalWorker
from benchsage.execute.measuring import ASPECTS, describe_measurement, local_measurement, suggest_cpus
from benchsage.vocabulary import HARNESS_METRICS, OFF, OK, OPTIONAL_HARNESS_METRICS, UNKNOWN, WARN

NO_CGROUPS = ("no cgroups: v2: not root; v1: no v1 memory hierarchy at /sys/fs/cgroup/memory; "
              "to enable: start the agent with `systemd-run --user --scope -p Delegate=yes ...`, or run it as root")
NO_RAPL = "no /sys/class/powercap: the kernel has no powercap"


def hello(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "cgroup": "cgroup v2", "cgroup_reason": "cgroup v2: in the agent's own subtree /sys/fs/cgroup/user.slice/x",
        "leftovers": "cgroup", "energy": True, "energy_reason": "package-0 (intel-rapl:0)",
        "cpus_online": [0, 1, 2, 3], "cpus_allowed": [0, 1, 2, 3], "cpus_isolated": [], "cpus_nohz_full": [],
    }
    base.update(changes)
    return base


def by_name(m: dict[str, Any]) -> dict[str, Any]:
    return {r.name: r for r in describe_measurement(m).aspects}


def test_a_host_with_everything() -> None:
    r = by_name(hello())
    assert (r["cgroups"].value, r["cgroups"].state, r["cgroups"].advice) == ("cgroup v2", OK, None)
    assert r["cgroups"].data["reason"].startswith("cgroup v2: in the agent's own subtree")
    assert (r["leftovers"].value, r["leftovers"].state) == ("killed and counted (the trial's cgroup)", OK)
    assert (r["energy"].value, r["energy"].state) == ("measured", OK)
    assert r["cpus"].value == "online 0-3; allowed 0-3; isolated none; nohz_full none"
    described = describe_measurement(hello())
    assert described.agent == hello()
    assert described.metrics == ("wall_time", "user_time", "sys_time", "max_rss", "peak_memory", "cpu_time", "energy")
    assert described.missing == ()
    assert described.leftovers == "killed and counted (the trial's cgroup)"


def test_a_host_without_cgroups_or_rapl_says_why_and_what_would_enable_them() -> None:
    m = hello(cgroup=None, cgroup_reason=NO_CGROUPS, leftovers="subreaper", energy=False, energy_reason=NO_RAPL)
    r = by_name(m)
    assert (r["cgroups"].value, r["cgroups"].state) == ("none", OFF)
    assert r["cgroups"].advice == f"peak_memory and cpu_time are not recorded: {NO_CGROUPS}"
    assert (r["leftovers"].state, r["leftovers"].data["method"]) == (OK, "subreaper")
    assert (r["energy"].state, r["energy"].advice) == (OFF, f"energy is not recorded: {NO_RAPL}")
    described = describe_measurement(m)
    assert (described.metrics, described.missing) == (HARNESS_METRICS, OPTIONAL_HARNESS_METRICS)
    assert described.leftovers == "killed and counted (the agent adopts them as child subreaper)"
    assert describe_measurement(hello(energy=False)).missing == ("energy",)


def test_every_aspect_reading_carries_its_title() -> None:
    titles = [r.title for r in describe_measurement(hello()).aspects]
    assert titles == [aspect.title for aspect in ASPECTS] == [
        "Trial cgroups (peak_memory, cpu_time)", "Leftover processes", "Package energy (RAPL)", "CPUs for trials"]


def test_leftovers_found_by_process_group_only_warn() -> None:
    r = by_name(hello(cgroup=None, leftovers="process group"))["leftovers"]
    assert r.state == WARN and r.value == "only the trial's process group is killed"
    assert r.advice.startswith("a process that leaves it (setsid, a daemon) outlives its trial unseen")


@pytest.mark.parametrize(
    "online, allowed, isolated, nohz, cpus, state, words",
    [
        # Isolated CPUs the agent may use: those, and whether the tick stops on them.
        ([0, 1, 2, 3], [0, 1, 2, 3], [2, 3], [2, 3], "2-3", OK, ['cpus = "2-3"', "nohz_full also stops the scheduler tick on 2-3"]),
        ([0, 1, 2, 3], [0, 1, 2, 3], [3], [], "3", OK, ['cpus = "3"', "nohz_full is not set for them"]),
        # Isolated, but outside the agent's cpuset.
        ([0, 1, 2, 3], [0, 1], [2, 3], [2, 3], None, WARN, ["CPUs 2-3 are isolated, but the agent's cpuset leaves them out",
                                                          "in a cpuset that includes them", 'pin trials with cpus = "2-3"']),
        # None isolated: a CPU other than 0, said for what it is.
        ([0, 1], [0, 1], [], [], "1", WARN, ["no CPU is isolated", 'cpus = "1"', "not the rest of the system's work",
                                             "isolcpus=1 nohz_full=1 rcu_nocbs=1"]),
        ([0, 1, 2, 3, 4, 5, 6, 7], [0, 2, 4], [], [], "4", WARN, ['cpus = "4"']),
        # Nothing to choose.
        ([0], [0], [], [], None, OK, ["one CPU only"]),
        ([0, 1, 2, 3], [0], [], [], None, OK, ["one CPU only"]),
    ],
)
def test_which_cpus_to_pin_to(online: list[int], allowed: list[int], isolated: list[int], nohz: list[int], cpus: str | None,
                              state: str, words: list[str]) -> None:
    got, got_state, advice = suggest_cpus(online, allowed, isolated, nohz)
    assert (got, got_state) == (cpus, state)
    for w in words:
        assert w in advice, w
    r = by_name(hello(cpus_online=online, cpus_allowed=allowed, cpus_isolated=isolated, cpus_nohz_full=nohz))["cpus"]
    assert (r.state, r.advice, r.data["suggested"]) == (state, advice, cpus)


def test_an_agent_that_did_not_start() -> None:
    described = describe_measurement(None, "the local agent did not start: worker local: no python")
    (r,) = described.aspects
    assert (r.name, r.title, r.state) == ("agent", "Local agent", UNKNOWN)
    assert r.data["reason"] == "the local agent did not start: worker local: no python"
    assert (described.agent, described.metrics, described.missing, described.leftovers) == (None, (), (), None)
    assert describe_measurement(None).aspects[0].data["reason"] == "the local agent's measurement is not known"


def test_local_measurement_is_the_agents_hello(monkeypatch: pytest.MonkeyPatch) -> None:
    measurement, error = local_measurement()
    worker = LocalWorker()
    try:
        assert error is None and measurement == worker.connect()["measurement"]
    finally:
        worker.close()

    def refuse(self: LocalWorker, timeout: float = 0) -> dict[str, Any]:
        raise WorkerError("worker local: cannot start python")

    monkeypatch.setattr(LocalWorker, "connect", refuse)
    assert local_measurement() == (None, "the local agent did not start: worker local: cannot start python")
