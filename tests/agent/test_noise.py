"""Noise sources: the real /proc and /sys of this machine, and fake sysfs trees for each state."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchsage.agent import noise
from benchsage.agent.noise import (
    ASLR,
    SMT,
    SOURCES,
    CPUFrequency,
    CPUGovernor,
    CPUIdle,
    CPUModel,
    IsolatedCPUs,
    Kernel,
    LoadAverage,
    MemoryPressure,
    Reading,
    Swap,
    ThermalThrottle,
    TurboBoost,
    Virtualization,
    collect_noise,
)
from benchsage.agent.sysfs import kernel_cpu_list
from benchsage.vocabulary import OK, READING_STATES, UNKNOWN, WARN, format_cpu_list

CPU = "sys/devices/system/cpu"


def tree(root: Path, files: dict[str, str]) -> str:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content + "\n")
    return str(root)


def cpus(n: int, **per_cpu: str | list[str]) -> dict[str, str]:
    """online + cpuN/<file> for n CPUs; a list gives each CPU its own value."""
    files = {f"{CPU}/online": f"0-{n - 1}" if n > 1 else "0"}
    for rel, value in per_cpu.items():
        rel = rel.replace("__", "/")
        for i in range(n):
            files[f"{CPU}/cpu{i}/{rel}"] = value[i] if isinstance(value, list) else value
    return files


def check_shape(r: Reading) -> None:
    assert r.state in READING_STATES
    # The words `benchsage env` shows travel in the reading: its source's title.
    assert r.title == {s.name: s.title for s in SOURCES}[r.name] and r.title
    assert r.value is None or isinstance(r.value, str)
    # Advice exactly when something should change.
    assert (r.advice is not None) == (r.state == WARN)
    if r.state == UNKNOWN:
        assert r.value is None and r.data.get("reason")
    json.dumps(dict(r.data))


# --- the real machine -------------------------------------------------------------------------


def test_real_machine_readings_have_the_right_shape() -> None:
    readings = collect_noise()
    assert [r.name for r in readings] == [s.name for s in SOURCES]
    assert len({s.name for s in SOURCES}) == len(SOURCES)
    for r in readings:
        check_shape(r)
    by_name = {r.name: r for r in readings}
    # These are readable on any Linux machine benchsage runs on.
    for name in ("cpu", "kernel", "aslr", "load", "memory", "swap"):
        assert by_name[name].state != UNKNOWN, by_name[name]
    assert by_name["cpu"].data["cpus"] >= 1
    assert by_name["kernel"].data["release"] == __import__("os").uname().release


def test_a_missing_root_gives_unknown_everywhere(tmp_path: Path) -> None:
    readings = collect_noise(str(tmp_path / "nothing"))
    assert {r.state for r in readings} == {UNKNOWN}
    for r in readings:
        check_shape(r)


def test_garbage_content_is_unknown_not_a_crash(tmp_path: Path) -> None:
    root = tree(tmp_path, {"proc/loadavg": "abc def", f"{CPU}/online": "zz", f"{CPU}/isolated": "x-y"})
    for source in SOURCES:
        check_shape(source(root).read())
    assert LoadAverage(root).read().state == UNKNOWN


@given(st.sets(st.integers(min_value=0, max_value=300)))
def test_cpu_list_round_trip(cpus_: set[int]) -> None:
    assert kernel_cpu_list(format_cpu_list(sorted(cpus_))) == sorted(cpus_)


def test_cpu_list_format() -> None:
    assert kernel_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert format_cpu_list([5, 0, 1, 2]) == "0-2,5"
    assert kernel_cpu_list("") == [] and format_cpu_list([]) == ""
    assert kernel_cpu_list("(null)\n") == []  # nohz_full on a kernel booted without it


# --- fake trees, one state at a time ----------------------------------------------------------


def test_governor(tmp_path: Path) -> None:
    perf = CPUGovernor(tree(tmp_path / "a", cpus(4, cpufreq__scaling_governor="performance"))).read()
    assert (perf.state, perf.value) == (OK, "performance")
    mixed = CPUGovernor(
        tree(tmp_path / "b", cpus(4, cpufreq__scaling_governor=["performance", "performance", "powersave", "powersave"]))
    ).read()
    assert mixed.state == WARN and mixed.value == "performance (cpu 0-1), powersave (cpu 2-3)"
    assert mixed.advice and mixed.advice.startswith("Use the 'performance' governor")
    assert mixed.data["per_cpu"] == {0: "performance", 1: "performance", 2: "powersave", 3: "powersave"}
    save = CPUGovernor(tree(tmp_path / "c", cpus(2, cpufreq__scaling_governor="schedutil"))).read()
    assert (save.state, save.value) == (WARN, "schedutil")
    assert CPUGovernor(tree(tmp_path / "d", cpus(2))).read().state == UNKNOWN


def test_cpu_frequency(tmp_path: Path) -> None:
    def freq(name: str, lo: str | list[str], hi: str | list[str], gov: str, hw: str = "4000000") -> Reading:
        files = cpus(2, cpufreq__scaling_min_freq=lo, cpufreq__scaling_max_freq=hi,
                     cpufreq__scaling_governor=gov, cpufreq__cpuinfo_max_freq=hw)
        return CPUFrequency(tree(tmp_path / name, files)).read()

    fixed = freq("fixed", "2000000", "2000000", "userspace")
    assert fixed.state == OK and fixed.value.startswith("2000-2000 MHz")
    assert "capped" in fixed.value
    assert freq("perf", "800000", "4000000", "performance").state == OK
    moving = freq("moving", "800000", "4000000", "powersave")
    assert moving.state == WARN and "800 and 4000 MHz" in (moving.advice or "")
    uneven = freq("uneven", "800000", ["4000000", "3000000"], "performance")
    assert uneven.state == WARN and "different frequency limits" in (uneven.advice or "")
    assert CPUFrequency(tree(tmp_path / "none", cpus(2))).read().state == UNKNOWN


def test_turbo(tmp_path: Path) -> None:
    on = TurboBoost(tree(tmp_path / "a", {f"{CPU}/intel_pstate/no_turbo": "0"})).read()
    assert (on.state, on.value) == (WARN, "on") and "no_turbo" in (on.advice or "")
    assert TurboBoost(tree(tmp_path / "b", {f"{CPU}/intel_pstate/no_turbo": "1"})).read().value == "off"
    boost = TurboBoost(tree(tmp_path / "c", {f"{CPU}/cpufreq/boost": "1"})).read()
    assert (boost.state, boost.value) == (WARN, "on") and "cpufreq/boost" in (boost.advice or "")
    assert TurboBoost(tree(tmp_path / "d", {f"{CPU}/cpufreq/boost": "0"})).read().state == OK
    assert TurboBoost(tree(tmp_path / "e", {})).read().state == UNKNOWN


def test_smt(tmp_path: Path) -> None:
    on = SMT(tree(tmp_path / "a", {f"{CPU}/smt/active": "1", f"{CPU}/smt/control": "on"})).read()
    assert (on.state, on.value) == (WARN, "on")
    off = SMT(tree(tmp_path / "b", {f"{CPU}/smt/active": "0", f"{CPU}/smt/control": "off"})).read()
    assert (off.state, off.value) == (OK, "off")
    ns = SMT(tree(tmp_path / "c", {f"{CPU}/smt/active": "0", f"{CPU}/smt/control": "notsupported"})).read()
    assert (ns.state, ns.value) == (OK, "not supported")
    assert SMT(tree(tmp_path / "d", {})).read().state == UNKNOWN


@pytest.mark.parametrize(("raw", "state", "value"), [("0", WARN, "off"), ("1", WARN, "partial (no heap)"), ("2", OK, "full"), ("7", UNKNOWN, None)])
def test_aslr(tmp_path: Path, raw: str, state: str, value: str | None) -> None:
    r = ASLR(tree(tmp_path, {"proc/sys/kernel/randomize_va_space": raw})).read()
    assert (r.state, r.value) == (state, value)
    if state == WARN:
        assert "echo 2" in (r.advice or "")


def test_isolated_cpus(tmp_path: Path) -> None:
    none = IsolatedCPUs(tree(tmp_path / "a", {**cpus(4), f"{CPU}/isolated": ""})).read()
    assert (none.state, none.value) == (WARN, "none") and "isolcpus=2-3" in (none.advice or "")
    some = IsolatedCPUs(tree(tmp_path / "b", {**cpus(4), f"{CPU}/isolated": "2-3", f"{CPU}/nohz_full": "2-3"})).read()
    assert (some.state, some.value) == (OK, "2-3 (nohz_full 2-3)")
    assert some.data["isolated"] == [2, 3]
    one = IsolatedCPUs(tree(tmp_path / "c", {**cpus(1), f"{CPU}/isolated": ""})).read()
    assert one.state == OK
    unset = IsolatedCPUs(tree(tmp_path / "null", {**cpus(4), f"{CPU}/isolated": "2-3", f"{CPU}/nohz_full": "(null)"})).read()
    assert (unset.state, unset.value) == (OK, "2-3") and unset.data["nohz_full"] == []
    assert IsolatedCPUs(tree(tmp_path / "d", cpus(2))).read().state == UNKNOWN


@pytest.mark.parametrize(
    ("n", "load", "state"),
    [(2, "0.10", OK), (2, "0.50", OK), (2, "0.51", WARN), (8, "0.79", OK), (8, "0.81", WARN), (64, "6.0", OK), (64, "7.0", WARN)],
)
def test_load_threshold(tmp_path: Path, n: int, load: str, state: str) -> None:
    r = LoadAverage(tree(tmp_path, {**cpus(n), "proc/loadavg": f"{load} 0.20 0.10 1/200 4242"})).read()
    assert r.state == state and r.data["cpus"] == n
    assert r.value == f"{float(load):.2f} 0.20 0.10 ({n} CPUs)"


def test_once_it_has_measured_a_second_the_load_source_counts_other_work_not_the_experiments(tmp_path: Path) -> None:
    """A 1-minute load of 3 on two CPUs, which back-to-back trials reach by themselves: after a
    second, only the host's busy time beyond the experiment's own counts. The fake /proc/stat
    says the host was busy exactly as long as this process and its two generations of parents
    (fake stat files: utime, stime, cutime and cstime) were, and in interrupts, then two CPUs'
    worth more."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent, grandparent = os.getppid(), 999_999

    def stat(pid: int, ppid: int, cpu: int) -> str:
        return f"{pid} (some (odd) name) S {ppid} 1 1 0 -1 0 0 0 0 0 {cpu} 0 0 0 20 0 1 0"

    def own_ticks() -> float:
        t = os.times()
        return (t.user + t.system + t.children_user + t.children_system) * ticks

    def write(busy: float, parent_cpu: int, grandparent_cpu: int, softirq: int = 0) -> None:
        tree(tmp_path, {"proc/stat": f"cpu  {round(busy)} 0 0 100000 0 0 {softirq} 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0",
                        f"proc/{parent}/stat": stat(parent, grandparent, parent_cpu),
                        f"proc/{grandparent}/stat": stat(grandparent, 1, grandparent_cpu)})

    def one_second_later(since: float) -> None:
        while time.monotonic() - since < 1.0:  # the source needs a second between two readings
            time.sleep(0.05)

    root = tree(tmp_path, {**cpus(2), "proc/loadavg": "3.00 2.00 1.00 1/200 4242"})
    write(5000 + own_ticks(), 100, 7)
    first = LoadAverage(root).read()
    start = time.monotonic()
    assert first.state == WARN and "others" not in first.data and "1-minute load 3.00" in (first.advice or "")
    one_second_later(start)
    # The parents took 30 and 40 ticks: the experiment's. Interrupts (a trial's own I/O) do not count.
    write(5000 + own_ticks() + 30 + 40, 130, 47, softirq=2 * ticks)
    second = LoadAverage(root).read()
    assert second.state == OK and second.data["others"] < 0.05, second.data
    assert second.data["own"] > 0.5 and second.data["over"] >= 1.0
    assert second.value == "3.00 2.00 1.00 (2 CPUs); other work " + f"{second.data['others']:.2f} CPUs"
    # A reading within the second says what the last one did
    assert LoadAverage(root).read().data["others"] == second.data["others"]
    start = time.monotonic()
    one_second_later(start)
    elapsed = time.monotonic() - start
    write(5000 + own_ticks() + 70 + 2 * elapsed * ticks, 130, 47, softirq=2 * ticks)  # and two CPUs busy with other work
    third = LoadAverage(root).read()
    assert third.state == WARN and 1.6 < third.data["others"] <= 2.05, third.data
    assert (third.advice or "").startswith(f"Other work took {third.data['others']:.2f} CPUs of 2 over the last ")


