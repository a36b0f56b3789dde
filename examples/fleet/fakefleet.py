#!/usr/bin/env python3
"""A fake fleet for trying benchsage's fleet experiments on one machine, and for its tests:
one real OpenSSH server per fake host on 127.0.0.1, each with its own host key, port and boot
id, and crashes and reboots that really drop the connections.

    python3 examples/fleet/fakefleet.py start DIR --hosts 3
    ssh -F DIR/ssh_config node1 'echo $BENCHSAGE_FAKE_HOST; cat "$BENCHSAGE_FAKE_HOST_DIR/boot_id"'
    python3 examples/fleet/fakefleet.py stop DIR

Sessions on fake host nodeK have BENCHSAGE_FAKE_HOST=nodeK and BENCHSAGE_FAKE_HOST_DIR=DIR/nodeK
in their environment (sshd's SetEnv; their children inherit them). That tag is how crash,
reboot and stop find every process of a host, daemons a session detached with setsid
included; with the host's sshd (found by its command line) and everything below both.
Stdlib only (Python 3.8+), importable: start(), Fleet, stop(), crash(), boot().
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import getpass
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import List, Optional, Set

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from fleetprocs import (  # noqa: E402
    SAFE_PATH, FleetError, Process, env_entry, kill_all, alive, read_json, select, spawn_detached, write_atomic,
)

SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = "/run/sshd"
HOST_DIR_VAR = "BENCHSAGE_FAKE_HOST_DIR"   # DIR/nodeK, in every session process of nodeK
HOST_NAME_VAR = "BENCHSAGE_FAKE_HOST"      # nodeK, in sessions
REBOOT_VAR = "BENCHSAGE_FAKE_REBOOT_OF"    # DIR/nodeK, in the process that reboots nodeK
STATE_FILE = "fleet.json"
LOCK_FILE = "fleet.lock"
REBOOT_OPTIONS_FILE = "reboot.json"
BOOT_ID_COMMAND = 'cat "$BENCHSAGE_FAKE_HOST_DIR/boot_id"'
FAKE_REBOOT = HERE / "fake-reboot"


# ---------------------------------------------------------------------------------------------
# Files of a fleet.


def _free_port(taken: Set[int]) -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in taken:
            return port


def _quote(value: object) -> str:
    """A value for ssh_config / sshd_config, quoted so paths with spaces stay one argument."""
    text = str(value)
    if '"' in text:
        raise FleetError("paths with a double quote are not supported: %s" % text)
    return '"%s"' % text


def _keygen(path: Path, comment: str) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL, capture_output=True)


@functools.lru_cache(maxsize=None)
def _sshd_version() -> tuple:
    done = subprocess.run([SSHD, "-V"], capture_output=True, text=True)
    found = re.search(r"OpenSSH_(\d+)\.(\d+)", done.stdout + done.stderr)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def _new_boot_id(host_dir: Path) -> str:
    boot_id = str(uuid.uuid4())
    write_atomic(host_dir / "boot_id", boot_id + "\n")
    return boot_id


class _Locked:
    """The fleet's lock: every change of a host's state (sshd up or down) holds it."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE

    def __enter__(self) -> "_Locked":
        self.fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


