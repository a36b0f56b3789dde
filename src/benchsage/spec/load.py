"""Load and validate an experiment spec (TOML) into typed, frozen objects.

Every error names the file, the key and what was expected, and is a SpecError (exit 2), so a
typo is never silently ignored and a broken spec never starts an experiment.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass
from typing import Any, Mapping

from benchsage.errors import SpecError
from benchsage.spec import fields, outputs
from benchsage.spec.deploy import parse_deploy
from benchsage.spec.model import MetricSpec, ResetSpec, ResetStep, Spec, TestSpec
from benchsage.spec.provision import parse_init
from benchsage.spec.roles import check_roles, parse_collectors, parse_steps
from benchsage.spec.sweeps import expand_sweeps, parse_sweeps
from benchsage.spec.treatments import check_coverage, parse_treatments
from benchsage.spec.workers import parse_workers
from benchsage.vocabulary import (CORRECTIONS, DECIDE_EACH, DECIDE_RULES, DEFAULT_ALPHA, DEFAULT_CORRECTION, DEFAULT_MIN_EFFECT, DEFAULT_OUTPUT_LIMIT, DEFAULT_RUNS,
                                  FIXED_STOP, HARNESS_METRIC_UNITS, RANDOM_ORDERS, SEQUENTIAL_STOP, SHUFFLE, WILLIAMS)

DEFAULT_RESET_TIMEOUT = 60.0
GENERATOR_TIMEOUT = 60.0

_EXPERIMENT_KEYS = {"name", "runs", "seed", "alpha", "correction", "timeout", "env", "cwd", "output_limit", "cpus", "random_orders",
                   "stop", "looks", "min_effect", "decide", "cpu_latency", "warmup", "prepare", "shell"}
_TEST_KEYS = {"name", "command", "timeout", "env", "cwd", "metric", "cpus", "output", "primary", "role", "prepare", "shell"}
SHELLS = ("sh", "none")  # `shell`: /bin/sh -c where the command needs it (the default), or none (exec its words)
_METRIC_KEYS = {"name", "regex", "json", "file", "line", "unit", "better"}
_RESET_KEYS = {"command", "timeout", "env", "cwd", "kind", "step"}
_GENERATOR_KEYS = {"command", "timeout"}
DEFAULT_REBOOT_COMMAND = "sudo reboot"
DEFAULT_REBOOT_TIMEOUT = 900.0
_TOP_KEYS = {"experiment", "reset", "test", "metric", "generator", "worker", "context", "observer", "factor", "compare", "collector",
             "sweep", "deploy", "init", "teardown"}


def _metrics(w: fields.Where, where: str, items: Any) -> tuple[MetricSpec, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise w.error(where, f"'metric' must be an array of tables ([[...metric]]), got {fields.type_name(items)}")
    out: list[MetricSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(items, 1):
        here = f"{where}.metric #{i}" if where else f"[[metric]] #{i}"
        if not isinstance(item, dict):
            raise w.error(here, f"must be a table, got {fields.type_name(item)}")
        fields.check_keys(w, here, item, _METRIC_KEYS)
        name = fields.string(w, here, item, "name", required=True)
        assert name is not None
        here = f"{here} ('{name}')"
        if name in HARNESS_METRIC_UNITS:
            raise w.error(here, f"'{name}' is recorded by the harness itself; choose another name")
        if name in seen:
            raise w.error(here, f"duplicate metric name '{name}'")
        seen.add(name)
        sources = [k for k in ("regex", "json", "file") if k in item]
        if len(sources) != 1:
            raise w.error(here, "needs exactly one of 'regex', 'json' or 'file'" + (f" (got {', '.join(sources)})" if sources else ""))
        regex = fields.string(w, here, item, "regex")
        if regex is not None:
            try:
                compiled = re.compile(regex)
            except re.error as exc:
                raise w.error(here, f"key 'regex' is not a valid regular expression: {exc}") from None
            if compiled.groups < 1:
                raise w.error(here, "key 'regex' must have one capturing group around the number, e.g. 'ops/s: ([0-9.]+)'")
            outputs.check_regex_unit(w, here, compiled, fields.string(w, here, item, "unit", default="") or "")
        better = fields.string(w, here, item, "better", default="lower")
        if better not in ("lower", "higher"):
            raise w.error(here, f"key 'better' must be \"lower\" or \"higher\", got {better!r}")
        line = fields.integer(w, here, item, "line", 0, minimum=-(1 << 31))
        if "line" in item and "file" not in item:
            raise w.error(here, "key 'line' only applies to a 'file' metric")
        out.append(
            MetricSpec(
                name=name,
                unit=fields.string(w, here, item, "unit", default="") or "",
                better=better,
                regex=regex,
                json=fields.string(w, here, item, "json"),
                file=fields.string(w, here, item, "file"),
                line=int(line or 0),
            )
        )
    return tuple(out)


def _generate_tests(w: fields.Where, table: Mapping[str, Any], folder: str, env: Mapping[str, str]) -> list[str]:
    """Run the generator command; each non-empty output line is one test command."""
    fields.check_keys(w, "[generator]", table, _GENERATOR_KEYS)
    command = fields.string(w, "[generator]", table, "command", required=True)
    timeout = fields.number(w, "[generator]", table, "timeout", GENERATOR_TIMEOUT)
    try:
        proc = subprocess.run(
            ["/bin/sh", "-c", command or ""],
            cwd=folder,
            env={**os.environ, **env},
            capture_output=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise w.error("[generator]", f"command did not finish within {timeout:g} s") from None
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        detail = f": {err[-1]}" if err else ""
        raise w.error("[generator]", f"command exited with status {proc.returncode}{detail}")
    lines = [line.strip() for line in proc.stdout.decode(errors="replace").splitlines()]
    commands = [line for line in lines if line and not line.startswith("#")]
    if not commands:
        raise w.error("[generator]", "command printed no test commands (expected one per line)")
    return commands


@dataclass(frozen=True)
class _Defaults:
    """What every test inherits from [experiment] (and the top-level [[metric]])."""

    timeout: float | None
    env: dict[str, str]
    cwd: str
    metrics: tuple[MetricSpec, ...]
    cpus: tuple[int, ...] | None
    prepare: str | None = None
    shell: bool = True


def load_spec(
    path: str | os.PathLike[str], *, text: str | None = None, generated: list[str] | None = None, run_generator: bool = True
) -> Spec:
    """Read and validate a spec file. Raises SpecError naming the file and key on any problem.

    `text` parses that text as if it were the file at `path` (resume uses the journal's copy);
    `generated` gives the generator's commands instead of running the generator again.
    """
    path = os.path.abspath(os.fspath(path))
    w = fields.Where(_shown(path))
    if text is None:
        text = read_spec_text(path, w.path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{w.path}: invalid TOML: {exc}") from None

    fields.check_keys(w, "", doc, _TOP_KEYS)
    folder = os.path.dirname(path)
    exp = doc.get("experiment")
    if not isinstance(exp, dict):
        raise w.error("", "missing [experiment] table (it needs at least name = \"...\")")
    fields.check_keys(w, "[experiment]", exp, _EXPERIMENT_KEYS)
    settings = _settings(w, exp)
    defaults = _Defaults(
        timeout=fields.number(w, "[experiment]", exp, "timeout", None),
        env=fields.env(w, "[experiment]", exp, {}),
        cwd=fields.cwd(w, "[experiment]", exp, folder),
        metrics=_metrics(w, "", doc.get("metric")),
        cpus=fields.cpus(w, "[experiment]", exp, None),
        prepare=fields.string(w, "[experiment]", exp, "prepare"),
        shell=_shell(w, "[experiment]", exp, True),
    )
    sweeps = parse_sweeps(w, doc.get("sweep"))
    tests = expand_sweeps(w, sweeps, _tests(w, doc.get("test", []), defaults))
    generator = doc.get("generator")
    if generator is not None:
        if not isinstance(generator, dict):
            raise w.error("", f"'generator' must be a table ([generator]), got {fields.type_name(generator)}")
        if generated is None and run_generator:
            generated = _generate_tests(w, generator, defaults.cwd, defaults.env)
        tests += [TestSpec(command, command, defaults.timeout, dict(defaults.env), defaults.cwd, defaults.metrics, defaults.cpus)
                  for command in generated or ()]
    if not tests and (generator is None or run_generator):
        raise w.error("", "no tests: add at least one [[test]] with a command, or a [generator]")
    warnings = _check_names(w, tests)
    if settings["random_orders"] == WILLIAMS and len(tests) == 1:
        raise w.error("[experiment]", "key 'random_orders' = \"williams\" needs at least 2 tests (there is nothing to balance "
                      "with 1); remove it or add tests")
    treatments = parse_treatments(w, doc, tests)
    check_coverage(w, treatments, settings["runs"])
    workers = parse_workers(w, doc.get("worker"), folder)
    reset = _reset(w, doc.get("reset"), defaults, bool(workers[0].roles))
    collectors = parse_collectors(w, doc.get("collector"), defaults.cwd, defaults.env, {m.name for t in tests for m in t.metrics})
    check_roles(w, workers, tests, reset.steps if reset else (), treatments.factors, collectors)
    return Spec(
        path=path,
        tests=tuple(tests),
        reset=reset,
        workers=workers,
        collectors=collectors,
        text=text,
        generator=generator.get("command") if isinstance(generator, dict) else None,
        generated=tuple(generated or ()),
        warnings=tuple(warnings),
        treatments=treatments,
        sweeps=sweeps,
        deploy=parse_deploy(w, doc.get("deploy"), workers),
        init=parse_init(w, doc.get("init"), defaults.cwd, defaults.env, workers[0].role_names),
        teardown=parse_init(w, doc.get("teardown"), defaults.cwd, defaults.env, workers[0].role_names, key="teardown"),
        **settings,
    )


def _settings(w: fields.Where, exp: Mapping[str, Any]) -> dict[str, Any]:
    """The experiment-wide settings of [experiment], as Spec's fields."""
    name = fields.string(w, "[experiment]", exp, "name", required=True)
    assert name is not None
    if "/" in name or name in (".", ".."):
        raise w.error("[experiment]", f"key 'name' must not contain '/', got {name!r}")
    runs = int(fields.integer(w, "[experiment]", exp, "runs", DEFAULT_RUNS, minimum=1) or DEFAULT_RUNS)
    seed = fields.integer(w, "[experiment]", exp, "seed", None, minimum=0)
    alpha = fields.number(w, "[experiment]", exp, "alpha", DEFAULT_ALPHA)
    assert alpha is not None
    if not 0 < alpha < 1:
        raise w.error("[experiment]", f"key 'alpha' must be between 0 and 1, got {alpha}")
    correction = fields.string(w, "[experiment]", exp, "correction", default=DEFAULT_CORRECTION)
    if correction not in CORRECTIONS:
        raise w.error("[experiment]", f"key 'correction' must be \"bonferroni\" or \"holm\", got {correction!r}")
    random_orders = fields.string(w, "[experiment]", exp, "random_orders", default=SHUFFLE)
    if random_orders not in RANDOM_ORDERS:
        raise w.error("[experiment]", f"key 'random_orders' must be \"shuffle\" or \"williams\", got {random_orders!r}")
    stop, looks, min_effect, decide = _stopping(w, exp, runs)
    output_limit = fields.integer(w, "[experiment]", exp, "output_limit", DEFAULT_OUTPUT_LIMIT, minimum=1024)
    cpu_latency = fields.integer(w, "[experiment]", exp, "cpu_latency", None, minimum=0)
    warmup = fields.integer(w, "[experiment]", exp, "warmup", 0, minimum=0)
    return {
        "warmup": int(warmup or 0),
        "name": name,
        "runs": runs,
        "seed": seed,
        "alpha": alpha,
        "correction": correction or DEFAULT_CORRECTION,
        "random_orders": random_orders or SHUFFLE,
        "stop": stop,
        "looks": looks,
        "min_effect": min_effect,
        "decide": decide,
        "output_limit": int(output_limit or DEFAULT_OUTPUT_LIMIT),
        "cpu_latency": cpu_latency,
    }


def _tests(w: fields.Where, items: Any, defaults: _Defaults) -> list[TestSpec]:
    tests: list[TestSpec] = []
    for i, here, item in fields.tables(w, items, "test"):
        fields.check_keys(w, here, item, _TEST_KEYS)
        command = fields.string(w, here, item, "command", required=True)
        assert command is not None
        test_name = fields.string(w, here, item, "name", default=command) or command
        here = f"[[test]] #{i} ('{test_name}')"
        own = _metrics(w, here, item.get("metric"))
        metrics = own if "metric" in item else defaults.metrics  # `metric = []` opts out of the global ones
        output, parsed, default_primary = outputs.parser_metrics(w, here, item, command)
        if parsed:
            clash = sorted({m.name for m in parsed} & {m.name for m in metrics})
            if clash:
                raise w.error(here, f"metric '{clash[0]}' is given by output = {output!r} too; rename the [[metric]]")
            default_primary += tuple(m.name for m in metrics)
            metrics = parsed + metrics
        tests.append(
            TestSpec(
                name=test_name,
                command=command,
                timeout=fields.number(w, here, item, "timeout", defaults.timeout),
                env=fields.env(w, here, item, defaults.env),
                cwd=fields.cwd(w, here, item, defaults.cwd),
                metrics=metrics,
                cpus=fields.cpus(w, here, item, defaults.cpus),
                role=fields.string(w, here, item, "role"),
                output=output,
                primary=outputs.primary(w, here, item, metrics, default_primary),
                prepare=fields.string(w, here, item, "prepare", default=defaults.prepare),
                shell=_command_shell(w, here, command, _shell(w, here, item, defaults.shell)),
            )
        )
    return tests


def _shell(w: fields.Where, here: str, table: Mapping[str, Any], default: bool) -> bool:
    """`shell`: "sh" (True: /bin/sh -c where the command needs it) or "none" (False)."""
    value = fields.string(w, here, table, "shell")
    if value is None:
        return default
    if value not in SHELLS:
        raise w.error(here, f"key 'shell' must be \"sh\" or \"none\", got {value!r}")
    return value == "sh"


def _command_shell(w: fields.Where, here: str, command: str, shell: bool) -> bool:
    """A command run with no shell must split into words as a shell would (quotes closed)."""
    if not shell:
        try:
            words = shlex.split(command)
        except ValueError as exc:
            raise w.error(here, f"shell = \"none\": the command cannot be split into words ({exc}): {command!r}") from None
        if not words:
            raise w.error(here, "shell = \"none\": the command has no words")
    return shell


def _check_names(w: fields.Where, tests: list[TestSpec]) -> list[str]:
    """A test is its name: names are unique. Tests may share a command when their env or cwd
    differ; the same command, env and cwd twice under two names is an A/A test: allowed, and
    said (the warnings returned)."""
    names: dict[str, int] = {}
    same: dict[tuple[str, tuple[tuple[str, str], ...], str], int] = {}
    warnings: list[str] = []
    for i, t in enumerate(tests, 1):
        if t.name in names:
            hint = ("; two tests with the same command need a `name` each (the same command, env and cwd twice is an A/A test)"
                    if t.name == t.command else "; test names must be unique")
            raise w.error(f"[[test]] #{i}", f"duplicate test name '{t.name}' (also test #{names[t.name]}){hint}")
        names[t.name] = i
        key = (t.command, tuple(sorted(t.env.items())), t.cwd)
        if key in same:
            first = tests[same[key] - 1].name
            warnings.append(f"tests '{first}' and '{t.name}' run the same command with the same env and cwd: an A/A test "
                            "(any difference the analysis finds between them is noise or order)")
        else:
            same[key] = i
    return warnings


def _reset(w: fields.Where, reset_doc: Any, defaults: _Defaults, roles: bool) -> ResetSpec | None:
    if reset_doc is None:
        return None
    if not isinstance(reset_doc, dict):
        raise w.error("", f"'reset' must be a table ([reset]), got {fields.type_name(reset_doc)}")
    fields.check_keys(w, "[reset]", reset_doc, _RESET_KEYS)
    if "step" in reset_doc:
        return _reset_steps(w, reset_doc, defaults, roles)
    reset_kind = fields.string(w, "[reset]", reset_doc, "kind", default="command")
    if reset_kind not in ("command", "reboot"):
        raise w.error("[reset]", f"key 'kind' must be \"command\" or \"reboot\", got {reset_kind!r}")
    if reset_kind == "reboot":
        reset_command = fields.string(w, "[reset]", reset_doc, "command", default=DEFAULT_REBOOT_COMMAND)
        default_reset_timeout = DEFAULT_REBOOT_TIMEOUT
    else:
        reset_command = fields.string(w, "[reset]", reset_doc, "command", required=True)
        default_reset_timeout = DEFAULT_RESET_TIMEOUT
    assert reset_command is not None
    timeout = fields.number(w, "[reset]", reset_doc, "timeout", default_reset_timeout) or default_reset_timeout
    cwd = fields.cwd(w, "[reset]", reset_doc, defaults.cwd)
    env = fields.env(w, "[reset]", reset_doc, defaults.env)
    kind = reset_kind or "command"
    # With roles, a plain reset runs on every role's host, in declared order.
    steps = (ResetStep(None, reset_command, timeout, cwd, env, kind),) if roles else ()
    return ResetSpec(command=reset_command, timeout=timeout, cwd=cwd, env=env, kind=kind, steps=steps)


def _reset_steps(w: fields.Where, reset_doc: Mapping[str, Any], defaults: _Defaults, roles: bool) -> ResetSpec:
    """[reset] with [[reset.step]]s: each step on its role's host, in order."""
    if not roles:
        raise w.error("[reset]", "key 'step' needs workers with roles ([worker.roles.NAME]); without roles give [reset] a "
                                 "`command`")
    for key in ("command", "kind"):
        if key in reset_doc:
            raise w.error("[reset]", f"key '{key}' cannot be given with [[reset.step]]: put it in the steps")
    timeout = fields.number(w, "[reset]", reset_doc, "timeout", DEFAULT_RESET_TIMEOUT) or DEFAULT_RESET_TIMEOUT
    cwd = fields.cwd(w, "[reset]", reset_doc, defaults.cwd)
    env = fields.env(w, "[reset]", reset_doc, defaults.env)
    steps = parse_steps(w, reset_doc["step"], timeout, cwd, env, (DEFAULT_REBOOT_COMMAND, DEFAULT_REBOOT_TIMEOUT))
    command = "; ".join(f"{s.role}: {s.command}" for s in steps)
    kind = "reboot" if any(s.kind == "reboot" for s in steps) else "command"
    return ResetSpec(command=command, timeout=max(s.timeout for s in steps), cwd=cwd, env=env, kind=kind, steps=steps)


def _stopping(w: fields.Where, exp: Mapping[str, Any], runs: int) -> tuple[str, int | None, float, str]:
    """`stop`, `looks`, `min_effect` and `decide`: the last three only mean something with
    stop = "sequential", so giving them without it is an error rather than a silently fixed
    experiment."""
    stop = fields.string(w, "[experiment]", exp, "stop", default=FIXED_STOP)
    if stop not in (FIXED_STOP, SEQUENTIAL_STOP):
        raise w.error("[experiment]", f"key 'stop' must be \"fixed\" or \"sequential\", got {stop!r}")
    looks = fields.integer(w, "[experiment]", exp, "looks", None, minimum=1)
    if looks is not None and looks > runs:
        raise w.error("[experiment]", f"key 'looks' ({looks}) is larger than 'runs' ({runs}): each look needs at least one "
                      "new run per arm; lower 'looks' or raise 'runs'")
    min_effect = fields.number(w, "[experiment]", exp, "min_effect", DEFAULT_MIN_EFFECT)
    assert min_effect is not None
    decide = fields.string(w, "[experiment]", exp, "decide", default=DECIDE_EACH)
    if decide not in DECIDE_RULES:
        raise w.error("[experiment]", f"key 'decide' must be \"each\" (stop when every test is decided) or \"verdict\" "
                      f"(stop when an order effect is found in some test, or none anywhere), got {decide!r}")
    given = [key for key in ("looks", "min_effect", "decide") if key in exp]
    if stop == FIXED_STOP and given:
        keys = " and ".join(f"'{key}'" for key in given)
        several = len(given) > 1
        raise w.error("[experiment]", f"{'keys' if several else 'key'} {keys} only {'apply' if several else 'applies'} with "
                      f"stop = \"sequential\"; add it, or remove {'them' if several else 'it'} to carry out every planned run")
    return stop or FIXED_STOP, looks, min_effect, decide or DECIDE_EACH


def missing_files(spec: Spec) -> list[str]:
    """The files the spec names that carrying it out needs and that are not there (a worker's
    ssh_config, which a fleet's set-up may write after the plan was made), each said as an
    error of the spec: `run` and `resume` stop on the first, `plan` only mentions them."""
    w = fields.Where(_shown(spec.path))
    return [str(w.error(f"[[worker]] #{i}", f"ssh_config {ws.ssh_config!r} is not a file"))
            for i, ws in enumerate(spec.workers, 1) if ws.ssh_config is not None and not os.path.isfile(ws.ssh_config)]


def check_files(spec: Spec) -> None:
    """SpecError (exit 2) naming the first file of missing_files, if any."""
    missing = missing_files(spec)
    if missing:
        raise SpecError(missing[0])


def _shown(path: str) -> str:
    """The spec's path as its errors name it: relative to here unless it lies above (`..`
    itself as its first part; a folder named `..data` lies below)."""
    shown = os.path.relpath(path)
    return path if shown == os.pardir or shown.startswith(os.pardir + os.sep) else shown


def read_spec_text(path: str, shown: str) -> str:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise SpecError(f"{shown}: spec file not found") from None
    except IsADirectoryError:
        raise SpecError(f"{shown}: is a directory, expected a spec file (TOML)") from None
    except OSError as exc:
        raise SpecError(f"{shown}: cannot read spec file: {exc.strerror}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"{shown}: not a text file (expected TOML in UTF-8)") from None