def meminfo(total: int, available: int, swap_total: int = 0, swap_free: int = 0) -> str:
    return (
        f"MemTotal: {total} kB\nMemFree: {available // 2} kB\nMemAvailable: {available} kB\n"
        f"SwapTotal: {swap_total} kB\nSwapFree: {swap_free} kB"
    )


def test_memory(tmp_path: Path) -> None:
    calm = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0"
    busy = "some avg10=9.00 avg60=5.50 avg300=1.00 total=99\nfull avg10=1.00 avg60=0.50 avg300=0.10 total=9"
    ok = MemoryPressure(tree(tmp_path / "a", {"proc/meminfo": meminfo(16 << 20, 12 << 20), "proc/pressure/memory": calm})).read()
    assert ok.state == OK and "12.0 of 16.0 GiB available (75%)" in (ok.value or "")
    short = MemoryPressure(tree(tmp_path / "b", {"proc/meminfo": meminfo(16 << 20, 1 << 20)})).read()
    assert short.state == WARN and short.data["some_avg60"] is None
    stalled = MemoryPressure(tree(tmp_path / "c", {"proc/meminfo": meminfo(16 << 20, 12 << 20), "proc/pressure/memory": busy})).read()
    assert stalled.state == WARN and stalled.data["some_avg60"] == 5.5
    assert MemoryPressure(tree(tmp_path / "d", {"proc/meminfo": "MemFree: 1 kB"})).read().state == UNKNOWN


