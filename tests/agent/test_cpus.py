"""CPU lists (the vocabulary's parser the agent uses): taskset syntax with strides, one-line errors
naming the bad item; the host's online, allowed and isolated CPUs, and the check that a pin list
fits the host."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchsage.agent import cpus
from benchsage.agent.cpus import HostCpus, check, host_cpus, isolated
from benchsage.vocabulary import format_cpu_list, parse_cpu_list

sys.path.insert(0, str(Path(__file__).parent))
from proctools import AS_ON_A_HOST, PYTHON38, needs_python38  # noqa: E402


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", [0]),
        ("0-3", [0, 1, 2, 3]),
        ("0-3,5,8-11:2", [0, 1, 2, 3, 5, 8, 10]),
        ("1,0,1", [0, 1]),
        (" 2 , 4-5 ", [2, 4, 5]),
        ("0-10:5", [0, 5, 10]),
        ("3-3", [3]),
        ("0-1\n", [0, 1]),  # as sysfs files end
        ("127", [127]),
    ],
)
def test_parse(text: str, expected: list[int]) -> None:
    assert parse_cpu_list(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty CPU list ''"),
        ("  ", "empty CPU list"),
        ("1,,2", "an empty item"),
        ("1,", "an empty item"),
        ("x", "'x' is not a CPU number"),
        ("0-3,a-5", "'a' in 'a-5' is not a CPU number"),
        ("-1", "'-1' is negative"),
        ("5-3", "'5-3' is a reversed range"),
        ("0-4:0", "'0-4:0' has stride 0"),
        ("4:2", "'4:2' has a stride but no range"),
        ("0-", "'0-' is missing a number"),
        ("1.5", "'1.5' is not a CPU number"),
        ("0-3:x", "'x' in '0-3:x' is not a CPU number"),
        ("0-1023:2/256", "'2/256' in '0-1023:2/256' is not a CPU number"),
        ("\u0663", "is not a CPU number"),  # an Arabic-Indic three: a digit, but not a CPU number
    ],
)
def test_malformed_lists_name_the_bad_part(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_cpu_list(text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_format() -> None:
    assert format_cpu_list([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert format_cpu_list([3, 1, 3]) == "1,3"
    assert format_cpu_list([]) == ""


@given(st.sets(st.integers(min_value=0, max_value=300), max_size=40))
def test_format_then_parse_round_trips(numbers: set[int]) -> None:
    text = format_cpu_list(numbers)
    assert (parse_cpu_list(text) if numbers else []) == sorted(numbers)


def fake_cpu_dir(root: Path, **files: str) -> Path:
    folder = root / "sys/devices/system/cpu"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text + "\n")
    return folder


def test_host_cpus_of_this_machine() -> None:
    host = host_cpus()
    assert host.online and set(host.allowed) <= set(host.online)
    assert set(os.sched_getaffinity(0)) <= set(host.allowed)  # the cpuset, or the affinity itself
    assert check(host.allowed, host) is None


def test_pinning_may_reach_the_whole_cpuset_beyond_the_agents_affinity(tmp_path: Path) -> None:
    """With isolcpus=2-3 every process starts on 0-1, yet may be pinned to 2-3: its cpuset has them."""
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("4:memory:/a\n3:cpuset:/bench\n0::/x\n")
    (tmp_path / "sys/fs/cgroup/cpuset/bench").mkdir(parents=True)
    (tmp_path / "sys/fs/cgroup/cpuset/bench/cpuset.effective_cpus").write_text("0-3\n")
    (tmp_path / "sys/devices/system/cpu").mkdir(parents=True)
    (tmp_path / "sys/devices/system/cpu/online").write_text("0-3\n")
    host = host_cpus(str(tmp_path))
    assert host.allowed == [0, 1, 2, 3] and check([2, 3], host) is None
    (tmp_path / "proc/self/cgroup").write_text("0::/svc\n")  # cgroup v2
    (tmp_path / "sys/fs/cgroup/svc").mkdir(parents=True)
    (tmp_path / "sys/fs/cgroup/svc/cpuset.cpus.effective").write_text("1-2\n")
    host = host_cpus(str(tmp_path))
    assert host.allowed == [1, 2] and "not allowed" in (check([3], host) or "")


def test_host_cpus_from_a_fake_sysfs(tmp_path: Path) -> None:
    fake_cpu_dir(tmp_path, online="0-5,8")
    assert host_cpus(str(tmp_path)).online == [0, 1, 2, 3, 4, 5, 8]


def test_host_cpus_without_the_online_file_counts_cpu_folders(tmp_path: Path) -> None:
    folder = fake_cpu_dir(tmp_path)
    for name in ("cpu0", "cpu1", "cpu3", "cpufreq", "cpuidle"):
        (folder / name).mkdir()
    assert host_cpus(str(tmp_path)).online == [0, 1, 3]


def test_isolated_and_nohz_full(tmp_path: Path) -> None:
    fake_cpu_dir(tmp_path, isolated="2-3", nohz_full="3")
    assert isolated(str(tmp_path)) == ([2, 3], [3])
    assert isolated(str(tmp_path / "none")) == ([], [])


def test_isolated_when_none_or_nohz_full_reads_null(tmp_path: Path) -> None:
    fake_cpu_dir(tmp_path, isolated="", nohz_full="(null)")
    assert isolated(str(tmp_path)) == cpus.Isolation([], [])


def test_isolated_of_this_machine_are_online() -> None:
    host = host_cpus()
    found = isolated()
    assert set(found.isolated) <= set(host.online) and set(found.nohz_full) <= set(host.online)


def test_check_names_cpus_the_host_lacks() -> None:
    host = HostCpus(online=[0, 1, 2, 3], allowed=[0, 1, 2, 3])
    assert check([1, 2], host) is None
    assert check([3, 4, 7], host) == "CPUs 4,7: not on this host (online: 0-3)"
    assert check([9], host) == "CPU 9: not on this host (online: 0-3)"
    assert check([], host) == "no CPUs to pin to"


def test_check_names_cpus_the_agent_may_not_use() -> None:
    host = HostCpus(online=[0, 1, 2, 3], allowed=[0, 1])
    message = check([1, 2, 3], host)
    assert message is not None
    assert message.startswith("CPUs 2-3: online but not allowed to the agent (it may run on 0-1 only")


def test_a_cpu_beyond_this_machine_is_refused() -> None:
    host = host_cpus()
    beyond = max(host.online) + 1
    message = check(parse_cpu_list("0,%d" % beyond), host)
    assert message == "CPU %d: not on this host (online: %s)" % (beyond, format_cpu_list(host.online))


def test_a_checked_list_pins_a_child_for_real() -> None:
    host = host_cpus()
    target = parse_cpu_list(str(host.allowed[-1]))
    assert check(target, host) is None
    pid = os.fork()
    if pid == 0:  # pragma: no cover - reports through its exit status
        code = 127
        try:
            os.sched_setaffinity(0, target)
            code = 0 if os.sched_getaffinity(0) == set(target) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


@needs_python38
def test_runs_on_python_3_8() -> None:
    script = AS_ON_A_HOST + textwrap.dedent("""
        from benchsage.agent import cpus
        from benchsage.vocabulary import format_cpu_list, parse_cpu_list
        host = cpus.host_cpus()
        print(format_cpu_list(parse_cpu_list("0-3,5,8-11:2")), cpus.check(host.allowed, host), "typing" in sys.modules)
    """)
    result = subprocess.run([str(PYTHON38), "-S", "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0-3,5,8,10", "None", "False"]
