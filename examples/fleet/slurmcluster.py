#!/usr/bin/env python3
"""A real Slurm cluster on this machine, for trying benchsage's Slurm workers and for its
tests: a private munged, slurmctld, and one slurmd per node, all on 127.0.0.1, as root,
without systemd (Debian's slurmctld, slurmd, slurm-client and munge).

    python3 examples/fleet/slurmcluster.py start DIR --nodes 2
    export SLURM_CONF=DIR/slurm.conf
    srun --nodelist=c1 -N1 -n1 hostname
    python3 examples/fleet/slurmcluster.py stop DIR

Every daemon is started with DIR's slurm.conf on its command line and SLURM_CONF in its
environment; slurmstepd (re-parented to init) keeps its node's log file in DIR open; tasks
inherit SLURM_CONF from srun. That is how stop and crash find this cluster's processes, and
only them. Stdlib only (Python 3.8+), importable: start(), Cluster, stop(), crash(), boot().
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Set

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from fleetprocs import (  # noqa: E402
    SAFE_PATH, FleetError, Process, alive, env_entry, kill_all, read_json, select, spawn_detached, write_atomic,
)

MUNGED = "/usr/sbin/munged"
SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
STATE_FILE = "cluster.json"
PARTITION = "bench"
HARDWARE = ("c220g2", "m510")  # the Features of nodes c1, c3, ... and c2, c4, ...


def _free_ports(n: int) -> List[int]:
    socks = []
    try:
        for _ in range(n):  # held open together, so they differ
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _world_reachable(folder: Path) -> bool:
    """munged refuses a socket unless every folder above it is executable by all."""
    for d in [folder, *folder.parents]:
        if not os.stat(d).st_mode & stat.S_IXOTH:
            return False
    return True


class Cluster:
    """A Slurm cluster in a folder that start() prepared. Files in the folder: slurm.conf,
    cluster.json (state: ports and pids), munge/munge.key (folder 0700), the munge socket
    (munge-socket/munge.socket, or in a /tmp/benchsage-munge-* folder when a folder above DIR
    is not world-executable), state/ (slurmctld), spool/NODE/, log/ (slurmctld.log,
    slurmd.NODE.log, munged.log), run/ (pid files)."""

    def __init__(self, directory: "os.PathLike[str] | str") -> None:
        self.dir = Path(directory).resolve()
        if not (self.dir / STATE_FILE).is_file():
            raise FleetError("%s holds no Slurm cluster (no %s); start one with: %s start %s"
                             % (self.dir, STATE_FILE, Path(__file__).name, self.dir))

    @property
    def conf(self) -> str:
        """The slurm.conf: export SLURM_CONF=this for srun, sinfo, scancel."""
        return str(self.dir / "slurm.conf")

    @property
    def nodes(self) -> List[str]:
        return list(self._state()["nodes"])

    @property
    def partition(self) -> str:
        return PARTITION

    def env(self, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        """An environment for Slurm's commands: `base` (default: this process's) with SLURM_CONF."""
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = self.conf
        return env

    def run(self, argv: List[str], timeout: float = 60, **kwargs: object) -> subprocess.CompletedProcess:
        """Run a Slurm command (srun, sinfo, ...) against this cluster; output captured as text."""
        if "input" not in kwargs:
            kwargs.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run(argv, env=self.env(), capture_output=True, text=True, timeout=timeout, **kwargs)

    def node_states(self) -> Dict[str, str]:
        """Node -> state as sinfo prints it (idle, alloc, down*, ...); {} if slurmctld does not answer."""
        done = self.run(["sinfo", "-h", "-N", "-o", "%N %t"], timeout=30)
        if done.returncode != 0:
            return {}
        return dict(line.split() for line in done.stdout.splitlines() if line.strip())

    def slurmd_pid(self, node: str) -> Optional[int]:
        pid = self._state()["nodes"][self._check(node)]["pid"]
        return pid if pid is not None and alive(pid) else None

    def processes(self) -> Set[int]:
        """Live pids of the cluster: munged, slurmctld, every slurmd and slurmstepd, and every
        process of its jobs (srun clients started with its SLURM_CONF included)."""
        state = self._state()
        marks = [(" %s " % self.conf).encode(), (" -S %s " % state["munge_socket"]).encode()]
        tag = env_entry("SLURM_CONF", self.conf)
        inside = str(self.dir) + "/"

        def match(p: Process) -> bool:
            return (tag in p.environ or any(m in p.cmdline for m in marks)
                    or p.comm == b"slurmstepd" and any(f.startswith(inside) for f in p.open_files()))
        return select(match)

    def node_processes(self, node: str) -> Set[int]:
        """Live pids of one node: its slurmd, its slurmstepd processes and their tasks."""
        self._check(node)
        marks = [(" -N %s -f %s " % (node, self.conf)).encode()]
        log = str(self.dir / "log" / ("slurmd.%s.log" % node))
        tags = {env_entry("SLURM_CONF", self.conf), env_entry("SLURMD_NODENAME", node)}

        def match(p: Process) -> bool:
            return (tags <= p.environ or any(m in p.cmdline for m in marks)
                    or p.comm == b"slurmstepd" and log in p.open_files())
        return select(match)

    def crash(self, node: str) -> None:
        """A node failure: SIGKILL its slurmd, slurmstepd processes and tasks (slurmstepd and
        the task outlive a killed slurmd, so killing slurmd alone is no crash). Slurm marks
        the node down after SlurmdTimeout (10 s); boot() brings it back."""
        kill_all(lambda: self.node_processes(node))
        self._set_node_pid(node, None)

    def boot(self, node: str) -> None:
        """Start a crashed node's slurmd again and wait until the node is idle."""
        if self.slurmd_pid(node):
            raise FleetError("slurmd of %s is running (pid %s); crash it first" % (node, self.slurmd_pid(node)))
        pid = spawn_detached([self._slurmd_job(node)])[0]
        self._set_node_pid(node, pid)
        self._wait_idle([node], {node: pid})

    def stop(self, grace: float = 0.0) -> None:
        """Stop every process of the cluster, slurmstepd, tasks and srun clients included, and
        remove the munge socket (its folder too if outside DIR). SIGKILL, as nothing of a
        throwaway cluster needs saving (grace > 0: SIGTERM first, SIGKILL after that long;
        srun answers SIGTERM by waiting for its job)."""
        kill_all(self.processes, grace=grace)
        state = self._state()
        for node in state["nodes"].values():
            node["pid"] = None
        state["slurmctld"]["pid"] = state["munged"]["pid"] = None
        self._save(state)
        munge_socket = Path(state["munge_socket"])
        if state.get("munge_socket_dir_owned"):
            shutil.rmtree(munge_socket.parent, ignore_errors=True)
        elif munge_socket.exists():
            munge_socket.unlink()

    # -- inside ----------------------------------------------------------------------------

    def _state(self) -> dict:
        return read_json(self.dir / STATE_FILE)

    def _save(self, state: dict) -> None:
        write_atomic(self.dir / STATE_FILE, json.dumps(state, indent=2) + "\n")

    def _check(self, node: str) -> str:
        if node not in self._state()["nodes"]:
            raise FleetError("no node %r in the cluster at %s (nodes: %s)" % (node, self.dir, ", ".join(self.nodes)))
        return node

    def _set_node_pid(self, node: str, pid: Optional[int]) -> None:
        state = self._state()
        state["nodes"][node]["pid"] = pid
        self._save(state)

    def _env(self) -> Dict[str, str]:
        return {"PATH": SAFE_PATH, "SLURM_CONF": self.conf}

    def _slurmd_job(self, node: str) -> dict:
        return {"argv": [SLURMD, "-D", "-N", node, "-f", self.conf], "env": self._env(),
                "log": str(self.dir / "log" / ("slurmd.%s.out" % node))}

    def _wait_idle(self, nodes: List[str], pids: Dict[str, int], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        states: Dict[str, str] = {}
        while time.monotonic() < deadline:
            for name, pid in pids.items():
                if not alive(pid):
                    raise FleetError("%s exited at start; see the logs in %s" % (name, self.dir / "log"))
            states = self.node_states()
            if all(states.get(n) == "idle" for n in nodes):
                return
            time.sleep(0.05)
        raise FleetError("nodes not idle after %.0f s (sinfo: %s); see the logs in %s"
                         % (timeout, states or "no answer", self.dir / "log"))


def _slurm_conf(d: Path, nodes: Dict[str, int], ctld_port: int, munge_socket: str) -> str:
    cpus = max(os.cpu_count() or 1, 8)
    lines = [
        "# A Slurm cluster on 127.0.0.1; written by %s" % Path(__file__).name,
        "ClusterName=benchsage",
        "SlurmctldHost=%s(127.0.0.1)" % socket.gethostname().split(".")[0],
        "SlurmctldPort=%d" % ctld_port,
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        "AuthInfo=socket=%s" % munge_socket,
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        # slurmd reports this machine's CPUs; each fake node claims its configured count
        "SlurmdParameters=config_overrides",
        "SlurmdTimeout=10",
        "ReturnToService=2",
        "KillWait=2",
        "MinJobAge=10",
        "StateSaveLocation=%s" % (d / "state"),
        "SlurmdSpoolDir=%s" % (d / "spool" / "%n"),
        "SlurmctldPidFile=%s" % (d / "run" / "slurmctld.pid"),
        "SlurmdPidFile=%s" % (d / "run" / "slurmd.%n.pid"),
        "SlurmctldLogFile=%s" % (d / "log" / "slurmctld.log"),
        "SlurmdLogFile=%s" % (d / "log" / "slurmd.%n.log"),
        "PlugStackConfig=%s" % (d / "plugstack.conf"),
    ]
    for k, (node, port) in enumerate(nodes.items()):
        # A hardware type per node, as a testbed's nodes have (for `constraint`): the odd ones
        # "c220g2", the even ones "m510".
        lines.append("NodeName=%s NodeAddr=127.0.0.1 NodeHostname=%s Port=%d CPUs=%d Features=%s State=UNKNOWN"
                     % (node, node, port, cpus, HARDWARE[k % 2]))
    lines.append("PartitionName=%s Nodes=ALL Default=YES MaxTime=INFINITE State=UP" % PARTITION)
    return "\n".join(lines) + "\n"


def start(directory: "os.PathLike[str] | str", nodes: int = 2) -> Cluster:
    """Create a cluster of `nodes` nodes c1..cN in `directory` (absent or empty), start
    munged, slurmctld and the slurmd of every node, and return once sinfo shows all idle."""
    for tool in (MUNGED, SLURMCTLD, SLURMD):
        if not os.path.exists(tool):
            raise FleetError("%s is missing; install Debian's munge slurmctld slurmd slurm-client" % tool)
    for tool in ("srun", "sinfo"):
        if shutil.which(tool) is None:
            raise FleetError("%s is missing; install Debian's slurm-client" % tool)
    if os.geteuid() != 0:
        raise FleetError("the Slurm cluster runs its daemons as root; run this as root")
    if nodes < 1:
        raise FleetError("a cluster needs at least one node")
    d = Path(directory).resolve()
    if d.exists() and any(d.iterdir()):
        raise FleetError("%s is not empty; start a cluster in a new folder" % d)
    for sub in ("state", "log", "run", "spool"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    key_dir = d / "munge"
    key_dir.mkdir(mode=0o700)
    os.chmod(key_dir, 0o700)
    fd = os.open(str(key_dir / "munge.key"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(os.urandom(1024))
    socket_dir, owned = d / "munge-socket", False
    if _world_reachable(d) and len(str(socket_dir / "munge.socket")) < 100:
        socket_dir.mkdir(mode=0o711)
    else:
        socket_dir, owned = Path(tempfile.mkdtemp(prefix="benchsage-munge-", dir="/tmp")), True
    os.chmod(socket_dir, 0o711)
    munge_socket = str(socket_dir / "munge.socket")

    names = ["c%d" % k for k in range(1, nodes + 1)]
    ports = _free_ports(nodes + 1)
    node_ports = dict(zip(names, ports[1:]))
    write_atomic(d / "slurm.conf", _slurm_conf(d, node_ports, ports[0], munge_socket))
    state = {"dir": str(d), "conf": str(d / "slurm.conf"), "munge_socket": munge_socket,
             "munge_socket_dir_owned": owned, "munged": {"pid": None},
             "slurmctld": {"port": ports[0], "pid": None},
             "nodes": {n: {"port": p, "pid": None} for n, p in node_ports.items()}}
    write_atomic(d / STATE_FILE, json.dumps(state, indent=2) + "\n")
    cluster = Cluster(d)
    env = cluster._env()
    try:
        munged = spawn_detached([{
            "argv": [MUNGED, "-F", "-S", munge_socket, "--key-file=%s" % (key_dir / "munge.key"),
                     "--pid-file=%s" % (d / "run" / "munged.pid"), "--seed-file=%s" % (key_dir / "munged.seed"),
                     "--log-file=%s" % (d / "log" / "munged.log")],
            "env": env, "log": str(d / "log" / "munged.log")}])[0]
        state["munged"]["pid"] = munged
        cluster._save(state)
        deadline = time.monotonic() + 10
        while not os.path.exists(munge_socket):
            if not alive(munged) or time.monotonic() > deadline:
                raise FleetError("munged did not start; see %s" % (d / "log" / "munged.log"))
            time.sleep(0.005)
        pids = spawn_detached(
            [{"argv": [SLURMCTLD, "-D", "-f", cluster.conf], "env": env, "log": str(d / "log" / "slurmctld.out")}]
            + [cluster._slurmd_job(n) for n in names])
        state["slurmctld"]["pid"] = pids[0]
        for n, pid in zip(names, pids[1:]):
            state["nodes"][n]["pid"] = pid
        cluster._save(state)
        cluster._wait_idle(names, {"munged": munged, "slurmctld": pids[0], **dict(zip(names, pids[1:]))})
    except BaseException:
        cluster.stop()
        raise
    return cluster


def stop(directory: "os.PathLike[str] | str") -> None:
    Cluster(directory).stop()


def crash(directory: "os.PathLike[str] | str", node: str) -> None:
    Cluster(directory).crash(node)


def boot(directory: "os.PathLike[str] | str", node: str) -> None:
    Cluster(directory).boot(node)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start", help="create and start a cluster in DIR (absent or empty)")
    s.add_argument("dir")
    s.add_argument("--nodes", type=int, default=2)
    sub.add_parser("stop", help="stop every process of the cluster").add_argument("dir")
    sub.add_parser("status", help="sinfo of the cluster").add_argument("dir")
    for name, what in (("crash", "node failure: kill a node's slurmd, slurmstepd and tasks"),
                       ("boot", "start a crashed node's slurmd again")):
        c = sub.add_parser(name, help=what)
        c.add_argument("dir")
        c.add_argument("node")
    a = p.parse_args(argv)
    try:
        if a.command == "start":
            t0 = time.monotonic()
            cluster = start(a.dir, a.nodes)
            print("started a Slurm cluster of %d nodes (%s) in %.2f s in %s"
                  % (len(cluster.nodes), ", ".join(cluster.nodes), time.monotonic() - t0, cluster.dir))
            print("export SLURM_CONF=%s" % cluster.conf)
            print("try:  srun --nodelist=%s -N1 -n1 hostname" % cluster.nodes[0])
            print("stop: python3 %s stop %s" % (Path(__file__).resolve(), cluster.dir))
        elif a.command == "stop":
            Cluster(a.dir).stop()
            print("stopped the Slurm cluster in %s" % Path(a.dir).resolve())
        elif a.command == "status":
            for node, state in Cluster(a.dir).node_states().items():
                print("  %-6s %s" % (node, state))
        elif a.command == "crash":
            Cluster(a.dir).crash(a.node)
        elif a.command == "boot":
            Cluster(a.dir).boot(a.node)
    except FleetError as e:
        print("slurmcluster: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
