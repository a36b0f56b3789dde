"""The spec's `[[worker]]` tables: where trials run. A worker is one host (this machine, an ssh
host, a Slurm node, any transport command), or a group of hosts in named roles
(`[worker.roles.NAME]`, each with the keys of any worker kind): a service on a server measured
by a load generator on a client, pairs of them in parallel.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from benchsage.spec import fields
from benchsage.spec.model import WorkerSpec
from benchsage.spec.provision import COMMAND_ALLOCATION_KEYS, SLURM_ALLOCATION_KEYS, allocation_fields, worker_dir

_WORKER_COMMON = {"name", "kind", "dir", "python", "boot_id", "reconnect_timeout"}
WORKER_KEYS = {
    "local": _WORKER_COMMON,
    "ssh": _WORKER_COMMON | {"host", "ssh_config"} | COMMAND_ALLOCATION_KEYS,
    "slurm": _WORKER_COMMON | {"node", "srun_args", "het_group"} | SLURM_ALLOCATION_KEYS,
    "command": _WORKER_COMMON | {"transport"},
}
_ROLE_KEYS = {"name", "roles"}


def parse_workers(w: fields.Where, items: Any, folder: str) -> tuple[WorkerSpec, ...]:
    if items is None:
        return (WorkerSpec("local"),)
    out: list[WorkerSpec] = []
    names: dict[str, int] = {}
    for i, here, item in fields.tables(w, items, "worker"):
        worker = _group(w, here, item, folder) if "roles" in item else _one(w, here, item, folder, f"command-{i}")
        if worker.name in names:
            raise w.error(here, f"duplicate worker name '{worker.name}' (also worker #{names[worker.name]}); "
                                "give each worker its own `name`")
        names[worker.name] = i
        out.append(worker)
    if not out:
        raise w.error("", "'worker' is empty; remove it to run locally")
    grouped = [bool(ws.roles) for ws in out]
    if any(grouped) and not all(grouped):
        i = grouped.index(False) + 1
        raise w.error(f"[[worker]] #{i}", "has no roles while other workers have: give every [[worker]] the same roles "
                                          "([worker.roles.NAME])")
    _check_hosts(w, out)
    return tuple(out)


def _label(w: fields.Where, here: str, name: str) -> str:
    if not name.strip() or any(c in name for c in "/\n\0"):
        raise w.error(here, f"key 'name' must be a non-empty label without '/' or newlines, got {name!r}")
    return name


def _group(w: fields.Where, here: str, item: Mapping[str, Any], folder: str) -> WorkerSpec:
    """A worker of several hosts in named roles; the roles in declared order."""
    fields.check_keys(w, f"{here} (with roles)", item, _ROLE_KEYS)
    if "name" not in item:
        raise w.error(here, "a worker with roles needs a `name` (its label in the plan and the analysis, e.g. name = \"pair1\")")
    name = _label(w, here, fields.string(w, here, item, "name", required=True) or "")
    here = f"[[worker]] '{name}'"
    roles = item["roles"]
    if not isinstance(roles, dict) or not roles:
        raise w.error(here, "key 'roles' must be tables of roles ([worker.roles.NAME] with a worker's keys), got "
                            f"{fields.type_name(roles)}")
    out = []
    for role, table in roles.items():
        where = f"{here} role '{role}'"
        if not isinstance(table, dict):
            raise w.error(where, f"must be a table ([worker.roles.{role}]), got {fields.type_name(table)}")
        if not role or any(c in role for c in "/\n\0 ="):
            raise w.error(where, "a role's name must be a word without '/', spaces or '='")
        if "name" in table:
            raise w.error(where, "unknown key 'name' (a role is named by its table: [worker.roles.NAME])")
        member = _one(w, where, {**table, "name": f"{name}/{role}"}, folder, f"{name}/{role}", member=True)
        out.append((role, member))
    return WorkerSpec(name=name, kind="group", roles=tuple(out))


def _one(w: fields.Where, here: str, item: Mapping[str, Any], folder: str, command_name: str, *, member: bool = False) -> WorkerSpec:
    kind = fields.string(w, here, item, "kind", default="local") or "local"
    if kind not in WORKER_KEYS:
        raise w.error(here, f"unknown worker kind {kind!r} (expected one of: {', '.join(sorted(WORKER_KEYS))})")
    fields.check_keys(w, f"{here} (kind \"{kind}\")", item, WORKER_KEYS[kind])
    if member and any(key in item for key in SLURM_ALLOCATION_KEYS | COMMAND_ALLOCATION_KEYS):
        raise w.error(here, "a role's host cannot be allocated (keys 'nodes', 'allocate'): name it, or allocate workers without roles")
    allocation = allocation_fields(w, here, item, kind)
    host = node = het_group = None
    transport: tuple[str, ...] = ()
    if allocation:
        default_name = command_name.replace("command", "allocated")  # replaced by one worker per host when the experiment runs
    elif kind == "ssh":
        host = fields.string(w, here, item, "host", required=True)
        default_name = host
    elif kind == "slurm":
        het_group = fields.integer(w, here, item, "het_group", None, minimum=0)
        if het_group is not None and "node" in item:
            raise w.error(here, "give either 'node' (a node by name) or 'het_group' (a component of the allocation benchsage "
                                "runs in), not both")
        node = fields.string(w, here, item, "node", required=het_group is None)
        default_name = node or f"het-group-{het_group}"
    elif kind == "command":
        transport = fields.string_list(w, here, item, "transport", required=True)
        default_name = command_name
    else:
        default_name = "local"
    name = fields.string(w, here, item, "name", default=default_name) or default_name
    if not member:
        name = _label(w, here, name)
    ssh_config = fields.string(w, here, item, "ssh_config")
    if ssh_config is not None:  # it may not exist yet: `plan` runs before the fleet is set up (missing_files)
        ssh_config = os.path.normpath(os.path.join(folder, os.path.expanduser(ssh_config)))
    python = fields.string(w, here, item, "python")
    if python is not None and not python.strip():
        raise w.error(here, "key 'python' must not be empty")
    directory = fields.string(w, here, item, "dir")
    if directory is not None and not directory.startswith("/"):
        raise w.error(here, f"key 'dir' must be an absolute path on the host, got {directory!r}")
    if directory is not None and not allocation:  # an allocated worker's name is known when it is allocated
        directory = worker_dir(directory, name)
    return WorkerSpec(
        name=name,
        kind=kind,
        host=host,
        ssh_config=ssh_config,
        node=node,
        het_group=het_group,
        srun_args=fields.string_list(w, here, item, "srun_args"),
        transport=transport,
        dir=directory,
        python=python,
        boot_id=fields.string(w, here, item, "boot_id"),
        reconnect_timeout=fields.number(w, here, item, "reconnect_timeout", 60.0) or 60.0,
        **allocation,
    )


def _host_of(ws: WorkerSpec) -> tuple[str, ...] | None:
    """What identifies the host a role reaches, for telling two groups that share one; None
    for this machine (every local role is this machine, which may serve in several groups)."""
    if ws.kind == "ssh":
        return ("ssh", ws.ssh_config or "", ws.host or "")
    if ws.kind == "slurm":
        return ("slurm", ws.node) if ws.node else ("slurm het-group", str(ws.het_group))
    if ws.kind == "command":
        return ("command", *ws.transport)
    return None


def _check_hosts(w: fields.Where, workers: list[WorkerSpec]) -> None:
    """Two groups measuring on the same host would measure each other: refused."""
    seen: dict[tuple[str, ...], str] = {}
    for ws in workers:
        for role, member in ws.roles:
            key = _host_of(member)
            if key is None:
                continue
            other = seen.get(key)
            if other is not None and other.split("/")[0] != ws.name:
                raise w.error(f"[[worker]] '{ws.name}' role '{role}'", f"{member.target} is also {other}: two groups cannot "
                                                                       "share a host (each would measure the other's load)")
            seen.setdefault(key, f"{ws.name}/{role}")