def test_swap(tmp_path: Path) -> None:
    assert Swap(tree(tmp_path / "a", {"proc/meminfo": meminfo(8 << 20, 4 << 20)})).read().value == "no swap"
    idle = Swap(tree(tmp_path / "b", {"proc/meminfo": meminfo(8 << 20, 4 << 20, 2 << 20, 2 << 20)})).read()
    assert idle.state == OK and idle.data["used_kib"] == 0
    used = Swap(tree(tmp_path / "c", {"proc/meminfo": meminfo(8 << 20, 4 << 20, 2 << 20, (2 << 20) - 51200)})).read()
    assert used.state == WARN and used.value == "50 MiB used of 2.0 GiB" and "swapoff" in (used.advice or "")


def test_thermal_throttle(tmp_path: Path) -> None:
    calm = cpus(4, thermal_throttle__core_throttle_count="0", thermal_throttle__package_throttle_count="0")
    assert ThermalThrottle(tree(tmp_path / "a", calm)).read().state == OK
    hot = cpus(4, thermal_throttle__core_throttle_count=["0", "3", "0", "2"], thermal_throttle__package_throttle_count="7")
    r = ThermalThrottle(tree(tmp_path / "b", hot)).read()
    assert r.state == WARN and r.data == {"core_events": 5, "package_events": 7}
    assert ThermalThrottle(tree(tmp_path / "c", cpus(4))).read().state == UNKNOWN