class Fleet:
    """A fake fleet in a folder that start() prepared. Files in the folder:

    ssh_config, known_hosts, client_key(.pub), authorized_keys, fleet.json (state: ports and
    sshd pids), fleet.lock; per host nodeK/: ssh_host_ed25519_key(.pub), sshd_config,
    sshd.pid, sshd.log, boot_id, reboot.log, and reboot.json if set_reboot() was used.
    """

    def __init__(self, directory: "os.PathLike[str] | str") -> None:
        self.dir = Path(directory).resolve()
        if not (self.dir / STATE_FILE).is_file():
            raise FleetError("%s holds no fake fleet (no %s); start one with: %s start %s"
                             % (self.dir, STATE_FILE, Path(__file__).name, self.dir))

    # -- what it is ------------------------------------------------------------------------

    # Paths that go into command lines and specs are strings.
    @property
    def ssh_config(self) -> str:
        return str(self.dir / "ssh_config")

    @property
    def known_hosts(self) -> str:
        return str(self.dir / "known_hosts")

    reboot = str(FAKE_REBOOT)             # a spec's reboot command on these hosts
    boot_id_command = BOOT_ID_COMMAND     # a spec's worker key boot_id on these hosts

    @property
    def hosts(self) -> List[str]:
        return list(self._state()["hosts"])

    def host_dir(self, host: str) -> Path:
        self._check(host)
        return self.dir / host

    def port(self, host: str) -> int:
        return int(self._state()["hosts"][self._check(host)]["port"])

    def boot_id(self, host: str) -> str:
        return (self.host_dir(host) / "boot_id").read_text().strip()

    def sshd_pid(self, host: str) -> Optional[int]:
        """The pid of the host's sshd if it is up, else None."""
        pid = self._state()["hosts"][self._check(host)]["sshd_pid"]
        return pid if pid is not None and alive(pid) else None

    def is_up(self, host: str) -> bool:
        return self.sshd_pid(host) is not None

    def processes(self, host: Optional[str] = None) -> Set[int]:
        """Live pids of a host (all hosts if None): its sshd, sessions, and their daemons."""
        hosts = [self._check(host)] if host else self.hosts
        tags = {env_entry(HOST_DIR_VAR, str(self.dir / h)) for h in hosts}
        listeners = [(" -f %s " % (self.dir / h / "sshd_config")).encode() for h in hosts]

        def match(p: Process) -> bool:
            return bool(p.environ & tags) or any(mark in p.cmdline for mark in listeners)
        # sshd writes its process title over the memory /proc/PID/environ shows, so its own
        # processes lose the tag: the listener is found by its command line (which names its
        # sshd_config), a connection's sshd processes as the parents of its tagged session.
        return select(match, climb=b"sshd")

    def reboot_processes(self, host: Optional[str] = None) -> Set[int]:
        """Pids of fake reboots still under way (going down, down, or coming back)."""
        hosts = [self._check(host)] if host else self.hosts
        return self._reboots(hosts)

    def ssh_argv(self, host: str, command: Optional[str] = None) -> List[str]:
        argv = ["ssh", "-F", self.ssh_config, self._check(host)]
        return argv + [command] if command is not None else argv

    def ssh(self, host: str, command: str, timeout: float = 30, **kwargs: object) -> subprocess.CompletedProcess:
        """Run `command` on `host` over ssh; stdout and stderr captured as text."""
        if "input" not in kwargs:
            kwargs.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run(self.ssh_argv(host, command), capture_output=True, text=True,
                              timeout=timeout, **kwargs)

    # -- what happens to it ----------------------------------------------------------------

    def crash(self, host: str) -> None:
        """Power cut: SIGKILL the host's sshd and every process of its sessions (a reboot under
        way is cancelled too). The host stays down until boot()."""
        with _Locked(self.dir):
            self._kill_reboots([host])
            kill_all(lambda: self.processes(host))
            self._set_pid(host, None)

    def boot(self, host: str, new_boot_id: bool = True) -> None:
        """Start a host that is down (same host key and port); a new boot id unless told not
        to. A reboot of it still under way is cancelled."""
        with _Locked(self.dir):
            self._kill_reboots([host])
            if self.is_up(host):
                raise FleetError("%s is up (sshd pid %s); crash it first" % (host, self.sshd_pid(host)))
            if new_boot_id:
                _new_boot_id(self.host_dir(host))
            self._start_sshds([host])

    def set_reboot(self, host: str, down: Optional[float] = None, stay_down: Optional[bool] = None,
                   keep_boot_id: Optional[bool] = None, delay: Optional[float] = None) -> None:
        """How fake-reboot behaves on this host from now on, whatever its command line says
        (so one spec-wide reboot command can fail on one host only). None: no override."""
        options = {k: v for k, v in (("down", down), ("stay_down", stay_down),
                                     ("keep_boot_id", keep_boot_id), ("delay", delay)) if v is not None}
        path = self.host_dir(host) / REBOOT_OPTIONS_FILE
        if options:
            write_atomic(path, json.dumps(options) + "\n")
        elif path.exists():
            path.unlink()

    def stop(self, grace: float = 1.0) -> None:
        """Stop the whole fleet: reboots under way, every sshd, every session process and
        their daemons (SIGTERM, then SIGKILL after `grace` seconds); returns when all are gone."""
        with _Locked(self.dir):
            hosts = self.hosts
            self._kill_reboots(hosts)
            kill_all(lambda: self.processes(), grace=grace)
            for host in hosts:
                self._set_pid(host, None)

    # -- inside ----------------------------------------------------------------------------

    def _state(self) -> dict:
        return read_json(self.dir / STATE_FILE)

    def _save(self, state: dict) -> None:
        write_atomic(self.dir / STATE_FILE, json.dumps(state, indent=2) + "\n")

    def _check(self, host: str) -> str:
        if host not in self._state()["hosts"]:
            raise FleetError("no host %r in the fleet at %s (hosts: %s)" % (host, self.dir, ", ".join(self.hosts)))
        return host

    def _set_pid(self, host: str, pid: Optional[int]) -> None:
        state = self._state()
        state["hosts"][host]["sshd_pid"] = pid
        self._save(state)

    def _reboots(self, hosts: List[str]) -> Set[int]:
        tags = {env_entry(REBOOT_VAR, str(self.dir / h)) for h in hosts}
        return select(lambda p: bool(p.environ & tags))

    def _kill_reboots(self, hosts: List[str], keep: Optional[int] = None) -> None:
        kill_all(lambda: self._reboots(hosts) - {keep})

    def _write_sshd_config(self, host: str, port: int) -> None:
        d = self.dir / host
        lines = [
            "# sshd of fake host %s; written by %s" % (host, Path(__file__).name),
            "ListenAddress 127.0.0.1",
            "Port %d" % port,
            "HostKey %s" % _quote(d / "ssh_host_ed25519_key"),
            "PidFile %s" % _quote(d / "sshd.pid"),
            "AuthorizedKeysFile %s" % _quote(self.dir / "authorized_keys"),
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PrintMotd no",
            "PrintLastLog no",
            "MaxStartups 100",
            "LogLevel VERBOSE",
            "Subsystem sftp internal-sftp",
            "SetEnv %s %s" % (_quote("%s=%s" % (HOST_NAME_VAR, host)), _quote("%s=%s" % (HOST_DIR_VAR, d))),
        ]
        if _sshd_version() >= (9, 8):
            # Newer sshd blocks a source address that keeps dropping connections, which is
            # what crashes, reboots and reconnecting clients do here all the time.
            lines.append("PerSourcePenalties no")
        write_atomic(d / "sshd_config", "\n".join(lines) + "\n")

    def _write_client_files(self, state: dict) -> None:
        user = getpass.getuser()
        known, config = [], ["# ssh -F %s HOST: the fake fleet's hosts" % self.ssh_config, ""]
        for host, info in state["hosts"].items():
            key_type, key = (self.dir / host / "ssh_host_ed25519_key.pub").read_text().split()[:2]
            known.append("%s %s %s" % (host, key_type, key))
            config += [
                "Host %s" % host,
                "    HostName 127.0.0.1",
                "    Port %d" % info["port"],
                "    User %s" % user,
                "    HostKeyAlias %s" % host,
                "    IdentityFile %s" % _quote(self.dir / "client_key"),
                "    IdentitiesOnly yes",
                "    UserKnownHostsFile %s" % _quote(self.known_hosts),
                "    GlobalKnownHostsFile /dev/null",
                "    StrictHostKeyChecking yes",
                "    UpdateHostKeys no",
                "    BatchMode yes",
                "    LogLevel ERROR",
                "",
            ]
        write_atomic(self.known_hosts, "\n".join(known) + "\n")
        write_atomic(self.ssh_config, "\n".join(config))

    def _start_sshds(self, hosts: List[str], pick_ports: bool = False) -> None:
        """Start the sshd of each host (the caller holds the lock) and wait until each listens.
        With pick_ports, a host whose port was taken meanwhile gets another one."""
        if os.geteuid() == 0:
            os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        elif not os.path.isdir(PRIVSEP_DIR):
            raise FleetError("sshd needs %s; create it as root: mkdir -p %s" % (PRIVSEP_DIR, PRIVSEP_DIR))
        state = self._state()
        for _ in range(5):
            jobs, logged = [], {}
            for host in hosts:
                d = self.dir / host
                (d / "sshd.pid").unlink(missing_ok=True)
                logged[host] = (d / "sshd.log").stat().st_size if (d / "sshd.log").exists() else 0
                jobs.append({"argv": [SSHD, "-D", "-f", str(d / "sshd_config"), "-E", str(d / "sshd.log")],
                             "env": {"PATH": SAFE_PATH}, "log": str(d / "sshd.log")})
            failed = []
            for host, pid in zip(hosts, spawn_detached(jobs)):
                if self._wait_listening(host, pid):
                    state["hosts"][host]["sshd_pid"] = pid
                else:
                    failed.append(host)
            self._save(state)
            if not failed:
                return
            with open(self.dir / failed[0] / "sshd.log", "rb") as f:
                f.seek(logged[failed[0]])
                log = f.read().decode(errors="replace")
            if not (pick_ports and "Address already in use" in log):
                raise FleetError("sshd of %s did not start; the end of %s:\n%s"
                                 % (failed[0], self.dir / failed[0] / "sshd.log", log[-2000:]))
            taken = {info["port"] for info in state["hosts"].values()}
            for host in failed:
                state["hosts"][host]["port"] = _free_port(taken)
                taken.add(state["hosts"][host]["port"])
                self._write_sshd_config(host, state["hosts"][host]["port"])
            self._save(state)
            self._write_client_files(state)
            hosts = failed
        raise FleetError("no free port for %s after 5 tries" % ", ".join(hosts))

    def _wait_listening(self, host: str, pid: int, timeout: float = 30.0) -> bool:
        """sshd writes its pid file once its socket listens; False if it exited instead, or did
        not write it within `timeout` (generous: a machine busy with real-time work, as the
        test suite's timing tests are, can keep a starting sshd off the CPUs for seconds)."""
        pidfile = self.dir / host / "sshd.pid"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if int(pidfile.read_text()) == pid:
                    return True
            except (OSError, ValueError):
                pass
            if not alive(pid):
                return False
            time.sleep(0.002)
        kill_all(lambda: {pid} if alive(pid) else set())
        return False


