"""The inverse of load.py: the TOML text of a Spec, which load_spec reads back into an equal Spec
(equal but for its path and text: `differences`), so `benchsage run FILE --seed S` draws the
same plan. For the Python API; `benchsage time` writes the text of its simpler spec itself
(spec/commandline.py), with the same emitter (spec/emit.py).

What a loaded spec no longer says is recovered from what it holds: a sweep's tests from their
declared [[test]] (TestSpec.declared), the [experiment]-wide env, cwd, timeout and cpus from
what every part shares, and paths relative to the folder the TOML goes to when they lie in it.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from benchsage.errors import SpecError
from benchsage.parsers import PARSERS
from benchsage.spec import emit
from benchsage.spec.load import DEFAULT_REBOOT_COMMAND, DEFAULT_REBOOT_TIMEOUT, DEFAULT_RESET_TIMEOUT, load_spec
from benchsage.spec.model import (CollectorSpec, InitSpec, MetricSpec, ResetSpec, ResetStep, Spec, TestSpec, Treatments,
                                  WorkerSpec)
from benchsage.spec.provision import DEFAULT_INIT_TIMEOUT
from benchsage.spec.roles import COLLECTOR_KINDS, DEFAULT_COLLECTOR_TIMEOUT
from benchsage.spec.treatments import DEFAULT_VARIANTS
from benchsage.vocabulary import (DECIDE_EACH, DEFAULT_CORRECTION, DEFAULT_MIN_EFFECT, DEFAULT_OUTPUT_LIMIT, FIXED_STOP,
                                  SHUFFLE)

_NOT_COMPARED = ("path", "text", "warnings")  # where a spec was read from, its words, and what load says about it
_NUMBER = re.compile(r"[-+0-9.eE_]+")  # what could be a TOML number; tomllib decides


def spec_toml(spec: Spec, folder: str) -> str:
    """The TOML text of `spec`, to be written into `folder`: `load_spec` of it there gives a
    spec equal to `spec` but for its path and text (`differences` is empty), and so the same
    plan for the same seed. Paths inside `folder` are written relative to it, others absolute.
    The seed is written when the spec has one; keys at their defaults are left out.

    Raises SpecError when the text would not read back as `spec` (a command holding bytes that
    are not UTF-8, which TOML cannot hold, or a spec load_spec could not have made): the
    message names what differs."""
    return reloaded(spec, os.path.join(os.path.abspath(folder), f"{spec.name}.toml")).text


def reloaded(spec: Spec, path: str) -> Spec:
    """`spec` as `benchsage run PATH` would load it from spec_toml's text saved at `path` (nothing
    is written): its path, text and digest those of that file, all else equal. What a journal
    should record of a spec that was never a file, so that `resume` reads it back. SpecError as
    spec_toml."""
    path = os.path.abspath(path)
    try:
        text = emit.dumps(_document(spec, os.path.dirname(path)))
    except ValueError as exc:
        raise SpecError(f"cannot write the spec of {spec.name!r} as TOML: {exc}") from None
    try:
        back = load_spec(path, text=text, generated=list(spec.generated), run_generator=False)
    except SpecError as exc:
        raise SpecError(f"cannot write the spec of {spec.name!r} as TOML: it would not load ({exc})") from None
    changed = differences(spec, back)
    if changed:  # a spec that would not reproduce is never saved
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        raise SpecError(f"cannot write the spec of {spec.name!r} as TOML: {', '.join(changed[:3])}{more} would read back "
                        "differently")
    return back


def save_spec(spec: Spec, path: str) -> str:
    """Write spec_toml into the file `path` (paths relative to its folder); returns the text."""
    text = spec_toml(spec, os.path.dirname(os.path.abspath(path)))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return text


def differences(a: Spec, b: Spec) -> list[str]:
    """Where two specs differ, as dotted field names (`tests[2].env`), ignoring where a spec was
    read from and how it was written (path, text) and what load says about it (warnings); empty
    when one is the other written and read back."""
    out: list[str] = []
    for f in dataclasses.fields(Spec):
        if f.name not in _NOT_COMPARED:
            _diff(getattr(a, f.name), getattr(b, f.name), f.name, out)
    return out


def _diff(a: Any, b: Any, where: str, out: list[str]) -> None:
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        for f in dataclasses.fields(a):
            _diff(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}", out)
    elif isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{where}[{i}]", out)
    elif a != b:
        out.append(where)


@dataclass(frozen=True)
class _Inherited:
    """What [experiment] gives the parts that inherit from it, chosen so each part says least."""

    env: dict[str, str]
    cwd: str
    timeout: float | None
    cpus: tuple[int, ...] | None
    metrics: tuple[MetricSpec, ...]


def _document(spec: Spec, folder: str) -> dict[str, Any]:
    declared = _declared(spec)
    base = _inherited(spec, declared, folder)
    doc: dict[str, Any] = {"experiment": _experiment(spec, base, folder)}
    if spec.deploy is not None:
        doc["deploy"] = _compact({"source": spec.deploy.source} | ({} if spec.deploy.source != "git" else {
            "rev": _unless(spec.deploy.rev, "HEAD"), "dirty": _unless(spec.deploy.dirty, "refuse")}))
    if spec.init is not None:
        doc["init"] = _init(spec.init, base, folder)
    if spec.teardown is not None:
        doc["teardown"] = _init(spec.teardown, base, folder)
    if spec.reset is not None:
        doc["reset"] = _reset(spec.reset, base, folder)
    if spec.workers != (WorkerSpec("local"),):
        doc["worker"] = [_worker(ws, folder) for ws in spec.workers]
    if spec.collectors:
        doc["collector"] = [_collector(c, base, folder) for c in spec.collectors]
    doc |= _treatments(spec.treatments)
    if spec.sweeps:
        doc["sweep"] = [{"name": s.name, "levels": [_level(v) for v in s.levels]} for s in spec.sweeps]
    if base.metrics:
        doc["metric"] = [_metric(m) for m in base.metrics]
    if spec.generator is not None:
        doc["generator"] = {"command": spec.generator}
    if declared:
        doc["test"] = [_test(t, base, folder) for t in declared]
    if spec.treatments.compare:
        doc["compare"] = [_compact({"a": c.a, "b": c.b, "metric": c.metric}) for c in spec.treatments.compare]
    return doc


def _generated(spec: Spec) -> tuple[TestSpec, ...]:
    """The tests the generator's commands became: the last ones, after every [[test]]'s."""
    if spec.generator is None or not spec.generated:
        return ()
    return spec.tests[len(spec.tests) - len(spec.generated):]


def _declared(spec: Spec) -> list[TestSpec]:
    """The [[test]]s as declared: each run of tests a sweep expanded from one [[test]] is that test."""
    out: list[TestSpec] = []
    for t in spec.tests[:len(spec.tests) - len(_generated(spec))]:
        test = t.declared if t.sweep and t.declared is not None else t
        if not (t.sweep and out and out[-1] == test):
            out.append(test)
    return out


def _inherited(spec: Spec, declared: Sequence[TestSpec], folder: str) -> _Inherited:
    """Generated tests and collectors of a fixed kind take [experiment]'s env, cwd (and the
    tests its timeout, cpus and metrics) as they are, so these say what it was; otherwise it
    holds what every part shares."""
    generated = _generated(spec)
    if generated:
        g = generated[0]
        return _Inherited(dict(g.env), g.cwd, g.timeout, g.cpus, g.metrics)
    parts: list[Any] = [*declared, *(c for c in spec.collectors if c.kind == "command")]
    parts += [p for p in (spec.reset, spec.init, spec.teardown) if p is not None]
    fixed = next((c for c in spec.collectors if c.kind != "command"), None)
    if fixed is not None:
        env, cwd = dict(fixed.env), fixed.cwd
    else:
        env = {k: v for k, v in parts[0].env.items() if all(p.env.get(k, None) == v for p in parts)} if parts else {}
        cwds = {p.cwd for p in parts}
        cwd = cwds.pop() if len(cwds) == 1 else folder
    timeouts, cpus = {t.timeout for t in declared}, {t.cpus for t in declared}
    return _Inherited(env, cwd, timeouts.pop() if len(timeouts) == 1 else None, cpus.pop() if len(cpus) == 1 else None, ())


def _experiment(spec: Spec, base: _Inherited, folder: str) -> dict[str, Any]:
    sequential = spec.stop != FIXED_STOP
    return _compact({
        "name": spec.name,
        "runs": spec.runs,
        "seed": spec.seed,
        "alpha": _number(spec.alpha),
        "correction": _unless(spec.correction, DEFAULT_CORRECTION),
        "random_orders": _unless(spec.random_orders, SHUFFLE),
        "stop": _unless(spec.stop, FIXED_STOP),
        "looks": spec.looks if sequential else None,
        "min_effect": _number(spec.min_effect) if sequential and spec.min_effect != DEFAULT_MIN_EFFECT else None,
        "decide": _unless(spec.decide, DECIDE_EACH) if sequential else None,
        "timeout": _number(base.timeout),
        "cpus": _cpu_list(base.cpus),
        "cpu_latency": spec.cpu_latency,
        "warmup": spec.warmup or None,
        "output_limit": _unless(spec.output_limit, DEFAULT_OUTPUT_LIMIT),
        "cwd": _unless(_relative(base.cwd, folder, folder), "."),
        "env": emit.Inline(base.env) if base.env else None,
    })


def _test(t: TestSpec, base: _Inherited, folder: str) -> dict[str, Any]:
    own = tuple(m for m in t.metrics if m.parser is None)
    default_primary = PARSERS[t.output].primary(t.command) + tuple(m.name for m in own) if t.output else ()
    table = _compact({
        "name": _unless(t.name, t.command),
        "command": t.command,
        "role": t.role,
        "output": t.output,
        "timeout": _number(t.timeout) if t.timeout != base.timeout else None,
        "cpus": _cpu_list(t.cpus) if t.cpus != base.cpus else None,
        "cwd": _cwd(t.cwd, base.cwd, folder),
        "env": _env(t.env, base.env),
        "primary": list(t.primary) if t.primary != default_primary else None,
        "prepare": t.prepare,
        "shell": None if t.shell else "none",
    })
    if own != base.metrics:
        table["metric"] = [_metric(m) for m in own]  # [] opts out of [experiment]'s [[metric]]s
    return table


def _metric(m: MetricSpec) -> dict[str, Any]:
    return _compact({"name": m.name, "regex": m.regex, "json": m.json, "file": m.file,
                     "line": m.line if m.file is not None and m.line != 0 else None,
                     "unit": _unless(m.unit, ""), "better": _unless(m.better, "lower")})


def _reset(r: ResetSpec, base: _Inherited, folder: str) -> dict[str, Any]:
    common = {"cwd": _cwd(r.cwd, base.cwd, folder), "env": _env(r.env, base.env)}
    if r.steps and (len(r.steps) > 1 or r.steps[0].role is not None):  # [[reset.step]]s; a plain reset with roles has one, of no role
        return _compact(common) | {"step": [_step(s, r, folder) for s in r.steps]}
    reboot = r.kind == "reboot"
    return _compact({
        "kind": _unless(r.kind, "command"),
        "command": _unless(r.command, DEFAULT_REBOOT_COMMAND) if reboot else r.command,
        "timeout": _number(_unless(r.timeout, DEFAULT_REBOOT_TIMEOUT if reboot else DEFAULT_RESET_TIMEOUT)),
    } | common)


def _step(s: ResetStep, r: ResetSpec, folder: str) -> dict[str, Any]:
    reboot = s.kind == "reboot"
    return _compact({
        "role": s.role,
        "kind": _unless(s.kind, "command"),
        "command": _unless(s.command, DEFAULT_REBOOT_COMMAND) if reboot else s.command,
        # [reset] leaves its own timeout out, so a command step's default is the reset's default
        "timeout": _number(_unless(s.timeout, DEFAULT_REBOOT_TIMEOUT if reboot else DEFAULT_RESET_TIMEOUT)),
        "cwd": _cwd(s.cwd, r.cwd, folder),
        "env": _env(s.env, r.env),
    })


def _init(i: InitSpec, base: _Inherited, folder: str) -> dict[str, Any]:
    return _compact({"command": i.command, "role": i.role, "timeout": _number(_unless(i.timeout, DEFAULT_INIT_TIMEOUT)),
                     "cwd": _cwd(i.cwd, base.cwd, folder), "env": _env(i.env, base.env)})


def _collector(c: CollectorSpec, base: _Inherited, folder: str) -> dict[str, Any]:
    unit, better = COLLECTOR_KINDS[c.kind]
    table = {"name": c.name, "role": c.role, "kind": c.kind, "command": c.command, "delta": c.delta or None,
             "unit": _unless(c.unit, unit), "better": _unless(c.better, better)}
    if c.kind == "command":  # the other kinds take [experiment]'s, and may not say so
        table |= {"cwd": _cwd(c.cwd, base.cwd, folder), "env": _env(c.env, base.env),
                  "timeout": _number(_unless(c.timeout, DEFAULT_COLLECTOR_TIMEOUT))}
    return _compact(table)


def _worker(ws: WorkerSpec, folder: str) -> dict[str, Any]:
    if ws.roles:
        return {"name": ws.name, "roles": {role: _host(member, folder) for role, member in ws.roles}}
    return {"name": ws.name} | _host(ws, folder)


def _host(ws: WorkerSpec, folder: str) -> dict[str, Any]:
    """A worker's keys but its name (a role's member is named by its group and role)."""
    return _compact({
        "kind": _unless(ws.kind, "local"),
        "host": ws.host,
        "node": ws.node,
        "het_group": ws.het_group,
        "nodes": ws.nodes,
        "partition": ws.partition,
        "constraint": ws.constraint,
        "time": ws.time,
        "allocate": ws.allocate,
        "release": ws.release,
        "transport": list(ws.transport) or None,
        "srun_args": list(ws.srun_args) or None,
        "ssh_config": None if ws.ssh_config is None else _tilde_safe(_relative(ws.ssh_config, folder, folder)),
        "dir": ws.dir,
        "python": ws.python,
        "boot_id": ws.boot_id,
        "reconnect_timeout": _number(_unless(ws.reconnect_timeout, 60.0)),
    })


def _treatments(t: Treatments) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if t.context is not None:
        c = t.context
        link = None if c.link_order is None else emit.Inline(objects=list(c.link_order.objects), build=c.link_order.build)
        doc["context"] = _compact({
            "variants": c.variants if c.variants != DEFAULT_VARIANTS else None,
            "env_bytes": list(c.env_bytes) if c.env_bytes is not None else None,
            "cwd_bytes": list(c.cwd_bytes) if c.cwd_bytes is not None else None,
            "cpus": [_cpu_list(cpus) for cpus in c.cpus] if c.cpus is not None else None,
            "aslr": list(c.aslr) if c.aslr is not None else None,
            "link_order": link,
        })
    if t.observer is not None:
        doc["observer"] = {"levels": emit.Inline(t.observer.levels)}
    if t.factors:
        doc["factor"] = [_compact({"name": f.name, "levels": [_level(v) for v in f.levels], "setup": f.setup, "env": f.env,
                                   "role": f.role}) for f in t.factors]
    return doc


def _compact(table: Mapping[str, Any]) -> dict[str, Any]:
    """The table without its None values: a key left out takes its default."""
    return {k: v for k, v in table.items() if v is not None}


def _unless(value: Any, default: Any) -> Any:
    return None if value == default else value


def _number(x: float | None) -> float | int | None:
    """A whole number as an integer (`timeout = 60`): load reads either as the same float."""
    return int(x) if x is not None and x.is_integer() and abs(x) < 2 ** 53 else x


def _level(level: str) -> str | int | float:
    """A level as the number it is when TOML reads that number back as the same text (8, 0.5;
    not 1e3, 08 or 1_000), else as a string."""
    if not _NUMBER.fullmatch(level):
        return level
    try:
        number = tomllib.loads(f"v = {level}")["v"]
    except tomllib.TOMLDecodeError:
        return level
    return number if str(number) == level else level


def _cpu_list(cpus: tuple[int, ...] | None) -> str | None:
    """CPUs in taskset's list syntax, consecutive ones as ranges: "0-3,6"."""
    if cpus is None:
        return None
    spans: list[list[int]] = []
    for cpu in cpus:
        if spans and cpu == spans[-1][1] + 1:
            spans[-1][1] = cpu
        else:
            spans.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _env(env: Mapping[str, str], inherited: Mapping[str, str]) -> emit.Inline | None:
    """What a part's env adds to the env it inherits (keys are added or replaced, never removed)."""
    own = {k: v for k, v in env.items() if inherited.get(k) != v}
    return emit.Inline(own) if own else None


def _cwd(path: str, base: str, folder: str) -> str | None:
    """A part's cwd as load joins it to `base` (the cwd it inherits); None when it is `base`."""
    return None if path == base else _relative(path, base, folder)


def _relative(path: str, base: str, folder: str) -> str:
    """`path` relative to `base` when both lie in `folder` (the spec moves with its folder), else absolute."""
    return os.path.relpath(path, base) if _inside(path, folder) and _inside(base, folder) else path


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _tilde_safe(path: str) -> str:
    """A relative path load would not take for a home directory (it expands ~ in ssh_config)."""
    return "./" + path if path.startswith("~") else path
