"""Where each part of a spec with roles runs, and what is measured beside the trials.

A worker with roles is a group of hosts (`[worker.roles.NAME]`); tests, reset steps, factor
setups and collectors name the role whose host runs them. `[[collector]]`s measure a role's
host during every trial's window (energy, the whole host's CPU time, or a command's number),
and `[[reset.step]]`s reset each role's host in turn. Every role named must be a role of
every worker: one-line errors naming the key, before anything runs.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from benchsage.spec import fields
from benchsage.spec.model import CollectorSpec, FactorSpec, ResetStep, TestSpec, WorkerSpec
from benchsage.vocabulary import HARNESS_METRIC_UNITS

COLLECTOR_KINDS = {"energy": ("J", "lower"), "cpu": ("s", "lower"), "command": ("", "lower")}
_COLLECTOR_KEYS = {"name", "role", "kind", "command", "delta", "unit", "better", "cwd", "env", "timeout"}
_STEP_KEYS = {"role", "command", "timeout", "env", "cwd", "kind"}
DEFAULT_COLLECTOR_TIMEOUT = 10.0


def parse_collectors(w: fields.Where, items: Any, cwd: str, env: Mapping[str, str], metric_names: set[str]) -> tuple[CollectorSpec, ...]:
    """The `[[collector]]` tables; `metric_names`: the tests' own metrics, which a collector's
    name must not shadow."""
    if items is None:
        return ()
    out: list[CollectorSpec] = []
    for i, here, item in fields.tables(w, items, "collector"):
        fields.check_keys(w, here, item, _COLLECTOR_KEYS)
        name = fields.string(w, here, item, "name", required=True) or ""
        here = f"[[collector]] #{i} ('{name}')"
        if name in HARNESS_METRIC_UNITS or name in metric_names or any(c.name == name for c in out):
            raise w.error(here, f"key 'name': a metric '{name}' is already recorded (by the harness, a test or another "
                                "collector); choose another name")
        role = fields.string(w, here, item, "role", required=True) or ""
        kind = fields.string(w, here, item, "kind", required=True) or ""
        if kind not in COLLECTOR_KINDS:
            raise w.error(here, f"key 'kind' must be one of {', '.join(repr(k) for k in COLLECTOR_KINDS)}, got {kind!r}")
        command = fields.string(w, here, item, "command", required=kind == "command")
        if kind != "command":
            for key in ("command", "delta", "cwd", "env", "timeout"):
                if key in item:
                    raise w.error(here, f"key '{key}' only applies to kind = \"command\"")
        delta = item.get("delta", False)
        if not isinstance(delta, bool):
            raise w.error(here, f"key 'delta' must be true or false, got {fields.type_name(delta)}")
        unit, better = COLLECTOR_KINDS[kind]
        better = fields.string(w, here, item, "better", default=better) or better
        if better not in ("lower", "higher"):
            raise w.error(here, f"key 'better' must be \"lower\" or \"higher\", got {better!r}")
        if kind != "command" and "unit" in item:
            raise w.error(here, f"key 'unit': a {kind} collector measures in {unit}")
        out.append(CollectorSpec(
            name=name, role=role, kind=kind, command=command, delta=delta,
            unit=fields.string(w, here, item, "unit", default=unit) or "", better=better,
            cwd=fields.cwd(w, here, item, cwd), env=fields.env(w, here, item, env),
            timeout=fields.number(w, here, item, "timeout", DEFAULT_COLLECTOR_TIMEOUT) or DEFAULT_COLLECTOR_TIMEOUT,
        ))
    return tuple(out)


def parse_steps(w: fields.Where, items: Any, timeout: float, cwd: str, env: Mapping[str, str],
                reboot: tuple[str, float]) -> tuple[ResetStep, ...]:
    """`[[reset.step]]`: commands (or reboots) in order, each on one role's host. `timeout`,
    `cwd`, `env`: the [reset]'s own, which the steps inherit; `reboot`: the default reboot
    command and timeout."""
    out = []
    for i, here, item in fields.tables(w, items, "reset.step"):
        fields.check_keys(w, here, item, _STEP_KEYS)
        kind = fields.string(w, here, item, "kind", default="command") or "command"
        if kind not in ("command", "reboot"):
            raise w.error(here, f"key 'kind' must be \"command\" or \"reboot\", got {kind!r}")
        command = (fields.string(w, here, item, "command", default=reboot[0]) if kind == "reboot"
                   else fields.string(w, here, item, "command", required=True)) or ""
        default_timeout = reboot[1] if kind == "reboot" else timeout
        out.append(ResetStep(
            role=fields.string(w, here, item, "role", required=True),
            command=command,
            timeout=fields.number(w, here, item, "timeout", default_timeout) or default_timeout,
            cwd=fields.cwd(w, here, item, cwd),
            env=fields.env(w, here, item, env),
            kind=kind,
        ))
    if not out:
        raise w.error("[reset]", "key 'step' is empty: give at least one [[reset.step]], or remove it")
    return tuple(out)


def check_roles(w: fields.Where, workers: Sequence[WorkerSpec], tests: Sequence[TestSpec], steps: Sequence[ResetStep],
                factors: Sequence[FactorSpec], collectors: Sequence[CollectorSpec]) -> None:
    """Every role named is a role of every worker (errors name the key and the worker)."""
    named: list[tuple[str, str]] = []  # (the table, the role it names)
    named += [(f"[[test]] '{t.name}'", t.role) for t in tests if t.role is not None]
    named += [(f"[[reset.step]] #{i}", s.role) for i, s in enumerate(steps, 1) if s.role is not None]
    named += [(f"[[factor]] '{f.name}'", f.role) for f in factors if f.role is not None]
    named += [(f"[[collector]] '{c.name}'", c.role) for c in collectors]
    for where, role in named:
        for ws in workers:
            if not ws.roles:
                raise w.error(where, f"key 'role' names role '{role}', but the workers have no roles "
                                     "(declare them as [worker.roles.NAME])")
            if role not in ws.role_names:
                raise w.error(where, f"key 'role' names role '{role}', which worker '{ws.name}' lacks "
                                     f"(its roles: {', '.join(ws.role_names)})")