def start(directory: "os.PathLike[str] | str", hosts: Optional[int] = None) -> Fleet:
    """Create a fleet of `hosts` (default 3) fake hosts node1..nodeN in `directory` (absent or
    empty), start their sshd on free ports of 127.0.0.1, and return once every one listens. A
    folder holding a stopped fleet is started again (same keys, and ports if free; new boot ids)."""
    for tool in (SSHD, "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            raise FleetError("%s is missing; install Debian's openssh-server and openssh-client" % tool)
    d = Path(directory).resolve()
    if (d / STATE_FILE).is_file():
        return _restart(Fleet(d), hosts)
    hosts = 3 if hosts is None else hosts
    if hosts < 1:
        raise FleetError("a fleet needs at least one host")
    if d.exists() and any(d.iterdir()):
        raise FleetError("%s is not empty; start a fleet in a new folder" % d)
    d.mkdir(parents=True, exist_ok=True)
    _keygen(d / "client_key", "benchsage-fakefleet-client")
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    state: dict = {"dir": str(d), "hosts": {}}
    taken: Set[int] = set()
    for k in range(1, hosts + 1):
        host = "node%d" % k
        (d / host).mkdir()
        _keygen(d / host / "ssh_host_ed25519_key", host)
        _new_boot_id(d / host)
        port = _free_port(taken)
        taken.add(port)
        state["hosts"][host] = {"port": port, "sshd_pid": None}
    write_atomic(d / STATE_FILE, json.dumps(state, indent=2) + "\n")
    fleet = Fleet(d)
    for host, info in state["hosts"].items():
        fleet._write_sshd_config(host, info["port"])
    fleet._write_client_files(state)
    try:
        with _Locked(d):
            fleet._start_sshds(list(state["hosts"]), pick_ports=True)
    except BaseException:
        fleet.stop(grace=0)
        raise
    return fleet


def _restart(fleet: Fleet, hosts: Optional[int]) -> Fleet:
    """Start a stopped fleet again: same host keys (known_hosts stays valid), new boot ids."""
    if hosts is not None and len(fleet.hosts) != hosts:
        raise FleetError("%s holds a fleet of %d hosts; start it with --hosts %d, or use a new folder"
                         % (fleet.dir, len(fleet.hosts), len(fleet.hosts)))
    with _Locked(fleet.dir):
        if fleet.processes() or fleet.reboot_processes():
            raise FleetError("the fleet in %s is running; stop it first" % fleet.dir)
        for host in fleet.hosts:
            _new_boot_id(fleet.dir / host)
        fleet._start_sshds(fleet.hosts, pick_ports=True)
    return fleet


def stop(directory: "os.PathLike[str] | str") -> None:
    Fleet(directory).stop()


def crash(directory: "os.PathLike[str] | str", host: str) -> None:
    Fleet(directory).crash(host)


def boot(directory: "os.PathLike[str] | str", host: str, new_boot_id: bool = True) -> None:
    Fleet(directory).boot(host, new_boot_id)


def host_processes(directory: "os.PathLike[str] | str", host: str) -> Set[int]:
    return Fleet(directory).processes(host)


# ---------------------------------------------------------------------------------------------
# The fake reboot: fake-reboot (in a session on the host) starts a detached process that
# takes the host down, writes a new boot id, waits, and starts its sshd again.


def _reboot_options(argv: List[str], host_dir: Path) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="fake-reboot",
        description="Reboot the fake host this session runs on, like `sudo reboot`: return at once, "
                    "then its sshd and every session process die (connections drop), a new boot id is "
                    "written, and after the down time its sshd starts again on the same port with the "
                    "same host key. Options in the host's reboot.json (Fleet.set_reboot) win.")
    p.add_argument("--down", type=float, default=float(os.environ.get("BENCHSAGE_FAKE_DOWN", 1.0)),
                   help="seconds the host stays down (env BENCHSAGE_FAKE_DOWN; default 1)")
    p.add_argument("--delay", type=float, default=float(os.environ.get("BENCHSAGE_FAKE_DELAY", 0.1)),
                   help="seconds between returning and going down (env BENCHSAGE_FAKE_DELAY; default "
                        "0.1; 0: the session is killed before this command returns)")
    p.add_argument("--stay-down", action="store_true", help="the host never comes back")
    p.add_argument("--keep-boot-id", action="store_true",
                   help="come back with the same boot id (a reboot that did not really happen)")
    options = p.parse_args(argv)
    override = host_dir / REBOOT_OPTIONS_FILE
    if override.exists():
        for key, value in json.loads(override.read_text()).items():
            setattr(options, key, value)
    return options