def test_virtualization(tmp_path: Path) -> None:
    vm = Virtualization(tree(tmp_path / "a", {"proc/cpuinfo": "processor : 0\nflags : fpu sse2 hypervisor avx"})).read()
    assert vm.state == WARN and "hypervisor" in (vm.value or "")
    metal = Virtualization(tree(tmp_path / "b", {"proc/cpuinfo": "processor : 0\nflags : fpu sse2 avx"})).read()
    assert (metal.state, metal.value) == (OK, "none (bare metal)")
    product = Virtualization(
        tree(tmp_path / "c", {"proc/cpuinfo": "flags : fpu", "sys/class/dmi/id/product_name": "KVM Virtual Machine"})
    ).read()
    assert product.state == WARN and "KVM" in (product.value or "")
    assert Virtualization(tree(tmp_path / "d", {})).read().state == UNKNOWN


def test_real_virtualization_runs_detection_once() -> None:
    first = Virtualization().read()
    check_shape(first)
    assert "answer" in noise._detect_virt_cache
    assert Virtualization().read() == first


def test_cpu_model_and_cores(tmp_path: Path) -> None:
    files = {
        **cpus(4, topology__physical_package_id="0", topology__core_id=["0", "0", "1", "1"]),
        "proc/cpuinfo": "processor\t: 0\nmodel name\t: Example CPU @ 3.00GHz\n\nprocessor\t: 1\nmodel name\t: Example CPU @ 3.00GHz\n",
    }
    r = CPUModel(tree(tmp_path / "a", files)).read()
    assert (r.state, r.value) == (OK, "Example CPU @ 3.00GHz x 4 (2 cores)")
    arm = CPUModel(tree(tmp_path / "b", {**cpus(2), "proc/cpuinfo": "processor : 0\nHardware : BCM2711"})).read()
    assert arm.value == "BCM2711 x 2"


