"""Measurement control: what the agent measures beyond wait4, and what a trial leaves behind.

Set up once per agent: a cgroup per trial where the host allows (the peak memory and CPU time
of the trial's whole tree; its processes killed when it ends), else the agent as child
subreaper of everything it spawns (a process a trial leaves running becomes the agent's child
when its parent exits, and is found and killed there); the package energy counters read around
each trial; OOM kills counted; cgroups given up, said once, if they fail mid-experiment.
"""

from __future__ import annotations

import os
import signal

from benchsage.agent import cgroups, cpus, energy
from benchsage.agent.wait import kill_group

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would add ~0.7 MiB to the agent
    from typing import Any, Dict, List, Optional, Tuple

PR_SET_CHILD_SUBREAPER = 36
POWERCAP_ENV = "BENCHSAGE_POWERCAP"  # another folder shaped like /sys/class/powercap (tests)
CGROUPS_ENV = "BENCHSAGE_CGROUPS"  # "off": measure without cgroups (to compare, or where they misbehave)


class Measurement:
    """What this host lets the agent measure beyond wait4, set up once (at hello).

    cgroups: a cgroup per trial (peak memory and CPU time of the whole tree; its processes
    killed when the trial ends), or None with the reason. Leftovers without cgroups: the agent
    is the child subreaper of everything it spawns, so a process a trial leaves running (a
    daemon, a setsid child) becomes the agent's child when its parent exits and is found there.
    Energy: the package RAPL counters read around each trial.
    """

    def __init__(self) -> None:
        self.cgroup_error = cgroups.CgroupError
        if os.environ.get(CGROUPS_ENV) == "off":
            support = cgroups.Support(None, "cgroups turned off (%s=off in the agent's environment)" % CGROUPS_ENV, ())
        else:
            support = cgroups.probe()
        self.cgroups = cgroups.Cgroups(support) if support.method else None
        self.cgroup_method = support.method
        self.cgroup_reason = support.reason
        self.note = None  # type: Optional[str]  # said once in the next result: cgroups given up
        # The cgroup finds leftovers by itself; only without one does the agent adopt orphans
        # (ctypes, for prctl, costs ~0.7 MiB of the agent's memory: every trial's max_rss floor).
        self.subreaper = False if self.cgroups is not None else _become_subreaper()
        rapl = energy.Rapl(os.environ.get(POWERCAP_ENV) or "/sys/class/powercap")
        probed = rapl.probe()
        self.rapl = rapl if probed.available else None
        self.energy_reason = probed.reason
        self._energy0 = None  # type: Optional[Tuple[int, ...]]
        self._known = set()  # type: set
        self._oom0 = 0
        # Off the critical path (idle(), once a reply is sent): the last trial's cgroup removed
        # (or kept for recycling), the next trial's made ready with its counters' zero.
        self._removing = None  # type: Any
        self._ready = None  # type: Any
        self._ready_oom0 = 0
        self._oom_last = (None, 0)  # type: Tuple[Any, int]  # the last finished trial's cgroup and its OOM count

    def describe(self) -> Dict[str, Any]:
        host, iso = cpus.host_cpus(), cpus.isolated()
        return {
            "cgroup": self.cgroup_method if self.cgroups is not None else None,
            "cgroup_reason": self.cgroup_reason,
            "leftovers": "cgroup" if self.cgroups is not None else "subreaper" if self.subreaper else "process group",
            "energy": self.rapl is not None,
            "energy_reason": self.energy_reason,
            "cpus_online": host.online,
            "cpus_allowed": host.allowed,
            "cpus_isolated": iso.isolated,
            "cpus_nohz_full": iso.nohz_full,
        }

    def give_up_cgroups(self, why: str) -> None:
        if self.cgroups is not None:
            try:
                self.cgroups.close()
            except Exception:
                pass
        self.cgroups = None
        self._removing = self._ready = None
        self.subreaper = self.subreaper or _become_subreaper()
        self.cgroup_reason = "cgroups given up mid-experiment: %s" % why
        self.note = "%s; trials are measured without them from now on (no peak_memory or cpu_time)" % self.cgroup_reason

    def prepare(self) -> None:
        """At a run boundary, off the trials' critical path: the agent's cgroup folders made
        (on v2 in a delegated subtree, the agent moved into its leaf) before the first trial
        needs them."""
        if self.cgroups is None:
            return
        try:
            self.cgroups.prepare()
        except self.cgroup_error as exc:
            self.give_up_cgroups(str(exc))

    def trial_cgroup(self) -> Any:
        """The next trial's cgroup: the one idle() made ready, else one made now."""
        if self._ready is None:
            self.idle()
        cgroup, self._ready = self._ready, None
        self._oom0 = self._ready_oom0
        return cgroup

    def idle(self) -> None:
        """Between trials, when the agent has nothing else to do (its reply is sent): remove
        the last trial's cgroup and make the next one ready, so that neither is between the
        end of a trial and the start of the next."""
        if self.cgroups is None:
            return
        try:
            if self._removing is not None:
                cgroup, self._removing = self._removing, None
                cgroup.remove()
            if self._ready is None:
                self._ready = self.cgroups.trial()
                # A recycled cgroup's counter goes on from earlier trials: as finish() left it.
                last, count = self._oom_last
                self._ready_oom0 = count if last is self._ready else self._ready.oom_kills()
        except self.cgroup_error as exc:
            self.give_up_cgroups(str(exc))

    def before(self) -> None:
        """Just before the fork: which children the agent already has (a reset's daemons are
        not the trial's leftovers), and the energy counters. An adopted daemon that has exited
        since (a reset stopped the server an earlier one started) is reaped here, or each
        restart would leave a zombie for as long as the agent lives."""
        self._known = _reap_exited(_children()) if self.subreaper else set()
        self._energy0 = None
        if self.rapl is not None:
            try:
                self._energy0 = self.rapl.read()
            except Exception:
                self._energy0 = None

    def finish(self, cgroup: Any, pid: int) -> Dict[str, Any]:
        """After the trial's process exited and was waited for: the energy it used, what it left
        running (killed, counted), its cgroup's totals; the cgroup removed."""
        out = {}  # type: Dict[str, Any]
        if self._energy0 is not None and self.rapl is not None:
            try:
                out["energy"] = self.rapl.joules(self._energy0, self.rapl.read())
            except Exception:
                pass
        if cgroup is not None:
            try:
                out["leftovers"] = cgroup.kill_all()
                usage = cgroup.read()
                if usage.peak_memory is not None:
                    out["peak_memory"] = usage.peak_memory
                out["cpu_time"] = usage.cpu_time
                count = cgroup.oom_kills()
                out["oom_kills"] = count - self._oom0
                self._oom_last = (cgroup, count)
                self._removing = cgroup  # by idle(), once the result is sent
            except self.cgroup_error as exc:
                self.give_up_cgroups(str(exc))
        if self.subreaper:
            # Without a cgroup every living descendant is adopted by the agent or descends from
            # one that is; with one they are dead already and only reaped here.
            adopted = _kill_adopted(self._known)
            out.setdefault("leftovers", len(adopted))
        elif pid:
            kill_group(pid)
        if self.note is not None:
            out["note"], self.note = self.note, None
        return out

    def close(self) -> None:
        if self.cgroups is not None:
            try:
                self.cgroups.close()
            except Exception:
                pass