def fake_reboot_main(argv: List[str]) -> int:
    """fake-reboot's command line: run inside an ssh session of a fake host."""
    where = os.environ.get(HOST_DIR_VAR)
    if not where or not (Path(where) / "sshd_config").is_file():
        print("fake-reboot: not on a fake host (%s is not set in this session); run it over ssh on "
              "a host of a fleet that fakefleet.py started" % HOST_DIR_VAR, file=sys.stderr)
        return 2
    host_dir = Path(where)
    options = _reboot_options(argv, host_dir)
    argv = [sys.executable, str(Path(__file__).resolve()), "_reboot", str(host_dir),
            "--down", repr(options.down), "--delay", repr(options.delay)]
    argv += ["--stay-down"] * bool(options.stay_down) + ["--keep-boot-id"] * bool(options.keep_boot_id)
    spawn_detached([{"argv": argv, "env": {"PATH": SAFE_PATH, REBOOT_VAR: str(host_dir)},
                      "log": str(host_dir / "reboot.log")}])
    if options.delay <= 0:
        # Like a reboot that kills its own session before it can return: wait for it to come
        # (on a busy machine the detached half may take seconds to start), never return first.
        time.sleep(120)
    return 0


def _reboot(host_dir: Path, down: float, delay: float, stay_down: bool, keep_boot_id: bool) -> None:
    """The detached half of a fake reboot (not tagged as the host's, so it survives it)."""
    fleet, host = Fleet(host_dir.parent), host_dir.name
    time.sleep(delay)
    t0 = time.monotonic()
    with _Locked(fleet.dir):
        fleet._kill_reboots([host], keep=os.getpid())  # a newer reboot wins
        kill_all(lambda: fleet.processes(host))
        fleet._set_pid(host, None)
        if not keep_boot_id:
            _new_boot_id(host_dir)
    print("%s: down after %.3f s%s" % (host, time.monotonic() - t0, ", staying down" if stay_down else ""), flush=True)
    if stay_down:
        return
    time.sleep(down)
    with _Locked(fleet.dir):
        fleet._start_sshds([host])
    print("%s: up again, boot id %s" % (host, fleet.boot_id(host)), flush=True)