def test_kernel(tmp_path: Path) -> None:
    r = Kernel(tree(tmp_path, {"proc/sys/kernel/osrelease": "6.1.0-test", "proc/sys/kernel/version": "#1 SMP"})).read()
    assert (r.state, r.value) == (OK, "6.1.0-test") and r.data["version"] == "#1 SMP"


def idle_states(n: int, states: list[tuple[str, int]], disabled: dict[str, list[int]] | None = None,
                driver: str = "intel_idle", governor: str = "menu") -> dict[str, str]:
    """A cpuidle tree: n CPUs with the same states (name, exit latency); `disabled`: by name, the CPUs it is off on."""
    files = {**cpus(n), f"{CPU}/cpuidle/current_driver": driver, f"{CPU}/cpuidle/current_governor_ro": governor}
    for cpu in range(n):
        for k, (name, latency) in enumerate(states):
            base = f"{CPU}/cpu{cpu}/cpuidle/state{k}"
            files.update({f"{base}/name": name, f"{base}/latency": str(latency),
                          f"{base}/disable": "1" if cpu in (disabled or {}).get(name, []) else "0"})
    return files


def hold_qos(root: str, limit: int) -> str:
    """/dev/cpu_dma_latency as the kernel gives it: the limit in force, a 32-bit integer."""
    (Path(root) / "dev").mkdir(exist_ok=True)
    (Path(root) / "dev" / "cpu_dma_latency").write_bytes(limit.to_bytes(4, "little", signed=True))
    return root


SERVER = [("POLL", 0), ("C1", 2), ("C1E", 10), ("C6", 133)]


