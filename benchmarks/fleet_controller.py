"""Controller CPU of a fleet experiment: what 16 ssh workers cost the machine that runs benchsage.

Starts a fake fleet (examples/fleet/fakefleet.py: one real OpenSSH server per host on
127.0.0.1) and runs the same experiment, whose trials are `sleep`s, twice: on 1 worker (the
baseline) and on --hosts workers, each through the code `benchsage run` calls
(benchsage.api.carry_out: plan, connect every worker, write the journal, execute) in a
fresh controller process. That process reads its own CPU time (getrusage: user + sys of all its
threads) and, apart, that of its children, the ssh clients (reaped when the workers close);
the hosts' side (each host's sshd sessions, agent and trials) is the growth of its sshd's
cutime + cstime. Each is printed as % of one core over the run's wall time, with the
controller's CPU per trial and its growth from 1 worker to N (1.00: linear in the workers).
The controller's time is also split by thread (sampled from /proc/self/task).

Budget: --hosts 16 ssh workers cost the controller under 20 % of one core. The
controller's share grows with the trial rate (workers / trial length), so the figure holds
for the trials chosen here (--sleep); ms per trial lets you scale it to others.

    python benchmarks/fleet_controller.py [--hosts 16] [--runs 8] [--sleep 0.05,0.1,0.15,0.2,0.25,0.3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "fleet"))

import fakefleet  # noqa: E402

BUDGET_PERCENT = 20.0
DEFAULT_SLEEPS = "0.05,0.1,0.15,0.2,0.25,0.3"  # 1.05 s of trials per run: a run is mostly trials, not its snapshot
TICK = os.sysconf("SC_CLK_TCK")

# The controller process: times api.carry_out (what `benchsage run` does before it analyses)
# with getrusage, and samples its threads' CPU from /proc so the total can be split by thread.
CONTROLLER = r"""
import json, os, resource, sys, threading, time
from benchsage.api import carry_out

spec, out, interval = sys.argv[1], sys.argv[2], float(sys.argv[3])
seen = {}  # tid -> [thread name, CPU seconds] (schedstat: nanoseconds on a CPU, user + sys)
done = threading.Event()

def sample():
    names = {t.native_id: t.name for t in threading.enumerate()}
    for tid in map(int, os.listdir("/proc/self/task")):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as fh:
                cpu = int(fh.read().split()[0]) / 1e9
        except OSError:
            continue  # the thread ended
        entry = seen.setdefault(tid, [names.get(tid, "?"), 0.0])
        entry[0] = names.get(tid, entry[0])
        entry[1] = max(entry[1], cpu)

def sampler():
    while not done.wait(interval):
        sample()

def usage():
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime, me.ru_stime, children.ru_utime + children.ru_stime

thread = threading.Thread(target=sampler, name="sampler", daemon=True)
sample()
before = {tid: cpu for tid, (_, cpu) in seen.items()}
thread.start()
t0, u0 = time.monotonic(), usage()
carry_out(spec, out, quiet=True)
u1, wall = usage(), time.monotonic() - t0
sample()
done.set()
thread.join()
threads = {}
for tid, (name, cpu) in seen.items():
    kind = ("main" if tid == threading.main_thread().native_id else "sampler" if name == "sampler" else
            "worker threads" if name.startswith("worker ") else "connect threads" if name.endswith("(connect)") else
            "native threads (OpenBLAS)" if name == "?" else name)
    threads[kind] = threads.get(kind, 0.0) + cpu - before.get(tid, 0.0)
user, sys_, children = (b - a for a, b in zip(u0, u1))
print(json.dumps({"wall": wall, "cpu": user + sys_, "user": user, "sys": sys_, "children": children, "threads": threads}))
"""


@dataclass(frozen=True)
class Measurement:
    workers: int
    trials: int
    wall: float        # seconds, carry_out from call to return
    controller: float  # CPU seconds of the controller process, the sampler thread excluded
    user: float
    sys: float
    ssh: float         # CPU seconds of the ssh clients (the controller's children)
    hosts: float       # CPU seconds on the hosts: sshd sessions, agents, trials
    threads: dict[str, float]

    def percent(self, seconds: float) -> float:
        return 100 * seconds / self.wall

    @property
    def ms_per_trial(self) -> float:
        return 1000 * self.controller / self.trials


def spec_text(fleet: fakefleet.Fleet, hosts: list[str], runs: int, sleeps: list[float]) -> str:
    workers = "".join(
        f'[[worker]]\nkind = "ssh"\nhost = "{h}"\nssh_config = "{fleet.ssh_config}"\nboot_id = \'{fleet.boot_id_command}\'\n'
        for h in hosts
    )
    tests = "".join(f'[[test]]\nname = "sleep{i}"\ncommand = "sleep {s:g}"\n' for i, s in enumerate(sleeps))
    # A command reset (not a reboot): the figure is about trials, not about reconnecting.
    return f'[experiment]\nname = "fleet-controller"\nruns = {runs}\nseed = 7\n[reset]\ncommand = "true"\n{workers}{tests}'


def sshd_cpu(fleet: fakefleet.Fleet) -> float:
    """CPU seconds of every host's sshd and of its reaped descendants (sessions, agents, trials)."""
    total = 0
    for host in fleet.hosts:
        pid = fleet.sshd_pid(host)
        assert pid is not None, f"{host} is down"
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / TICK


def wait_sessions_gone(fleet: fakefleet.Fleet, timeout: float = 20.0) -> None:
    """Until only the sshd listeners are left, so that every session is in their cutime."""
    listeners = {fleet.sshd_pid(h) for h in fleet.hosts}
    deadline = time.monotonic() + timeout
    while fleet.processes() - listeners:
        if time.monotonic() > deadline:
            raise RuntimeError(f"sessions of the fake fleet still alive {timeout:g} s after the run: {fleet.processes() - listeners}")
        time.sleep(0.1)


