"""Per-trial cgroups against the real kernel: the whole tree's peak memory, CPU time of processes
never waited for, leftovers killed, cgroups removed; probe reasons on trees shaped like hosts
that do not allow cgroups; failures mid-experiment.

Tests that need cgroups skip where the host does not allow them (not root, no delegation),
except under CI (CI=true), where that is a failure. Every test leaves no cgroup folder and no
process behind (the `groups` fixture checks).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Iterator, List

import pytest

from benchsage.agent import cgroups
from benchsage.agent.cgroups import CgroupError, Cgroups, Support, TrialCgroup

sys.path.insert(0, str(Path(__file__).parent))
from proctools import PYTHON38, as_user, gone, needs_python38  # noqa: E402

MIB = 1024  # one MiB in KiB, the unit of peak_memory
SOURCE = Path(cgroups.__file__).parent


def require(support: Support) -> None:
    """Skip unless `support` has a method; under CI a missing method is a failure."""
    if not support.method:
        if os.environ.get("CI") == "true":
            pytest.fail("cgroups needed under CI: " + support.reason)
        pytest.skip(support.reason)


@pytest.fixture
def groups() -> Iterator[Cgroups]:
    """The agent's cgroups as probed on this host; at teardown, closed, with nothing left."""
    support = cgroups.probe()
    require(support)
    made = Cgroups(support)
    yield made
    made.close()
    left = [os.path.join(parent, name) for _, parent in support.parents for name in os.listdir(parent) if ours(name)]
    assert not left, "cgroup folders left behind: %s" % left


def ours(name: str) -> bool:
    """Whether a folder name is one of this process's Cgroups folders (benchsage-<pid>[-k])."""
    mine = "%s%d" % (cgroups.PREFIX, os.getpid())
    return name == mine or name.startswith(mine + "-")


