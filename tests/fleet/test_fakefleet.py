"""The fake fleet itself (examples/fleet/fakefleet.py and fake-reboot), with real sshd and
real ssh: strict host keys, reboots that drop the connection and change the boot id, crashes
that take the session's daemons along, and nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import fakefleet
import fleetprocs

SCRIPT = Path(fakefleet.__file__)


def wait_until_up(fleet: fakefleet.Fleet, host: str, timeout: float = 10) -> subprocess.CompletedProcess:
    """Retry ssh until the host answers with its boot id (as a reconnecting controller would)."""
    deadline = time.monotonic() + timeout
    while True:
        done = fleet.ssh(host, fleet.boot_id_command, timeout=10)
        if done.returncode == 0 or time.monotonic() > deadline:
            return done
        time.sleep(0.05)


def tagged(fleet: fakefleet.Fleet) -> set[int]:
    """Every live process whose environment or command line mentions the fleet's folder: an
    independent check of what Fleet.processes() finds."""
    mark = str(fleet.dir).encode()
    return {p.pid for p in fleetprocs.process_table().values()
            if mark in p.cmdline or any(mark in entry for entry in p.environ)} - {os.getpid()}


def test_each_host_answers_as_itself_with_strict_host_keys(fake_fleet) -> None:
    fleet = fake_fleet(3)
    assert fleet.hosts == ["node1", "node2", "node3"]
    assert len({fleet.port(h) for h in fleet.hosts}) == 3
    assert len({fleet.boot_id(h) for h in fleet.hosts}) == 3
    config = Path(fleet.ssh_config).read_text()
    assert config.count("StrictHostKeyChecking yes") == config.count("BatchMode yes") == 3
    for host in fleet.hosts:
        done = subprocess.run(["ssh", "-F", fleet.ssh_config, host,
                               'echo $BENCHSAGE_FAKE_HOST; cat "$BENCHSAGE_FAKE_HOST_DIR/boot_id"'],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
        assert (done.returncode, done.stdout) == (0, f"{host}\n{fleet.boot_id(host)}\n"), done.stderr
    listeners = {fleet.sshd_pid(h) for h in fleet.hosts}
    deadline = time.monotonic() + 10
    while fleet.processes() != listeners and time.monotonic() < deadline:
        time.sleep(0.01)  # a session's sshd processes exit just after its client does
    assert fleet.processes() == listeners


def test_a_wrong_or_unknown_host_key_is_refused(fake_fleet) -> None:
    fleet = fake_fleet(2)
    known = Path(fleet.known_hosts)
    lines = known.read_text().splitlines()
    # node1 recorded with node2's key: what a reinstalled or impostor host looks like
    known.write_text(f"node1 {lines[1].split(maxsplit=1)[1]}\n{lines[1]}\n")
    done = fleet.ssh("node1", "true")
    assert done.returncode == 255 and "Host key verification failed" in done.stderr
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in done.stderr
    assert fleet.ssh("node2", "true").returncode == 0
    known.write_text(lines[1] + "\n")  # node1 unknown: refused, and nothing is added
    done = fleet.ssh("node1", "true")
    assert done.returncode == 255 and "Host key verification failed" in done.stderr
    assert known.read_text() == lines[1] + "\n"


def test_fake_reboot_drops_the_connection_and_comes_back_with_a_new_boot_id(fake_fleet) -> None:
    fleet = fake_fleet(2)
    before = fleet.boot_id("node1")
    t0 = time.monotonic()
    done = fleet.ssh("node1", f"{fleet.reboot} --down 0.3; echo returned; sleep 30; echo not-reached")
    dropped = time.monotonic() - t0
    assert done.returncode == 255 and done.stdout == "returned\n", done.stderr
    assert dropped < 5
    back = wait_until_up(fleet, "node1")
    assert back.returncode == 0 and back.stdout.strip() == fleet.boot_id("node1") != before
    assert fleet.boot_id("node2") == fleet.ssh("node2", fleet.boot_id_command).stdout.strip()
    assert not fleet.reboot_processes()
    assert "up again" in (fleet.dir / "node1" / "reboot.log").read_text()

    # --delay 0: the session dies before the reboot command can return; --keep-boot-id: a
    # host that comes back as if it had not rebooted.
    before = fleet.boot_id("node1")
    done = fleet.ssh("node1", f"{fleet.reboot} --delay 0 --down 0.2 --keep-boot-id; echo returned")
    assert done.returncode == 255 and done.stdout == ""
    assert wait_until_up(fleet, "node1").stdout.strip() == before


def test_stay_down_keeps_a_host_down_until_it_is_booted(fake_fleet) -> None:
    fleet = fake_fleet(2)
    fleet.set_reboot("node2", stay_down=True)  # whatever the command line says
    for host, command in (("node1", f"{fleet.reboot} --stay-down"), ("node2", f"BENCHSAGE_FAKE_DOWN=0.1 {fleet.reboot}")):
        before = fleet.boot_id(host)
        assert fleet.ssh(host, f"{command}; sleep 30").returncode == 255
        time.sleep(0.5)
        refused = fleet.ssh(host, "true")
        assert refused.returncode == 255 and "Connection refused" in refused.stderr
        assert not fleet.is_up(host) and not fleet.processes(host) and not fleet.reboot_processes(host)
        assert fleet.boot_id(host) != before
        fleet.boot(host)
        assert fleet.ssh(host, "echo $BENCHSAGE_FAKE_HOST").stdout == f"{host}\n"


def test_crash_kills_the_sessions_and_their_daemons_and_only_that_host(fake_fleet) -> None:
    fleet = fake_fleet(2)
    pidfile = fleet.dir / "daemon.pid"
    session = subprocess.Popen(
        fleet.ssh_argv("node1", f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' </dev/null >/dev/null 2>&1 & "
                                "echo started; exec sleep 300"),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert session.stdout.readline() == "started\n"
        deadline = time.monotonic() + 5
        while not pidfile.exists() or not pidfile.read_text().strip():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        daemon = int(pidfile.read_text())
        sshd = fleet.sshd_pid("node1")
        on_node1 = fleet.processes("node1")
        assert {daemon, sshd} < on_node1 and len(on_node1) >= 4  # + the connection's sshd and the shell
        assert fleet.processes("node2") == {fleet.sshd_pid("node2")}

        t0 = time.monotonic()
        fleet.crash("node1")
        assert time.monotonic() - t0 < 2
        assert not any(fleetprocs.alive(pid) for pid in on_node1)
        assert session.wait(timeout=10) == 255
        refused = fleet.ssh("node1", "true")
        assert refused.returncode == 255 and "Connection refused" in refused.stderr
        assert fleet.ssh("node2", "echo $BENCHSAGE_FAKE_HOST").stdout == "node2\n"

        before = fleet.boot_id("node1")
        fleet.boot("node1")
        assert fleet.ssh("node1", fleet.boot_id_command).stdout.strip() == fleet.boot_id("node1") != before
        fleet.crash("node1")
        fleet.boot("node1", new_boot_id=False)
        assert fleet.boot_id("node1") != before and fleet.ssh("node1", "true").returncode == 0
    finally:
        session.kill()
        session.wait()


def test_stop_leaves_nothing_behind_even_mid_reboot(fake_fleet) -> None:
    fleet = fake_fleet(3)
    sessions = [subprocess.Popen(fleet.ssh_argv(h, "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo up; exec sleep 300"),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                for h in ("node1", "node2")]
    try:
        assert [s.stdout.readline() for s in sessions] == ["up\n", "up\n"]
        fleet.ssh("node3", f"{fleet.reboot} --down 1")
        deadline = time.monotonic() + 5
        while fleet.is_up("node3"):  # node3 goes down, and would come back 1 s later
            assert time.monotonic() < deadline
            time.sleep(0.01)
        on_hosts = fleet.processes()  # per session: the connection's sshd, sleep, the daemon
        assert len(on_hosts) == 2 * (1 + 3) and fleet.reboot_processes("node3")
        seen = on_hosts | fleet.reboot_processes() | tagged(fleet)
        t0 = time.monotonic()
        fleet.stop()
        assert time.monotonic() - t0 < 5
        assert [s.wait(timeout=10) for s in sessions] == [255, 255]  # the ssh clients (in `seen`) end too
        assert not any(fleetprocs.alive(pid) for pid in seen)
        time.sleep(1.2)  # the cancelled reboot never brings node3 back
        assert not tagged(fleet) and not any(fleet.is_up(h) for h in fleet.hosts)
        assert fleet.ssh("node3", "true").returncode == 255
    finally:
        for s in sessions:
            s.kill()
            s.wait()


def test_command_line_start_crash_boot_stop(tmp_path: Path, fake_fleet) -> None:
    # fake_fleet only for its check that OpenSSH is installed: this fleet is the command line's
    directory = tmp_path / "fleet"

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=60)

    started = cli("start", str(directory), "--hosts", "2")
    try:
        assert started.returncode == 0, started.stderr
        assert f"ssh config: {directory / 'ssh_config'}" in started.stdout
        assert "node1" in started.stdout and "node2" in started.stdout
        assert cli("start", str(directory)).returncode == 2  # not over a running fleet
        fleet = fakefleet.Fleet(directory)
        assert fleet.ssh("node2", "echo $BENCHSAGE_FAKE_HOST").stdout == "node2\n"
        assert cli("crash", str(directory), "node2").returncode == 0
        assert "down" in cli("status", str(directory)).stdout.splitlines()[1]
        assert cli("boot", str(directory), "node2").returncode == 0
        assert fleet.ssh("node2", "echo $BENCHSAGE_FAKE_HOST").stdout == "node2\n"
        bad = cli("crash", str(directory), "node9")
        assert bad.returncode == 2 and "no host 'node9'" in bad.stderr
    finally:
        stopped = cli("stop", str(directory))
    assert stopped.returncode == 0, stopped.stderr
    assert not tagged(fleet)
    # a stopped fleet starts again: the same host keys, so known_hosts still holds; new boot ids
    before = fleet.boot_id("node1")
    again = cli("start", str(directory), "--hosts", "2")
    try:
        assert again.returncode == 0, again.stderr
        assert fleet.ssh("node1", fleet.boot_id_command).stdout.strip() == fleet.boot_id("node1") != before
    finally:
        fleet.stop()
    assert not tagged(fleet)