_control = None  # type: Optional[Measurement]


def measurement() -> Measurement:
    """The agent's measurement control, set up on first use (at hello)."""
    global _control
    if _control is None:
        _control = Measurement()
    return _control


def close() -> None:
    """Release what measurement control holds (the agent's cgroups), if it was set up."""
    if _control is not None:
        _control.close()


def _become_subreaper() -> bool:
    """prctl(PR_SET_CHILD_SUBREAPER): orphans of the agent's descendants become its children."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except Exception:
        return False


def _children() -> List[int]:
    """The agent's children (Linux: /proc/self/task/TID/children of every thread; one here)."""
    try:
        with open("/proc/self/task/%d/children" % os.getpid()) as f:
            return [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return []


def _kill_adopted(known: Any) -> set:
    """Kill the processes the trial left running that the agent adopted as subreaper (and their
    children, adopted in turn as each dies); reap the ones that had already exited. Returns
    the pids of those that were still alive."""
    killed = set()  # type: set
    for _ in range(1000):
        kids = [k for k in _children() if k not in known]
        if not kids:
            break
        for kid in kids:
            alive = _state(kid) not in ("Z", "X", None)
            try:
                if alive:
                    os.kill(kid, signal.SIGKILL)
                os.waitpid(kid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            if alive:
                killed.add(kid)
    return killed


def _reap_exited(children: List[int]) -> set:
    """Wait for those of the agent's children that have exited (zombies); the living ones."""
    living = set()  # type: set
    for kid in children:
        if _state(kid) in ("Z", "X"):
            try:
                os.waitpid(kid, os.WNOHANG)
            except ChildProcessError:
                pass
        else:
            living.add(kid)
    return living


def _state(pid: int) -> Optional[str]:
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
        return data[data.rindex(b")") + 2 : data.rindex(b")") + 3].decode()
    except (OSError, ValueError):
        return None