def start(trial: TrialCgroup, argv: List[str], cwd: Path | None = None) -> int:
    """Fork a child that joins `trial` and execs `argv`, as the agent does."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child execs or exits
        try:
            if cwd is not None:
                os.chdir(cwd)
            trial.join()
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    return pid


def sh(trial: TrialCgroup, script: str, cwd: Path | None = None) -> int:
    return start(trial, ["/bin/sh", "-c", script], cwd)



def wait_for(path: Path, within: float = 10.0) -> str:
    end = time.monotonic() + within
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.01)
    return path.read_text().strip()


# --------------------------------------------------------------------------------------------
# Measurement


def test_peak_memory_is_the_whole_trees(groups: Cgroups, tmp_path: Path) -> None:
    trial = groups.trial()
    # Four dd processes each hold a 50 MiB buffer (read from /dev/zero, so every page is
    # touched) at the same time: each blocks writing it to its reader, which reads a first
    # piece (so its dd has filled the buffer), says so, and reads the rest once all four have.
    script = ("for i in 1 2 3 4; do dd if=/dev/zero bs=50M count=1 status=none | (head -c 1 >/dev/null; touch ready.$i; "
              "while [ $(ls | grep -c ready) -lt 4 ]; do sleep 0.01; done; cat >/dev/null) & done; wait")
    pid = sh(trial, script, tmp_path)
    _, status, _ = os.wait4(pid, 0)
    assert status == 0
    assert trial.kill_all() == 0
    measured = trial.read()
    trial.remove()
    # Not one process's 50 MiB (what wait4's max_rss shows, from a spawner as small as the
    # agent; from pytest it shows pytest's own size) but all four at once.
    assert abs(measured.peak_memory - 200 * MIB) <= 0.15 * 200 * MIB, measured


def test_cpu_time_counts_a_grandchild_that_was_never_waited_for(groups: Cgroups, tmp_path: Path) -> None:
    loop = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"
    # The same loop as a waited-for child: the CPU it takes on this machine.
    before = os.times()
    subprocess.run(["/bin/sh", "-c", loop], check=True)
    after = os.times()
    cpu_ref = (after.children_user - before.children_user) + (after.children_system - before.children_system)

    trial = groups.trial()
    # The trial's shell exits at once; its setsid grandchild burns CPU and is reaped by init.
    pid = sh(trial, f"setsid sh -c '{loop}; echo done > finished' & exit 0", cwd=tmp_path)
    _, status, usage = os.wait4(pid, 0)
    assert status == 0 and usage.ru_utime + usage.ru_stime < 0.05  # wait4 misses the grandchild
    wait_for(tmp_path / "finished")
    end = time.monotonic() + 5
    while trial.pids() and time.monotonic() < end:  # let it exit
        time.sleep(0.01)
    assert trial.kill_all() == 0
    measured = trial.read()
    trial.remove()
    # The same loop's CPU time varies with what else runs here (shared caches, frequency), by
    # tens of percent on a busy machine; missing the grandchild would read ~0.
    assert measured.cpu_time >= 0.5 * cpu_ref > 0.05, (measured, cpu_ref)


def _sigign(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    raise AssertionError("no SigIgn")


def test_kill_all_kills_a_daemon_and_a_process_ignoring_sigterm(groups: Cgroups, tmp_path: Path) -> None:
    trial = groups.trial()
    script = (
        "setsid sh -c 'echo $$ > daemon.pid; exec sleep 1000' & "
        "sh -c 'trap \"\" TERM; echo $$ > stubborn.pid; exec sleep 1000' & "
        "exit 0"
    )
    pid = sh(trial, script, cwd=tmp_path)
    os.wait4(pid, 0)
    daemon = int(wait_for(tmp_path / "daemon.pid"))
    stubborn = int(wait_for(tmp_path / "stubborn.pid"))
    deadline = time.monotonic() + 5
    while not (_sigign(stubborn) & (1 << (signal.SIGTERM - 1))) or trial.pids() != {daemon, stubborn}:
        assert time.monotonic() < deadline, "the trial's leftovers did not settle"
        time.sleep(0.01)
    os.kill(stubborn, signal.SIGTERM)
    time.sleep(0.05)
    assert not gone(stubborn, within=0)  # SIGTERM does not stop it

    assert trial.kill_all() == 2
    assert gone(daemon) and gone(stubborn)
    assert trial.pids() == set()
    trial.remove()


def test_kill_all_reaches_cgroups_the_trial_made_and_remove_deletes_them(groups: Cgroups, tmp_path: Path) -> None:
    trial = groups.trial()
    memory_dir = next(d for d in trial.dirs if "memory" in d or "unified" in d)
    script = f"mkdir {memory_dir}/inner && echo $$ > {memory_dir}/inner/cgroup.procs && echo $$ > inner.pid && exec sleep 1000"
    pid = sh(trial, "sh -c '%s' & exit 0" % script, cwd=tmp_path)
    os.wait4(pid, 0)
    inner = int(wait_for(tmp_path / "inner.pid"))
    assert str(inner) in Path(memory_dir, "inner", "cgroup.procs").read_text().split()
    assert trial.kill_all() == 1
    assert gone(inner)
    trial.remove()
    assert not any(os.path.exists(d) for d in trial.dirs)  # a trial that made cgroups is never recycled


def test_an_emptied_cgroup_is_recycled_with_its_counters_at_zero(groups: Cgroups) -> None:
    first = groups.trial()
    os.wait4(sh(first, "dd if=/dev/zero of=/dev/null bs=50M count=1 status=none"), 0)
    first.kill_all()
    assert first.read().peak_memory > 45 * MIB
    first.remove()
    second = groups.trial()
    if groups.v2:
        assert second.dirs != first.dirs  # v2: always fresh
    else:
        assert second.dirs == first.dirs  # recycled: the 50 MiB were freed at exit
    # What the first trial left charged, at most RECYCLE_BYTES; none of its CPU time.
    assert second.read().peak_memory <= cgroups.RECYCLE_BYTES // 1024 and second.read().cpu_time < 0.001
    os.wait4(start(second, ["/bin/true"]), 0)
    measured = second.read()
    second.remove()
    assert 0 < measured.peak_memory < 3 * MIB and 0 < measured.cpu_time < 0.5


def test_a_cgroup_left_holding_page_cache_is_removed_not_recycled(groups: Cgroups, tmp_path: Path) -> None:
    trial = groups.trial()
    # A file written by the trial stays in the page cache, charged to its cgroup.
    os.wait4(sh(trial, "dd if=/dev/zero of=data bs=1M count=8 status=none", cwd=tmp_path), 0)
    assert trial.kill_all() == 0
    assert trial.read().peak_memory >= 7 * MIB
    trial.remove()
    assert not any(os.path.exists(d) for d in trial.dirs), "a cgroup holding 8 MiB of page cache was recycled"


def test_close_kills_what_live_trials_left_and_removes_everything(tmp_path: Path) -> None:
    support = cgroups.probe()
    require(support)
    made = Cgroups(support)
    trial = made.trial()
    os.wait4(sh(trial, "setsid sh -c 'echo $$ > daemon.pid; exec sleep 1000' & exit 0", cwd=tmp_path), 0)
    daemon = int(wait_for(tmp_path / "daemon.pid"))
    assert made.close() == 1
    assert gone(daemon)
    assert not any(os.path.exists(d) for d in trial.dirs)
    assert not any(ours(name) for _, parent in support.parents for name in os.listdir(parent))


def _agent_folders(parent: str, pid: int) -> List[str]:
    mine = "%s%d" % (cgroups.PREFIX, pid)
    return [name for name in os.listdir(parent) if name == mine or name.startswith(mine + "-")]


def _unused_pid(start: int = 50000) -> int:
    """A pid no process of this PID namespace has now (tests running at once: each its own start)."""
    for pid in range(start, 4000000):
        if not os.path.exists(f"/proc/{pid}"):
            return pid
    raise AssertionError("no free pid")


AGENT_IN_ITS_OWN_PID_NAMESPACE = """
import os, sys, time
import types
sys.modules["benchsage"] = types.ModuleType("benchsage")  # as in the agent's bundle: the package holds nothing
sys.modules["benchsage"].__path__ = [sys.argv[1]]
from benchsage.agent import cgroups
ready, go, pid = sys.argv[2], sys.argv[3], int(sys.argv[4])
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(pid - 1))  # the next process of this namespace gets `pid`
child = os.fork()
if child == 0:
    made = cgroups.Cgroups(cgroups.probe())
    trial = made.trial()
    open(ready, "w").write(str(os.getpid()))
    while not os.path.exists(go):
        time.sleep(0.01)
    still = all(os.path.isdir(d) for d in trial.dirs)
    trial.remove()
    made.close()
    os._exit(0 if still else 1)
