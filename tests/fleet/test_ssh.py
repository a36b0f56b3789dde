"""ssh workers against real OpenSSH servers on 127.0.0.1: trials measured on the host, host keys
checked, verified reboots, lost and returning hosts, and resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import fleetprocs
from examplerepo import example_repository, tree_of
import pytest
from journalcheck import complete_and_unduplicated, rows, trials_so_far

from benchsage.errors import WorkerError, WorkerSetupError
from benchsage.execute.agentworker import AgentWorker
from benchsage.execute.transports import SshTransport
from benchsage.execute.worker import ProcessRequest


def trials_on(fleet, command: bytes) -> set[int]:
    """Live processes on the fleet's hosts whose command line holds `command` (other tests'
    processes, on other fleets or none, do not count)."""
    table = fleetprocs.process_table()
    return {pid for pid in fleet.processes() if pid in table and command in table[pid].cmdline}


def ssh_worker(fleet, host: str, **kw) -> AgentWorker:
    config = kw.pop("ssh_config", fleet.ssh_config)
    python = kw.pop("python", "python3")
    return AgentWorker(host, SshTransport(host, config, python), python=[python], boot_id_command=fleet.boot_id_command, **kw)


def test_trials_run_and_are_measured_on_the_host(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(1)
    with ssh_worker(fleet, "node1") as worker:
        worker.connect()
        r = worker.run(ProcessRequest("echo $BENCHSAGE_FAKE_HOST; echo e >&2; exit 3", str(tmp_path), timeout=10))
        assert (r.exit_status, r.stdout, r.stderr, r.spawn) == (3, b"node1\n", b"e\n", "shell")
        times = [worker.run(ProcessRequest("sleep 0.02", str(tmp_path))).wall_time for _ in range(10)]
        assert all(0.02 <= t < 0.5 for t in times)
        snap = worker.snapshot([], str(tmp_path), [("sh -c true", str(tmp_path))])
        assert snap["boot_id"] == fleet.boot_id("node1")
        assert snap["worker"] == "node1" and snap["transport"] == "ssh node1" and snap["files"]
        assert worker.run(ProcessRequest("sleep 5", str(tmp_path), timeout=0.2)).timed_out


def test_unknown_host_key_is_refused_with_what_to_do(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(1)
    config = tmp_path / "ssh_config"
    (tmp_path / "empty_known_hosts").write_text("")
    config.write_text(Path(fleet.ssh_config).read_text().replace(str(fleet.dir / "known_hosts"), str(tmp_path / "empty_known_hosts")))
    with pytest.raises(WorkerSetupError, match=r"worker node1: the host key of node1 is not known .*ssh-keyscan"):
        ssh_worker(fleet, "node1", ssh_config=str(config)).connect()
    assert (tmp_path / "empty_known_hosts").read_text() == ""  # nothing was added behind the user's back


def test_changed_host_key_is_refused(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    known = (fleet.dir / "known_hosts").read_text().splitlines()
    # node1's port recorded with node2's key: what a reinstalled (or impostor) host looks like
    port1 = known[0].split()[0]
    forged = tmp_path / "known_hosts"
    forged.write_text(f"{port1} {' '.join(known[1].split()[1:])}\n")
    config = tmp_path / "ssh_config"
    config.write_text(Path(fleet.ssh_config).read_text().replace(str(fleet.dir / "known_hosts"), str(forged)))
    with pytest.raises(WorkerSetupError, match=r"host key of node1 has CHANGED.*ssh-keygen -R"):
        ssh_worker(fleet, "node1", ssh_config=str(config)).connect()


def test_unreachable_host_and_missing_python(fake_fleet) -> None:
    fleet = fake_fleet(1)
    with pytest.raises(WorkerSetupError, match=r"cannot run '/no/such/python3' there.*set `python`"):
        ssh_worker(fleet, "node1", python="/no/such/python3").connect()
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(WorkerError, match=r"worker ghost: cannot reach 127.0.0.1 over ssh.*Connection refused") as info:
        AgentWorker("ghost", SshTransport(f"127.0.0.1:{port}", fleet.ssh_config), python=["python3"]).connect()
    assert not isinstance(info.value, WorkerSetupError)


# -- whole experiments through the command line --------------------------------------------------


def write_spec(tmp_path: Path, fleet, hosts: list[str], *, runs: int = 2, reset: str | None = None, reset_timeout: float = 30,
               reconnect: float = 20, test_command: str = "sleep 0.01", reset_kind: str = "reboot") -> Path:
    workers = "".join(
        f'[[worker]]\nkind = "ssh"\nhost = "{h}"\nssh_config = "{fleet.ssh_config}"\n'
        f"boot_id = '{fleet.boot_id_command}'\nreconnect_timeout = {reconnect}\n"
        for h in hosts
    )
    reset_part = ""
    if reset is not None:
        reset_part = f'[reset]\nkind = "{reset_kind}"\ncommand = "{reset}"\ntimeout = {reset_timeout}\n'
    text = (
        f'[experiment]\nname = "fleet"\nruns = {runs}\nseed = 5\n{reset_part}{workers}'
        f'[[test]]\nname = "a"\ncommand = "{test_command}"\n[[test]]\nname = "b"\ncommand = "true"\n'
    )
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return path


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fleet" / "experiment.toml"


def cli(*args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)





@pytest.mark.slow
def test_the_fleet_example_deploys_initializes_and_reboots_verified(fake_fleet, tmp_path: Path) -> None:
    """examples/fleet as the README runs it, at 2 runs per arm: the empty hosts get the commit
    and run init.sh once, then every run starts from a verified reboot."""
    fleet = fake_fleet(3)
    spec = example_repository(EXAMPLE, tmp_path / "repo", {'"fleet/ssh_config"': f'"{fleet.ssh_config}"',
                                                            "/tmp/benchsage-fleet-demo/": f"{tmp_path / 'hosts'}/"})
    done = cli("run", str(spec), "-o", "out", "--runs", "2", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    complete_and_unduplicated(out, 3, 2, 3)
    tree = tree_of(spec.parent)
    assert rows(out, "SELECT worker, tree FROM deploys ORDER BY worker") == [(h, tree) for h in ("node1", "node2", "node3")]
    assert rows(out, "SELECT worker, status FROM inits ORDER BY worker") == [(h, "ok") for h in ("node1", "node2", "node3")]
    corpora = {(tmp_path / "hosts" / h / "data" / "corpus.bin").read_bytes() for h in ("node1", "node2", "node3")}
    assert len(corpora) == 1 and len(corpora.pop()) == 1 << 20  # init.sh ran on every host, alike
    # Each worker carried out the whole plan: same fixed order, its own random orders.
    runs = rows(out, "SELECT worker, arm, test_order FROM runs ORDER BY id")
    assert Counter(w for w, _, _ in runs) == {"node1": 4, "node2": 4, "node3": 4}
    assert {o for _, arm, o in runs if arm == "fixed"} == {"[0, 1, 2]"}
    # Every run started from a verified reboot: a new boot id, recorded with its trials.
    resets = rows(out, "SELECT worker, reset_status, reset_stdout FROM attempts")
    assert len(resets) == 12 and all(status == "ok" and b" -> " in stdout for _, status, stdout in resets)
    boots = rows(out, "SELECT worker, run_id, COUNT(DISTINCT boot_id), MIN(boot_id) FROM trials GROUP BY run_id")
    assert all(n == 1 for _, _, n, _ in boots)
    for host in ("node1", "node2", "node3"):
        ids = [b for w, _, _, b in boots if w == host]
        assert len(set(ids)) == 4  # a different boot for every run
    assert {t["test"] for t in json.loads(done.stdout)["tests"]} == {"compress", "sort", "sleep"}


@pytest.mark.timing  # the last reconnect within the reset's 3 s must not time out
def test_reboot_that_does_not_reboot_fails_the_reset(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(1)
    spec = write_spec(tmp_path, fleet, ["node1"], reset="true", reset_timeout=3)
    done = cli("run", str(spec), "-o", "out", cwd=tmp_path)
    assert done.returncode == 3
    error = done.stderr.strip().splitlines()[-1]
    assert "worker node1: the host did not reboot before run 1" in error and "benchsage resume" in error
    assert "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.timing  # node1's reboot must be back within the reset's 4 s
def test_lost_host_stops_alone_and_resume_finishes(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    # node2's reboots never come back; node1 reboots normally.
    spec = write_spec(tmp_path, fleet, ["node1", "node2"], reset="BENCHSAGE_FAKE_DOWN=0.3 sh -c "
                      "'if [ $BENCHSAGE_FAKE_HOST = node2 ]; then exec " + fleet.reboot + " --stay-down; else exec " + fleet.reboot + "; fi'",
                      reset_timeout=4)
    done = cli("run", str(spec), "-o", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert "1 of 2 workers lost (node2: " in error and "did not come back within 4 s" in error
    out = tmp_path / "out"
    assert rows(out, "SELECT worker, COUNT(*) FROM runs WHERE status = 'done' GROUP BY worker") == [("node1", 4)]
    fleet.boot("node2")
    spec.write_text(spec.read_text())  # resume uses the journal's copy of the spec
    again = cli("resume", "out", cwd=tmp_path)
    # The journal's spec still sends node2 to --stay-down: its first reboot loses it again,
    # and nothing node1 measured is touched or redone.
    assert again.returncode == 3
    assert rows(out, "SELECT COUNT(*) FROM attempts WHERE worker = 'node1'") == [(4,)]


@pytest.mark.slow
def test_connection_cut_mid_trial_redoes_the_run(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(1)
    spec = write_spec(tmp_path, fleet, ["node1"], runs=2, test_command="sleep 0.4")
    proc = subprocess.Popen([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out", "--quiet"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    out = tmp_path / "out"
    deadline = time.monotonic() + 60
    while trials_so_far(out) < 3:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(0.1)  # inside a trial of `sleep 0.4`
    fleet.crash("node1")
    time.sleep(1.0)
    fleet.boot("node1")
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "reconnecting" in stderr
    complete_and_unduplicated(out, 1, 2, 2)
    assert rows(out, "SELECT COUNT(*) FROM attempts WHERE status = 'failed' AND detail LIKE 'connection lost%'") == [(1,)]


@pytest.mark.slow
def test_connection_cut_mid_reset_redoes_the_run_from_its_reset(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(1)
    spec = write_spec(tmp_path, fleet, ["node1"], runs=2, reset="sleep 0.8", reset_kind="command", test_command="sleep 0.001")
    proc = subprocess.Popen([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out", "--quiet"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    out = tmp_path / "out"
    deadline = time.monotonic() + 60

    def resetting() -> bool:  # the second run's attempt has started and its reset not yet ended
        try:
            return rows(out, "SELECT COUNT(*) FROM attempts WHERE reset_status IS NULL AND status = 'running'")[0][0] == 1 and \
                rows(out, "SELECT COUNT(*) FROM attempts")[0][0] == 2
        except sqlite3.Error:
            return False

    while not resetting():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()[1]
        time.sleep(0.02)
    time.sleep(0.2)  # inside `sleep 0.8`
    fleet.crash("node1")
    time.sleep(0.5)
    fleet.boot("node1")
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    complete_and_unduplicated(out, 1, 2, 2)
    cut = rows(out, "SELECT status, detail, reset_status FROM attempts WHERE status != 'done'")
    assert len(cut) == 1 and cut[0][0] == "failed" and cut[0][1].startswith("connection lost") and cut[0][2] is None
    assert rows(out, "SELECT COUNT(*) FROM attempts WHERE status = 'done' AND reset_status = 'ok'") == [(4,)]


@pytest.mark.slow
def test_a_remote_test_printing_gigabytes_keeps_only_its_tail(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(1)
    gigabytes = 3 * 10**9
    spec = write_spec(tmp_path, fleet, ["node1"], runs=1, test_command=f"head -c {gigabytes} /dev/zero; echo end")
    proc = subprocess.Popen([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out", "--quiet"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    peak = 0
    while proc.poll() is None:  # the controller's memory stays flat while gigabytes pass on the host
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            peak = max(peak, int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))))
        except (OSError, StopIteration):
            pass
        time.sleep(0.05)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    out = tmp_path / "out"
    got = rows(out, "SELECT exit_status, length(stdout_tail), stdout_bytes_dropped, substr(stdout_tail, -4) FROM trials t "
                    "JOIN tests s ON s.id = t.test_id WHERE s.name = 'a'")
    assert len(got) == 2
    for status, kept, dropped, end in got:
        assert status == 0 and end == b"end\n" and kept + dropped == gigabytes + 4 and kept < 10**6
    assert peak < 200 * 1024, f"controller RSS peaked at {peak} KiB"
    assert (out / "journal.sqlite").stat().st_size < 20 * 10**6


def test_kill_9_of_the_controller_leaves_nothing_running_and_resume_finishes(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    spec = write_spec(tmp_path, fleet, ["node1", "node2"], runs=2, test_command="sleep 0.3")
    proc = subprocess.Popen([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out", "--quiet"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    out = tmp_path / "out"
    deadline = time.monotonic() + 60
    while trials_so_far(out) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # The agents see their stdin close and kill their trials; only the hosts' sshd remain.
    deadline = time.monotonic() + 10
    while trials_on(fleet, b" sleep 0.3 "):
        assert time.monotonic() < deadline, "a trial outlived its controller"
        time.sleep(0.1)
    again = cli("resume", "out", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    complete_and_unduplicated(out, 2, 2, 2)


def test_the_example_fleet_spec_is_valid(tmp_path: Path) -> None:
    from benchsage.spec import load_spec

    (tmp_path / "fleet").mkdir()
    (tmp_path / "fleet" / "ssh_config").write_text("")  # what fakefleet.py start writes there
    (tmp_path / "experiment.toml").write_text(EXAMPLE.read_text())
    spec = load_spec(tmp_path / "experiment.toml")
    assert [w.name for w in spec.workers] == ["node1", "node2", "node3"]
    assert spec.reset is not None and spec.reset.kind == "reboot" and all(w.kind == "ssh" for w in spec.workers)
    assert [w.dir for w in spec.workers] == [f"/tmp/benchsage-fleet-demo/node{k}" for k in (1, 2, 3)]  # {worker}
    assert spec.deploy is not None and spec.deploy.source == "git" and spec.init is not None


@pytest.mark.cpu_latency
@pytest.mark.skipif(not os.access("/dev/cpu_dma_latency", os.W_OK), reason="needs a writable /dev/cpu_dma_latency (root)")
def test_the_cpu_latency_limit_is_held_again_after_every_verified_reboot(fake_fleet, tmp_path: Path) -> None:
    """The agent holds [experiment] cpu_latency for as long as it runs; a reboot ends it (and
    the limit with it): the agent the controller reconnects to holds it again before the run."""
    with open("/dev/cpu_dma_latency", "rb") as f:
        if int.from_bytes(f.read(4), "little", signed=True) != 2_000_000_000:
            pytest.skip("another process holds a CPU latency limit on this machine")
    fleet = fake_fleet(1)
    spec = write_spec(tmp_path, fleet, ["node1"], runs=1, reset=fleet.reboot, reset_timeout=30,
                      test_command="od -An -td4 /dev/cpu_dma_latency")
    spec.write_text(spec.read_text().replace("seed = 5\n", "seed = 5\ncpu_latency = 0\n").replace(
        'command = "od -An -td4 /dev/cpu_dma_latency"\n', 'command = "od -An -td4 /dev/cpu_dma_latency"\n'
        "[[test.metric]]\nname = \"limit\"\nregex = '(-?[0-9]+)'\n"))
    done = cli("run", str(spec), "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert rows(out, "SELECT COUNT(DISTINCT boot_id) FROM trials") == [(2,)]  # two runs, each after a verified reboot
    assert rows(out, "SELECT value, COUNT(*) FROM trial_values WHERE metric = 'limit' GROUP BY value") == [(0.0, 2)]
    with open("/dev/cpu_dma_latency", "rb") as f:
        assert int.from_bytes(f.read(4), "little", signed=True) == 2_000_000_000  # gone with the last agent