def test_cpu_idle_deep_states_warn_until_disabled_everywhere_or_held_by_a_latency_limit(tmp_path: Path) -> None:
    deep = CPUIdle(tree(tmp_path / "a", idle_states(4, SERVER))).read()
    check_shape(deep)
    assert (deep.state, deep.value) == (WARN, "intel_idle / menu: POLL 0 us, C1 2 us, C1E 10 us, C6 133 us")
    assert "C6" in deep.advice and "133 us" in deep.advice and "cpupower idle-set -D 11" in deep.advice
    assert "cpu_latency = 10 under [experiment]" in deep.advice
    assert (deep.data["deepest"], deep.data["deepest_latency_us"]) == ("C6", 133)

    # C6 off on two CPUs only: the other two still sleep deep
    half = CPUIdle(tree(tmp_path / "b", idle_states(4, SERVER, {"C6": [0, 1]}))).read()
    assert half.state == WARN and "C6 133 us (enabled on cpu 2-3 only)" in half.value
    assert half.data["states"][3] == {"name": "C6", "latency_us": 133, "enabled_cpus": "2-3"}

    shallow = CPUIdle(tree(tmp_path / "c", idle_states(4, SERVER, {"C6": [0, 1, 2, 3]}))).read()
    check_shape(shallow)
    assert (shallow.state, shallow.value) == (OK, "intel_idle / menu: POLL 0 us, C1 2 us, C1E 10 us, C6 133 us (disabled)")

    # a process holding /dev/cpu_dma_latency at 2 us keeps the governor out of C1E and C6
    held = CPUIdle(hold_qos(tree(tmp_path / "d", idle_states(4, SERVER)), 2)).read()
    assert held.state == OK and held.value.endswith("; PM QoS limit 2 us") and held.data["deepest"] == "C1"
    # the kernel's value when nobody holds a request is no limit
    free = CPUIdle(hold_qos(tree(tmp_path / "e", idle_states(4, SERVER)), 2_000_000_000)).read()
    assert free.state == WARN and free.data["qos_latency_us"] is None


def test_cpu_idle_in_a_virtual_machine_that_halts_at_once(tmp_path: Path) -> None:
    guest = idle_states(2, [("POLL", 0), ("haltpoll idle", 1)], driver="haltpoll", governor="haltpoll")
    halts = CPUIdle(tree(tmp_path / "a", {**guest, "sys/module/haltpoll/parameters/guest_halt_poll_ns": "0"})).read()
    check_shape(halts)
    assert halts.state == WARN and halts.value.endswith("; no halt polling") and "hypervisor" in halts.advice
    assert "cpu_latency = 0 under [experiment]" in halts.advice
    polls = CPUIdle(tree(tmp_path / "b", {**guest, "sys/module/haltpoll/parameters/guest_halt_poll_ns": "200000"})).read()
    assert polls.state == OK
    held = CPUIdle(hold_qos(tree(tmp_path / "c", {**guest, "sys/module/haltpoll/parameters/guest_halt_poll_ns": "0"}), 0)).read()
    assert held.state == OK and held.value.endswith("; PM QoS limit 0 us")


def test_cpu_idle_without_a_driver_is_unknown(tmp_path: Path) -> None:
    r = CPUIdle(tree(tmp_path, cpus(2))).read()
    check_shape(r)
    assert r.state == UNKNOWN and "no cpuidle driver" in r.data["reason"]


@pytest.mark.cpu_latency
@pytest.mark.skipif(not os.access("/dev/cpu_dma_latency", os.W_OK), reason="needs a writable /dev/cpu_dma_latency (root)")
def test_cpu_idle_reads_the_latency_limit_a_process_holds_on_this_machine() -> None:
    if CPUIdle().read().data.get("qos_latency_us") is not None:
        pytest.skip("another process holds a CPU latency limit on this machine")
    fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
    try:
        os.write(fd, (3).to_bytes(4, "little", signed=True))
        held = CPUIdle().read()
    finally:
        os.close(fd)  # the request ends with its file
    if held.state != UNKNOWN:  # a machine with cpuidle
        assert held.data["qos_latency_us"] == 3 and "PM QoS limit 3 us" in held.value
    assert CPUIdle().read().data.get("qos_latency_us") is None  # gone with its file