_, status = os.waitpid(child, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_the_sweep_leaves_alone_a_live_agent_of_another_pid_namespace(tmp_path: Path) -> None:
    support = cgroups.probe()
    require(support)
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs unshare and root for a PID namespace of its own")
    # An agent in another container: its pid, here, is a pid nothing here has.
    pid = _unused_pid()
    parent = support.parents[0][1]
    before = set(_agent_folders(parent, pid))  # an earlier run's, killed: nobody here may sweep them either
    ready, go = tmp_path / "ready", tmp_path / "go"
    other = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-S", "-c",
                              AGENT_IN_ITS_OWN_PID_NAMESPACE, str(SOURCE.parent), str(ready), str(go), str(pid)])
    try:
        assert wait_for(ready) == str(pid)
        theirs = set(_agent_folders(parent, pid)) - before
        assert len(theirs) == 1
        here = Cgroups(support)
        here.trial().remove()  # the first trial sweeps the folders of dead agents
        try:
            assert theirs <= set(_agent_folders(parent, pid))  # not removed: its agent runs, elsewhere
        finally:
            go.write_text("go")
            here.close()
        assert other.wait(30) == 0  # its trial's cgroup was still there
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()


def test_the_sweep_removes_the_folders_of_dead_agents_and_of_reused_pids_of_this_namespace(tmp_path: Path) -> None:
    support = cgroups.probe()
    require(support)
    parent = support.parents[0][1]
    namespace = os.stat("/proc/self/ns/pid").st_ino
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        started = int(Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        dead = _unused_pid()
        names = {
            "dead": f"{cgroups.PREFIX}{dead}-t{started}-n{namespace}",
            "reused": f"{cgroups.PREFIX}{sleeper.pid}-t{started - 1}-n{namespace}",  # its pid, another process
            "live": f"{cgroups.PREFIX}{sleeper.pid}-t{started}-n{namespace}",
            "elsewhere": f"{cgroups.PREFIX}{dead}-t{started}-n{namespace + 1}",
        }
        for name in names.values():
            os.mkdir(os.path.join(parent, name))
            os.mkdir(os.path.join(parent, name, "trial-1"))
        try:
            here = Cgroups(support)
            here.trial().remove()
            here.close()
            left = {key for key, name in names.items() if os.path.isdir(os.path.join(parent, name))}
            assert left == {"live", "elsewhere"}
        finally:
            for name in names.values():
                for folder in (os.path.join(parent, name, "trial-1"), os.path.join(parent, name)):
                    if os.path.isdir(folder):
                        os.rmdir(folder)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_agents_starting_together_sweep_the_same_dead_folders_without_failing(tmp_path: Path) -> None:
    """Several agents on one host start at once (a fleet's workers, parallel experiments) and
    each sweeps the folders of dead agents: a folder another agent removes while this one reads
    it (the kernel then says ENODEV) is someone else's work done, never a reason to give up
    cgroups."""
    import threading

    support = cgroups.probe()
    require(support)
    namespace = os.stat("/proc/self/ns/pid").st_ino
    dead = _unused_pid(start=3000000)
    stale = [f"{cgroups.PREFIX}{dead}-t{k + 1}-n{namespace}" for k in range(40)]
    parents = sorted({parent for _, parent in support.parents})
    for _ in range(3):
        for parent in parents:
            for name in stale:
                try:
                    os.makedirs(os.path.join(parent, name, "trial-1", "nested"))
                except FileNotFoundError:  # an agent of another test swept it as it was made
                    pass
        start = threading.Barrier(4)
        failures: List[str] = []

        def agent() -> None:
            made = Cgroups(support)
            start.wait()
            try:
                made.trial().remove()
            except CgroupError as exc:
                failures.append(str(exc))
            finally:
                made.close()

        threads = [threading.Thread(target=agent) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        left = [os.path.join(parent, name) for parent in parents for name in stale if os.path.isdir(os.path.join(parent, name))]
        for folder in left:
            for sub in ("trial-1/nested", "trial-1", ""):
                if os.path.isdir(os.path.join(folder, sub)):
                    os.rmdir(os.path.join(folder, sub))
        assert failures == [] and left == []


# --------------------------------------------------------------------------------------------
# Failures and reasons


def test_a_cgroup_that_cannot_be_created_raises_cgroup_error(groups: Cgroups) -> None:
    trial = groups.trial()
    trial.remove()  # kept as the spare
    # Someone removes benchsage's folders mid-experiment.
    for _, base in groups.bases:
        for folder in sorted({os.path.join(base, n) for n in os.listdir(base) if n.startswith("trial-")}):
            os.rmdir(folder)
        if os.path.isdir(base):
            os.rmdir(base)
    with pytest.raises(CgroupError) as reused:
        groups.trial()
    with pytest.raises(CgroupError) as created:
        groups.trial()
    for caught in (reused.value, created.value):
        assert "\n" not in str(caught) and "No such file or directory" in str(caught)
        assert caught.errno == 2


def test_join_fails_with_the_kernels_oserror_when_the_cgroup_is_gone(groups: Cgroups) -> None:
    trial = groups.trial()
    trial_dirs = list(trial.dirs)
    trial.kill_all()
    for folder in trial_dirs:
        os.rmdir(folder)
    with pytest.raises(FileNotFoundError):
        trial.join()
    trial.remove()


def _probe_as(uid: int, root: str, proc_cgroup: str = cgroups.PROC_SELF_CGROUP) -> Support:
    """probe() in a child running as `uid` (this process's own when not root)."""
    if os.geteuid() != 0:
        return cgroups.probe(root, proc_cgroup)
    data = as_user(uid, uid, lambda: json.dumps(list(cgroups.probe(root, proc_cgroup))).encode())
    method, reason, parents = json.loads(data)
    return Support(method, reason, tuple(tuple(pair) for pair in parents))


def test_probe_as_an_unprivileged_user_on_this_host_says_why_and_what_enables_it() -> None:
    if not os.path.isdir("/sys/fs/cgroup"):
        pytest.skip("no /sys/fs/cgroup")
    found = _probe_as(65534, "/sys/fs/cgroup")
    if found.method:
        pytest.skip("this host delegates cgroups to unprivileged users: " + found.reason)
    assert "\n" not in found.reason and found.reason.startswith("no cgroups: ")
    assert any(why in found.reason for why in ("Permission denied", "not root", "holds other processes", "not delegated"))
    assert "to enable: " in found.reason and ("run the agent as root" in found.reason or "Delegate=yes" in found.reason)


def _fake_proc(tmp_path: Path, text: str) -> str:
    path = tmp_path / "proc-self-cgroup"
    path.write_text(text)
    return str(path)


def test_probe_of_an_absent_hierarchy(tmp_path: Path) -> None:
    found = cgroups.probe(str(tmp_path / "nothing"), _fake_proc(tmp_path, "0::/\n"))
    assert found.method is None and not found.available
    assert "no v1 memory hierarchy at %s" % (tmp_path / "nothing" / "memory") in found.reason
    assert "to enable: start the agent with `systemd-run --user --scope -p Delegate=yes" in found.reason


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary folder every user can reach (pytest's tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="benchsage-test-"))
    folder.chmod(0o755)
    yield folder
    for path in folder.rglob("*"):
        if path.is_dir():
            path.chmod(0o755)
    shutil.rmtree(folder)


def test_probe_of_an_unwritable_v1_hierarchy(open_tmp: Path) -> None:
    root = open_tmp / "cgroup"
    for controller, marker in (("memory", "memory.max_usage_in_bytes"), ("cpuacct", "cpuacct.usage")):
        (root / controller / "box").mkdir(parents=True)
        (root / controller / "box" / marker).write_text("0\n")
    for path in [root, *root.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    proc = _fake_proc(open_tmp, "4:memory:/box\n2:cpuacct:/box\n0::/\n")
    os.chmod(proc, 0o644)
    found = _probe_as(65534, str(root), proc)
    assert found.method is None
    assert "cannot make a cgroup in %s: Permission denied" % (root / "memory" / "box") in found.reason
    assert "to enable: run the agent as root" in found.reason


def test_probe_of_a_folder_that_is_not_a_cgroup(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    (root / "memory").mkdir(parents=True)
    (root / "cpuacct").mkdir()
    found = cgroups.probe(str(root), _fake_proc(tmp_path, "4:memory:/\n2:cpuacct:/\n"))
    assert found.method is None
    assert "%s is not a cgroup with memory.max_usage_in_bytes" % (root / "memory") in found.reason
    assert not list((root / "memory").iterdir())  # the probe's own folder is gone


def test_probe_of_a_v2_hierarchy_without_the_memory_controller(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu io pids\n")
    found = cgroups.probe(str(root), _fake_proc(tmp_path, "0::/\n"))
    assert found.method is None
    assert found.reason.startswith("no cgroups: v2: no memory controller in %s" % root)
    assert "; v1: no v1 memory hierarchy" in found.reason


def test_probe_of_an_agent_outside_the_mounted_hierarchy(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    for controller in ("memory", "cpuacct"):
        (root / controller).mkdir(parents=True)
    found = cgroups.probe(str(root), _fake_proc(tmp_path, "4:memory:/../elsewhere\n2:cpuacct:/\n"))
    assert found.method is None and "outside" in found.reason and "cgroup namespace" in found.reason


def test_probe_of_this_host() -> None:
    found = cgroups.probe()
    require(found)
    assert found.method in (cgroups.V1, cgroups.V2) and "\n" not in found.reason
    if found.method == cgroups.V1:
        assert {c for c, _ in found.parents} >= {"memory", "cpuacct"}
    assert not any(name.startswith(cgroups.PREFIX + "probe-") for _, p in found.parents for name in os.listdir(p))


def test_cgroups_refuse_a_support_without_a_method() -> None:
    with pytest.raises(CgroupError, match="no cgroups: not here"):
        Cgroups(Support(None, "not here", ()))


def test_own_cgroups_parses_v1_and_v2_lines() -> None:
    text = "12:cpu,cpuacct:/user.slice\n4:memory:/a/b\n1:name=systemd:/x\n0::/user.slice/s.scope\n"
    assert cgroups.own_cgroups(text) == {
        "cpu": "/user.slice", "cpuacct": "/user.slice", "memory": "/a/b", "name=systemd": "/x", "": "/user.slice/s.scope"}


# --------------------------------------------------------------------------------------------
# cgroup v2 on the real kernel: the unified hierarchy here may lack the memory controller (it
# sits in v1), so these check what v2 gives without it: joins, CPU time, cgroup.kill, removal.


def _v2_support() -> Support:
    unified = cgroups._unified_mount("/sys/fs/cgroup")
    own = cgroups.own_cgroups(Path("/proc/self/cgroup").read_text())
    found = cgroups._probe_v2(unified, own.get(""), need=()) if unified else "no cgroup v2 hierarchy"
    if isinstance(found, str):
        require(Support(None, "cgroup v2: " + found, ()))
    assert isinstance(found, Support)
    return found


def test_v2_trial_cpu_time_kill_and_removal(tmp_path: Path) -> None:
    support = _v2_support()
    made = Cgroups(support)
    try:
        trial = made.trial()
        loop = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"
        script = f"setsid sh -c '{loop}; echo $$ > busy.pid; exec sleep 1000' & exit 0"
        os.wait4(sh(trial, script, cwd=tmp_path), 0)
        sleeper = int(wait_for(tmp_path / "busy.pid"))
        assert trial.kill_all() == 1 and gone(sleeper)
        measured = trial.read()
        assert measured.cpu_time > 0.02
        trial.remove()
        assert not os.path.exists(trial.dirs[0])  # v2: never recycled
        # A cgroup that cannot be made: the kernel's limit on descendants.
        base = made.bases[0][1]
        Path(base, "cgroup.max.descendants").write_text("0")
        with pytest.raises(CgroupError, match="cannot create cgroup .*trial-2: Resource temporarily unavailable"):
            made.trial()
    finally:
        made.close()
    assert not any(ours(name) for name in os.listdir(support.parents[0][1]))


def test_v2_agent_in_a_subtree_of_its_own_moves_into_a_leaf_and_back() -> None:
    support = _v2_support()
    unified = support.parents[0][1]
    box = os.path.join(unified, "benchsage-test-%d" % os.getpid())
    os.mkdir(box)
    script = textwrap.dedent(f"""
        import os, sys
        import types
        sys.modules["benchsage"] = types.ModuleType("benchsage")  # as in the agent's bundle: the package holds nothing
        sys.modules["benchsage"].__path__ = [{str(SOURCE.parent)!r}]
        from benchsage.agent import cgroups
        with open({box + "/cgroup.procs"!r}, "w") as f:
            f.write("0")
        own = cgroups.own_cgroups(open("/proc/self/cgroup").read())[""]
        found = cgroups._probe_v2({unified!r}, own, need=())
        assert found.parents == (("unified", {box!r}),), found
        made = cgroups.Cgroups(found)
        trial = made.trial()
        moved = cgroups.own_cgroups(open("/proc/self/cgroup").read())[""]
        pid = os.fork()
        if pid == 0:
            trial.join()
            os.execv("/bin/true", ["true"])
        os.waitpid(pid, 0)
        trial.kill_all()
        trial.remove()
        made.close()
        back = cgroups.own_cgroups(open("/proc/self/cgroup").read())[""]
        print(own, moved, back)
        print([n for n in os.listdir({box!r}) if n.startswith("benchsage")])
    """)
    try:
        result = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True, timeout=60)
    finally:
        os.rmdir(box)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    own, moved, back = lines[0].split()
    assert own == back and moved.startswith(own + "/benchsage-") and moved.endswith("/agent")
    assert lines[1] == "[]"


# --------------------------------------------------------------------------------------------
# The agent's interpreters


@needs_python38
def test_the_lifecycle_runs_on_python_3_8_without_site_packages() -> None:
    script = textwrap.dedent(f"""
        import os, sys
        import types
        sys.modules["benchsage"] = types.ModuleType("benchsage")  # as in the agent's bundle: the package holds nothing
        sys.modules["benchsage"].__path__ = [{str(SOURCE.parent)!r}]
        from benchsage.agent import cgroups
        support = cgroups.probe()
        print(support.method)
        if support.method:
            made = cgroups.Cgroups(support)
            trial = made.trial()
            pid = os.fork()
            if pid == 0:
                trial.join()
                os.execv("/bin/true", ["true"])
            os.waitpid(pid, 0)
            print(trial.kill_all(), trial.read().cpu_time > 0)
            trial.remove()
            made.close()
        print("typing" in sys.modules)
    """)
    result = subprocess.run([str(PYTHON38), "-S", "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    if lines[0] != "None":
        assert lines[1] == "0 True"
    assert lines[-1] == "False"  # annotations only: the agent stays small