# ---------------------------------------------------------------------------------------------


def _print_status(fleet: Fleet) -> None:
    for host in fleet.hosts:
        pid = fleet.sshd_pid(host)
        print("  %-8s 127.0.0.1:%-5d %-18s boot id %s" % (
            host, fleet.port(host), "sshd pid %d" % pid if pid else "down", fleet.boot_id(host)))


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start", help="create and start a fleet in DIR (absent or empty), or start a stopped one again")
    s.add_argument("dir")
    s.add_argument("--hosts", type=int, help="how many hosts (default 3; a stopped fleet: as many as it had)")
    sub.add_parser("stop", help="stop every process of the fleet").add_argument("dir")
    sub.add_parser("status", help="which hosts are up").add_argument("dir")
    c = sub.add_parser("crash", help="power cut: kill a host's sshd and sessions; it stays down")
    c.add_argument("dir")
    c.add_argument("host")
    b = sub.add_parser("boot", help="start a host that is down")
    b.add_argument("dir")
    b.add_argument("host")
    b.add_argument("--keep-boot-id", action="store_true", help="keep the boot id (default: a new one)")
    r = sub.add_parser("_reboot")  # started by fake-reboot
    r.add_argument("host_dir")
    r.add_argument("--down", type=float, required=True)
    r.add_argument("--delay", type=float, required=True)
    r.add_argument("--stay-down", action="store_true")
    r.add_argument("--keep-boot-id", action="store_true")
    a = p.parse_args(argv)
    try:
        if a.command == "start":
            t0 = time.monotonic()
            fleet = start(a.dir, a.hosts)
            print("started %d fake hosts in %.2f s (%s):" % (len(fleet.hosts), time.monotonic() - t0, fleet.dir))
            _print_status(fleet)
            print("ssh config: %s" % fleet.ssh_config)
            print("try:  ssh -F %s %s 'echo $BENCHSAGE_FAKE_HOST; cat \"$BENCHSAGE_FAKE_HOST_DIR/boot_id\"'"
                  % (fleet.ssh_config, fleet.hosts[0]))
            print("stop: python3 %s stop %s" % (Path(__file__).resolve(), fleet.dir))
        elif a.command == "stop":
            Fleet(a.dir).stop()
            print("stopped the fleet in %s" % Path(a.dir).resolve())
        elif a.command == "status":
            _print_status(Fleet(a.dir))
        elif a.command == "crash":
            Fleet(a.dir).crash(a.host)
        elif a.command == "boot":
            Fleet(a.dir).boot(a.host, new_boot_id=not a.keep_boot_id)
        elif a.command == "_reboot":
            _reboot(Path(a.host_dir), a.down, a.delay, a.stay_down, a.keep_boot_id)
    except FleetError as e:
        print("fakefleet: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