def measure(fleet: fakefleet.Fleet, hosts: list[str], runs: int, sleeps: list[float], workdir: Path, interval: float) -> Measurement:
    spec = workdir / f"spec-{len(hosts)}.toml"
    spec.write_text(spec_text(fleet, hosts, runs, sleeps))
    out = workdir / f"out-{len(hosts)}"
    wait_sessions_gone(fleet)
    host0 = sshd_cpu(fleet)
    done = subprocess.run([sys.executable, "-c", CONTROLLER, str(spec), str(out), str(interval)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, cwd=workdir)
    if done.returncode != 0:
        raise RuntimeError(f"the experiment on {len(hosts)} worker(s) failed (exit {done.returncode}):\n{done.stderr.strip()}")
    wait_sessions_gone(fleet)
    host_cpu = sshd_cpu(fleet) - host0
    r = json.loads(done.stdout.splitlines()[-1])
    conn = sqlite3.connect(f"file:{out / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        statuses = dict(conn.execute("SELECT status, COUNT(*) FROM trials GROUP BY status").fetchall())
    finally:
        conn.close()
    expected = len(hosts) * 2 * runs * len(sleeps)
    if statuses != {"ok": expected}:
        raise RuntimeError(f"expected {expected} ok trials on {len(hosts)} worker(s), the journal has {statuses}")
    sampler = r["threads"].pop("sampler", 0.0)
    return Measurement(len(hosts), expected, r["wall"], r["cpu"] - sampler, r["user"], r["sys"], r["children"], host_cpu, r["threads"])


def show(m: Measurement, trial_time: float) -> None:
    print(f"{m.workers:2d} worker(s): {m.trials} trials in {m.wall:.1f} s ({m.trials / m.wall:.0f} trials/s; "
          f"{trial_time:.1f} s of trials on each worker)")
    print(f"    controller  {m.percent(m.controller):6.2f} % of one core  ({m.controller:.2f} s CPU: user {m.user:.2f}, sys {m.sys:.2f}; "
          f"{m.ms_per_trial:.3f} ms per trial)")
    parts = sorted(m.threads.items(), key=lambda kv: -kv[1]) + [("not sampled (threads that ended)", m.controller - sum(m.threads.values()))]
    split = ", ".join(f"{k} {m.percent(v):.2f} %" for k, v in parts)
    print(f"      by thread: {split}")
    print(f"    ssh clients {m.percent(m.ssh):6.2f} % of one core  ({m.ssh:.2f} s CPU; OpenSSH's cost, not the controller's)")
    print(f"    hosts       {m.percent(m.hosts):6.2f} % of one core  ({m.hosts:.2f} s CPU: sshd sessions, agents, trials)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=16, help="ssh workers of the measured run (default 16)")
    parser.add_argument("--runs", type=int, default=8, help="runs per arm on every worker (default 8)")
    parser.add_argument("--sleep", default=DEFAULT_SLEEPS,
                        help=f"seconds of each test's trial, comma-separated and distinct: one test each (default {DEFAULT_SLEEPS})")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples of the controller's threads")
    parser.add_argument("--budget", type=float, default=BUDGET_PERCENT, help="%% of one core (default 20)")
    args = parser.parse_args()
    sleeps = [float(s) for s in args.sleep.split(",") if s.strip()]
    if args.hosts < 2 or args.runs < 1 or not sleeps:
        parser.error("--hosts must be at least 2 (1 is the baseline), --runs at least 1, --sleep not empty")
    missing = [t for t in (fakefleet.SSHD, "ssh", "ssh-keygen") if shutil.which(t) is None]
    if missing:
        print(f"{', '.join(missing)} missing: apt-get install openssh-server openssh-client", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="benchsage-fleet-controller-"))
    fleet = None
    left: set[int] = set()
    try:
        fleet = fakefleet.start(workdir / "fleet", args.hosts)
        print(f"fake fleet of {args.hosts} hosts on 127.0.0.1, {os.cpu_count()} CPUs; trials: "
              f"{', '.join(f'sleep {s:g}' for s in sleeps)}; {args.runs} runs per arm on every worker")
        base = measure(fleet, fleet.hosts[:1], args.runs, sleeps, workdir, args.interval)
        trial_time = 2 * args.runs * sum(sleeps)
        show(base, trial_time)
        full = measure(fleet, fleet.hosts, args.runs, sleeps, workdir, args.interval)
        show(full, trial_time)
    except (RuntimeError, fakefleet.FleetError) as exc:
        print(f"could not measure: {exc}", file=sys.stderr)
        return 2
    finally:
        if fleet is not None:
            fleet.stop()
            left = fleet.processes() | fleet.reboot_processes()
            if left:
                print(f"processes of the fake fleet outlived its stop(): {sorted(left)}", file=sys.stderr)
        shutil.rmtree(workdir, ignore_errors=True)
    if left:
        return 2
    n = full.workers
    pct, base_pct = full.percent(full.controller), base.percent(base.controller)
    growth = pct / (n * base_pct) if base_pct > 0 else float("nan")
    # Below 1: the fixed costs (connecting, creating the journal) are shared; above 1: workers slow each other down.
    print(f"controller CPU per trial: {full.ms_per_trial:.3f} ms on {n} workers, {base.ms_per_trial:.3f} ms on 1; "
          f"% of one core on {n} workers / ({n} x on 1 worker): {growth:.2f} (1.00: linear in the workers)")
    verdict = "PASS" if pct < args.budget else "FAIL"
    print(f"controller of {n} ssh workers: {pct:.2f} % of one core (budget < {args.budget:g} %): {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
