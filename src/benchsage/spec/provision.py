"""Provisioning in the spec: `[init]` (once per worker before its first run), `[teardown]`
(once per worker after its last run, whatever happened) and the keys of a
`[[worker]]` that is allocated when the experiment runs (`nodes` from Slurm, or the user's
`allocate`/`release` commands) instead of naming its host.

An allocated worker's hosts are known only when `run` allocates them; until then (`plan`) it
stands for placeholder workers node-1..node-N.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from benchsage.spec import fields
from benchsage.spec.model import InitSpec, Spec, WorkerSpec

DEFAULT_INIT_TIMEOUT = 1800.0
_INIT_KEYS = {"command", "timeout", "cwd", "env", "role"}
SLURM_ALLOCATION_KEYS = {"nodes", "partition", "constraint", "time"}
COMMAND_ALLOCATION_KEYS = {"allocate", "release"}


def parse_init(w: fields.Where, doc: Any, cwd: str, env: Mapping[str, str], roles: tuple[str, ...], key: str = "init") -> InitSpec | None:
    """[init] (or, with key "teardown", [teardown]): a command, its timeout, cwd, env and role."""
    if doc is None:
        return None
    here = f"[{key}]"
    if not isinstance(doc, dict):
        raise w.error("", f"'{key}' must be a table ({here}), got {fields.type_name(doc)}")
    fields.check_keys(w, here, doc, _INIT_KEYS)
    command = fields.string(w, here, doc, "command", required=True) or ""
    role = fields.string(w, here, doc, "role")
    if role is not None and role not in roles:
        known = f"the workers' roles are {', '.join(roles)}" if roles else "the workers have no roles"
        raise w.error(here, f"key 'role' names no role of the workers: {role!r} ({known})")
    return InitSpec(command=command, timeout=fields.number(w, here, doc, "timeout", DEFAULT_INIT_TIMEOUT) or DEFAULT_INIT_TIMEOUT,
                    cwd=fields.cwd(w, here, doc, cwd), env=fields.env(w, here, doc, env), role=role)


def allocation_fields(w: fields.Where, here: str, item: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The allocation keys of one [[worker]] table, checked (SpecError naming the worker)."""
    if kind == "slurm":
        if "nodes" not in item:
            for key in SLURM_ALLOCATION_KEYS - {"nodes"}:
                if key in item:
                    raise w.error(here, f"key '{key}' applies to an allocation: give 'nodes' too (or remove '{key}')")
            return {}
        if "node" in item or "het_group" in item:
            raise w.error(here, "give either 'nodes' (benchsage allocates that many) or 'node'/'het_group' (a node you name), not both")
        return {"nodes": fields.integer(w, here, item, "nodes", None, minimum=1),
                **{key: fields.string(w, here, item, key, required=key in item) for key in ("partition", "constraint", "time")}}
    if kind == "ssh" and ("allocate" in item or "release" in item):
        if "host" in item:
            raise w.error(here, "give either 'host' or 'allocate' (a command printing the hosts), not both")
        if "allocate" not in item:
            raise w.error(here, "key 'release' needs 'allocate' (the command whose hosts it releases)")
        return {"allocate": fields.string(w, here, item, "allocate", required=True),
                "release": fields.string(w, here, item, "release", required="release" in item)}
    return {}


def describe_allocation(ws: WorkerSpec) -> str:
    """What `run` would ask for, as `plan` says it."""
    if ws.nodes is not None:
        asked = ", ".join(f"{what} {value}" for what, value in (("constraint", ws.constraint), ("time", ws.time)) if value)
        where = f" from partition {ws.partition}" if ws.partition else ""
        return (f"Slurm: {ws.nodes} node{'s' if ws.nodes != 1 else ''}{where}{' (' + asked + ')' if asked else ''}, "
                "one worker per node, named when allocated")
    return (f"`{ws.allocate}`: one ssh worker per host it prints, named by host"
            + (f"; released with `{ws.release}`" if ws.release else "; no release command"))


def placeholder_names(spec: Spec) -> list[list[str]]:
    """Per allocated [[worker]], in order, the names its workers have in a plan drawn before the
    allocation: node-1..node-N (an `allocate` command's count is unknown: one, allocate-1)."""
    out, n = [], 0
    for ws in spec.workers:
        if ws.allocated:
            count = ws.nodes or 1
            out.append([f"node-{n + i + 1}" if ws.nodes else f"allocate-{n + i + 1}" for i in range(count)])
            n += count
    return out


WORKER_PLACEHOLDER = "{worker}"


def worker_dir(directory: str, name: str) -> str:
    """`dir` with {worker} replaced by the worker's name: one dir per worker where several share
    a filesystem (hosts with a shared home, a fleet on one machine)."""
    return directory.replace(WORKER_PLACEHOLDER, name)


def with_hosts(spec: Spec, hosts: list[list[tuple[str, str]]], job: list[str | None]) -> Spec:
    """The spec whose allocated [[worker]]s are replaced, in order, by one worker per (name,
    host) of their allocation (`job`: the Slurm job id of each, or None)."""
    workers: list[WorkerSpec] = []
    k = 0
    for ws in spec.workers:
        if not ws.allocated:
            workers.append(ws)
            continue
        for name, host in hosts[k]:
            directory = None if ws.dir is None else worker_dir(ws.dir, name)
            if ws.kind == "slurm":
                workers.append(dataclasses.replace(ws, name=name, node=host, job=job[k], nodes=None, dir=directory))
            else:
                workers.append(dataclasses.replace(ws, name=name, host=host, allocate=None, release=None, dir=directory))
        k += 1
    return dataclasses.replace(spec, workers=tuple(workers))


def planned_spec(spec: Spec) -> Spec:
    """The spec as `plan` draws it: allocated workers under their placeholder names."""
    names = placeholder_names(spec)
    return with_hosts(spec, [[(n, n) for n in group] for group in names], [None] * len(names))
