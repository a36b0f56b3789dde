"""Load and validate an experiment spec (TOML) into typed, frozen objects.

Every error names the file, the key and what was expected, and is a SpecError (exit 2), so a
typo is never silently ignored and a broken spec never starts an experiment.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import subprocess
import tomllib
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from benchsage.design.plan import RANDOM_ORDERS, SHUFFLE, WILLIAMS
from benchsage.errors import SpecError
from benchsage.execute.worker import DEFAULT_OUTPUT_LIMIT
from benchsage.store.table import HARNESS_METRIC_INFO
from benchsage.treatments import Treatments, check_coverage, parse_treatments

DEFAULT_RUNS = 10
DEFAULT_ALPHA = 0.05
DEFAULT_RESET_TIMEOUT = 60.0
GENERATOR_TIMEOUT = 60.0
FIXED_STOP = "fixed"  # `stop`: every planned run
SEQUENTIAL_STOP = "sequential"  # `stop`: looks between runs, stop when every test is decided (design/sequential.py)
DEFAULT_MIN_EFFECT = 2.0  # percent


@dataclass(frozen=True)
class MetricSpec:
    """A value read from a trial's output, beside the harness's own wall/user/sys time and RSS.

    Exactly one source: `regex` (first group of the last match in stdout), `json` (a dotted
    key path into a JSON object printed on stdout), or `file` (a results file written by the
    test, one number per line, OrderSage style; `line` picks which, 0-based).
    """

    name: str
    unit: str = ""
    better: str = "lower"
    regex: str | None = None
    json: str | None = None
    file: str | None = None
    line: int = 0

    @property
    def source(self) -> str:
        return "regex" if self.regex is not None else "json" if self.json is not None else "file"


@dataclass(frozen=True)
class TestSpec:
    """One unit under evaluation: a command and its settings."""

    __test__ = False  # not a pytest test class

    name: str
    command: str
    timeout: float | None
    env: Mapping[str, str]
    cwd: str  # absolute
    metrics: tuple[MetricSpec, ...] = ()
    cpus: tuple[int, ...] | None = None  # pin the test's trials to these CPUs (taskset list syntax in the spec)

    @property
    def primary_metrics(self) -> tuple[str, ...]:
        """The correction family: declared metrics, or wall_time for a test that declares none."""
        return tuple(m.name for m in self.metrics) or ("wall_time",)


@dataclass(frozen=True)
class ResetSpec:
    """What runs before every run: a command, or a reboot of the worker's host (kind "reboot":
    verified by a new boot id when the host answers again)."""

    command: str
    timeout: float
    cwd: str
    env: Mapping[str, str]
    kind: str = "command"  # "command" | "reboot"


@dataclass(frozen=True)
class WorkerSpec:
    """Where trials run: this machine, an ssh host, a Slurm node, or any transport command."""

    name: str
    kind: str = "local"
    host: str | None = None  # ssh
    ssh_config: str | None = None  # ssh: absolute path of an ssh config file (ssh -F)
    node: str | None = None  # slurm
    srun_args: tuple[str, ...] = ()  # slurm
    transport: tuple[str, ...] = ()  # command
    dir: str | None = None  # the spec's folder on the host; None: the same path as here
    python: str | None = None  # interpreter for the agent on the host (words); None: python3 (local: this one)
    boot_id: str | None = None  # command printing the host's boot identity; None: the kernel's boot_id
    reconnect_timeout: float = 60.0

    @property
    def target(self) -> str:
        """What the worker reaches, for plans and messages."""
        if self.kind == "ssh":
            return f"ssh {self.host}"
        if self.kind == "slurm":
            return f"slurm node {self.node}"
        if self.kind == "command":
            return " ".join(self.transport)
        return "this machine"


@dataclass(frozen=True)
class Spec:
    path: str  # absolute path of the spec file
    name: str
    runs: int
    seed: int | None
    alpha: float
    correction: str
    tests: tuple[TestSpec, ...]
    reset: ResetSpec | None
    workers: tuple[WorkerSpec, ...] = (WorkerSpec("local"),)
    output_limit: int = DEFAULT_OUTPUT_LIMIT
    text: str = ""  # the spec file as written
    generator: str | None = None
    generated: tuple[str, ...] = ()  # the commands the generator printed
    random_orders: str = SHUFFLE  # the random arm's orders: "shuffle" or "williams" (design/plan.py)
    warnings: tuple[str, ...] = ()  # what is allowed but worth saying (an A/A test), shown by plan and run
    treatments: Treatments = Treatments()  # contexts, observer levels, factors, comparisons (treatments.py)
    stop: str = FIXED_STOP  # "fixed" or "sequential"
    looks: int | None = None  # sequential: interim analyses; None: design.sequential.default_looks(runs)
    min_effect: float = DEFAULT_MIN_EFFECT  # sequential: percent; a smaller shift is decided "no-effect"

    @property
    def folder(self) -> str:
        return os.path.dirname(self.path)

    @property
    def digest(self) -> str:
        """sha256 of what determines the experiment: the spec text and the resolved tests."""
        h = hashlib.sha256(self.text.encode())
        for t in self.tests:
            h.update(b"\0" + t.name.encode() + b"\0" + t.command.encode())
        return h.hexdigest()


# --------------------------------------------------------------------------------------------
# Loading and validation

_EXPERIMENT_KEYS = {"name", "runs", "seed", "alpha", "correction", "timeout", "env", "cwd", "output_limit", "cpus", "random_orders",
                   "stop", "looks", "min_effect"}
_TEST_KEYS = {"name", "command", "timeout", "env", "cwd", "metric", "cpus"}
_METRIC_KEYS = {"name", "regex", "json", "file", "line", "unit", "better"}
_RESET_KEYS = {"command", "timeout", "env", "cwd", "kind"}
_GENERATOR_KEYS = {"command", "timeout"}
_WORKER_COMMON = {"name", "kind", "dir", "python", "boot_id", "reconnect_timeout"}
_WORKER_KEYS = {
    "local": _WORKER_COMMON,
    "ssh": _WORKER_COMMON | {"host", "ssh_config"},
    "slurm": _WORKER_COMMON | {"node", "srun_args"},
    "command": _WORKER_COMMON | {"transport"},
}
DEFAULT_REBOOT_COMMAND = "sudo reboot"
DEFAULT_REBOOT_TIMEOUT = 900.0
_TOP_KEYS = {"experiment", "reset", "test", "metric", "generator", "worker", "context", "observer", "factor", "compare"}
_CORRECTIONS = ("bonferroni", "holm")


class _Where:
    """Builds error messages that name the file and the key."""

    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, where: str, what: str) -> SpecError:
        return SpecError(f"{self.path}: {where}: {what}" if where else f"{self.path}: {what}")


def _type_name(value: Any) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "true/false", list: "an array", dict: "a table"}.get(
        type(value), type(value).__name__
    )


def _check_keys(w: _Where, where: str, table: Mapping[str, Any], allowed: set[str]) -> None:
    for key in table:
        if key not in allowed:
            hint = ", ".join(sorted(allowed))
            raise w.error(where, f"unknown key '{key}' (expected one of: {hint})")


def _tables(w: _Where, items: Any, key: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """The tables of an array of tables ([[key]]): (1-based number, "[[key]] #n", table)."""
    if not isinstance(items, list):
        raise w.error("", f"'{key}' must be an array of tables ([[{key}]]), got {_type_name(items)}")
    for i, item in enumerate(items, 1):
        here = f"[[{key}]] #{i}"
        if not isinstance(item, dict):
            raise w.error(here, f"must be a table, got {_type_name(item)}")
        yield i, here, item


def _string(w: _Where, where: str, table: Mapping[str, Any], key: str, *, required: bool = False, default: str | None = None) -> str | None:
    if key not in table:
        if required:
            raise w.error(where, f"missing required key '{key}'")
        return default
    value = table[key]
    if not isinstance(value, str):
        raise w.error(where, f"key '{key}' must be a string, got {_type_name(value)}")
    if required and not value.strip():
        raise w.error(where, f"key '{key}' must not be empty")
    return value


def _number(w: _Where, where: str, table: Mapping[str, Any], key: str, default: float | None, *, positive: bool = True) -> float | None:
    if key not in table:
        return default
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise w.error(where, f"key '{key}' must be a number, got {_type_name(value)}")
    if positive and value <= 0:
        raise w.error(where, f"key '{key}' must be positive, got {value}")
    return float(value)


def _integer(w: _Where, where: str, table: Mapping[str, Any], key: str, default: int | None, *, minimum: int) -> int | None:
    if key not in table:
        return default
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise w.error(where, f"key '{key}' must be an integer, got {_type_name(value)}")
    if value < minimum:
        raise w.error(where, f"key '{key}' must be at least {minimum}, got {value}")
    return value


def _env(w: _Where, where: str, table: Mapping[str, Any], inherited: Mapping[str, str]) -> dict[str, str]:
    if "env" not in table:
        return dict(inherited)
    value = table["env"]
    if not isinstance(value, dict):
        raise w.error(where, f"key 'env' must be a table of strings, got {_type_name(value)}")
    env = dict(inherited)
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise w.error(where, f"env.{k} must be a string, got {_type_name(v)}")
        env[k] = str(v)
    return env


def _cwd(w: _Where, where: str, table: Mapping[str, Any], base: str) -> str:
    value = _string(w, where, table, "cwd")
    return base if value is None else os.path.normpath(os.path.join(base, value))


def _metrics(w: _Where, where: str, items: Any) -> tuple[MetricSpec, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise w.error(where, f"'metric' must be an array of tables ([[...metric]]), got {_type_name(items)}")
    out: list[MetricSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(items, 1):
        here = f"{where}.metric #{i}" if where else f"[[metric]] #{i}"
        if not isinstance(item, dict):
            raise w.error(here, f"must be a table, got {_type_name(item)}")
        _check_keys(w, here, item, _METRIC_KEYS)
        name = _string(w, here, item, "name", required=True)
        assert name is not None
        here = f"{here} ('{name}')"
        if name in HARNESS_METRIC_INFO:
            raise w.error(here, f"'{name}' is recorded by the harness itself; choose another name")
        if name in seen:
            raise w.error(here, f"duplicate metric name '{name}'")
        seen.add(name)
        sources = [k for k in ("regex", "json", "file") if k in item]
        if len(sources) != 1:
            raise w.error(here, "needs exactly one of 'regex', 'json' or 'file'" + (f" (got {', '.join(sources)})" if sources else ""))
        regex = _string(w, here, item, "regex")
        if regex is not None:
            try:
                compiled = re.compile(regex)
            except re.error as exc:
                raise w.error(here, f"key 'regex' is not a valid regular expression: {exc}") from None
            if compiled.groups < 1:
                raise w.error(here, "key 'regex' must have one capturing group around the number, e.g. 'ops/s: ([0-9.]+)'")
        better = _string(w, here, item, "better", default="lower")
        if better not in ("lower", "higher"):
            raise w.error(here, f"key 'better' must be \"lower\" or \"higher\", got {better!r}")
        line = _integer(w, here, item, "line", 0, minimum=-(1 << 31))
        if "line" in item and "file" not in item:
            raise w.error(here, "key 'line' only applies to a 'file' metric")
        out.append(
            MetricSpec(
                name=name,
                unit=_string(w, here, item, "unit", default="") or "",
                better=better,
                regex=regex,
                json=_string(w, here, item, "json"),
                file=_string(w, here, item, "file"),
                line=int(line or 0),
            )
        )
    return tuple(out)


def _generate_tests(w: _Where, table: Mapping[str, Any], folder: str, env: Mapping[str, str]) -> list[str]:
    """Run the generator command; each non-empty output line is one test command."""
    _check_keys(w, "[generator]", table, _GENERATOR_KEYS)
    command = _string(w, "[generator]", table, "command", required=True)
    timeout = _number(w, "[generator]", table, "timeout", GENERATOR_TIMEOUT)
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


def load_spec(
    path: str | os.PathLike[str], *, text: str | None = None, generated: list[str] | None = None, run_generator: bool = True
) -> Spec:
    """Read and validate a spec file. Raises SpecError naming the file and key on any problem.

    `text` parses that text as if it were the file at `path` (resume uses the journal's copy);
    `generated` gives the generator's commands instead of running the generator again.
    """
    path = os.path.abspath(os.fspath(path))
    w = _Where(os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path)
    if text is None:
        text = read_spec_text(path, w.path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{w.path}: invalid TOML: {exc}") from None

    _check_keys(w, "", doc, _TOP_KEYS)
    folder = os.path.dirname(path)
    exp = doc.get("experiment")
    if not isinstance(exp, dict):
        raise w.error("", "missing [experiment] table (it needs at least name = \"...\")")
    _check_keys(w, "[experiment]", exp, _EXPERIMENT_KEYS)
    name = _string(w, "[experiment]", exp, "name", required=True)
    assert name is not None
    if "/" in name or name in (".", ".."):
        raise w.error("[experiment]", f"key 'name' must not contain '/', got {name!r}")
    runs = _integer(w, "[experiment]", exp, "runs", DEFAULT_RUNS, minimum=1)
    seed = _integer(w, "[experiment]", exp, "seed", None, minimum=0)
    alpha = _number(w, "[experiment]", exp, "alpha", DEFAULT_ALPHA)
    assert alpha is not None
    if not 0 < alpha < 1:
        raise w.error("[experiment]", f"key 'alpha' must be between 0 and 1, got {alpha}")
    correction = _string(w, "[experiment]", exp, "correction", default="bonferroni")
    if correction not in _CORRECTIONS:
        raise w.error("[experiment]", f"key 'correction' must be \"bonferroni\" or \"holm\", got {correction!r}")
    random_orders = _string(w, "[experiment]", exp, "random_orders", default=SHUFFLE)
    if random_orders not in RANDOM_ORDERS:
        raise w.error("[experiment]", f"key 'random_orders' must be \"shuffle\" or \"williams\", got {random_orders!r}")
    stop, looks, min_effect = _stopping(w, exp, int(runs or DEFAULT_RUNS))
    default_timeout = _number(w, "[experiment]", exp, "timeout", None)
    output_limit = _integer(w, "[experiment]", exp, "output_limit", DEFAULT_OUTPUT_LIMIT, minimum=1024)
    global_env = _env(w, "[experiment]", exp, {})
    global_cwd = _cwd(w, "[experiment]", exp, folder)
    global_metrics = _metrics(w, "", doc.get("metric"))
    global_cpus = _cpus(w, "[experiment]", exp, None)

    tests: list[TestSpec] = []
    for i, here, item in _tables(w, doc.get("test", []), "test"):
        _check_keys(w, here, item, _TEST_KEYS)
        command = _string(w, here, item, "command", required=True)
        assert command is not None
        test_name = _string(w, here, item, "name", default=command) or command
        here = f"[[test]] #{i} ('{test_name}')"
        own = _metrics(w, here, item.get("metric"))
        tests.append(
            TestSpec(
                name=test_name,
                command=command,
                timeout=_number(w, here, item, "timeout", default_timeout),
                env=_env(w, here, item, global_env),
                cwd=_cwd(w, here, item, global_cwd),
                metrics=own if "metric" in item else global_metrics,  # `metric = []` opts out of the global ones
                cpus=_cpus(w, here, item, global_cpus),
            )
        )

    generator = doc.get("generator")
    generator_command = None
    if generator is not None:
        if not isinstance(generator, dict):
            raise w.error("", f"'generator' must be a table ([generator]), got {_type_name(generator)}")
        generator_command = generator.get("command")
        if generated is None and run_generator:
            generated = _generate_tests(w, generator, global_cwd, global_env)
        for command in generated or ():
            tests.append(TestSpec(command, command, default_timeout, dict(global_env), global_cwd, global_metrics, global_cpus))

    if not tests and (generator is None or run_generator):
        raise w.error("", "no tests: add at least one [[test]] with a command, or a [generator]")
    # A test is its name. Tests may share a command when their env or cwd differ; the same
    # command, env and cwd twice under two names is an A/A test: allowed, and said.
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
    if random_orders == WILLIAMS and len(tests) == 1:
        raise w.error("[experiment]", "key 'random_orders' = \"williams\" needs at least 2 tests (there is nothing to balance "
                      "with 1); remove it or add tests")

    treatments = parse_treatments(w, doc, tests)
    check_coverage(w, treatments, int(runs or DEFAULT_RUNS))

    reset = None
    reset_doc = doc.get("reset")
    if reset_doc is not None:
        if not isinstance(reset_doc, dict):
            raise w.error("", f"'reset' must be a table ([reset]), got {_type_name(reset_doc)}")
        _check_keys(w, "[reset]", reset_doc, _RESET_KEYS)
        reset_kind = _string(w, "[reset]", reset_doc, "kind", default="command")
        if reset_kind not in ("command", "reboot"):
            raise w.error("[reset]", f"key 'kind' must be \"command\" or \"reboot\", got {reset_kind!r}")
        if reset_kind == "reboot":
            reset_command = _string(w, "[reset]", reset_doc, "command", default=DEFAULT_REBOOT_COMMAND)
            default_reset_timeout = DEFAULT_REBOOT_TIMEOUT
        else:
            reset_command = _string(w, "[reset]", reset_doc, "command", required=True)
            default_reset_timeout = DEFAULT_RESET_TIMEOUT
        assert reset_command is not None
        reset = ResetSpec(
            command=reset_command,
            timeout=_number(w, "[reset]", reset_doc, "timeout", default_reset_timeout) or default_reset_timeout,
            cwd=_cwd(w, "[reset]", reset_doc, global_cwd),
            env=_env(w, "[reset]", reset_doc, global_env),
            kind=reset_kind or "command",
        )

    workers = _workers(w, doc.get("worker"), folder)
    return Spec(
        path=path,
        name=name,
        runs=int(runs or DEFAULT_RUNS),
        seed=seed,
        alpha=alpha,
        correction=correction or "bonferroni",
        tests=tuple(tests),
        reset=reset,
        workers=workers,
        output_limit=int(output_limit or DEFAULT_OUTPUT_LIMIT),
        text=text,
        generator=generator_command,
        generated=tuple(generated or ()),
        random_orders=random_orders or SHUFFLE,
        warnings=tuple(warnings),
        treatments=treatments,
        stop=stop,
        looks=looks,
        min_effect=min_effect,
    )


def _stopping(w: _Where, exp: Mapping[str, Any], runs: int) -> tuple[str, int | None, float]:
    """`stop`, `looks` and `min_effect`: the last two only mean something with stop = "sequential",
    so giving them without it is an error rather than a silently fixed experiment."""
    stop = _string(w, "[experiment]", exp, "stop", default=FIXED_STOP)
    if stop not in (FIXED_STOP, SEQUENTIAL_STOP):
        raise w.error("[experiment]", f"key 'stop' must be \"fixed\" or \"sequential\", got {stop!r}")
    looks = _integer(w, "[experiment]", exp, "looks", None, minimum=1)
    if looks is not None and looks > runs:
        raise w.error("[experiment]", f"key 'looks' ({looks}) is larger than 'runs' ({runs}): each look needs at least one "
                      "new run per arm; lower 'looks' or raise 'runs'")
    min_effect = _number(w, "[experiment]", exp, "min_effect", DEFAULT_MIN_EFFECT)
    assert min_effect is not None
    given = [key for key in ("looks", "min_effect") if key in exp]
    if stop == FIXED_STOP and given:
        keys = " and ".join(f"'{key}'" for key in given)
        several = len(given) > 1
        raise w.error("[experiment]", f"{'keys' if several else 'key'} {keys} only {'apply' if several else 'applies'} with "
                      f"stop = \"sequential\"; add it, or remove {'them' if several else 'it'} to carry out every planned run")
    return stop or FIXED_STOP, looks, min_effect


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


def _string_list(w: _Where, where: str, table: Mapping[str, Any], key: str, *, required: bool = False) -> tuple[str, ...]:
    if key not in table:
        if required:
            raise w.error(where, f"missing required key '{key}'")
        return ()
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise w.error(where, f"key '{key}' must be an array of strings, got {_type_name(value)}")
    if required and not value:
        raise w.error(where, f"key '{key}' must not be empty")
    return tuple(value)


def _cpus(w: _Where, where: str, table: dict[str, Any], default: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """`cpus`: a CPU list in taskset syntax ("0-3,6", "1-7:2"); whether the worker's host has
    them is checked when it connects."""
    from benchsage.vocabulary import parse_cpu_list

    if "cpus" not in table:
        return default
    value = table["cpus"]
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else _string(w, where, table, "cpus")
    assert text is not None
    try:
        return tuple(parse_cpu_list(text))
    except ValueError as exc:
        raise w.error(where, f"key 'cpus': {exc}") from None


def _workers(w: _Where, items: Any, folder: str) -> tuple[WorkerSpec, ...]:
    if items is None:
        return (WorkerSpec("local"),)
    out: list[WorkerSpec] = []
    names: dict[str, int] = {}
    for i, here, item in _tables(w, items, "worker"):
        kind = _string(w, here, item, "kind", default="local") or "local"
        if kind not in _WORKER_KEYS:
            raise w.error(here, f"unknown worker kind {kind!r} (expected one of: {', '.join(sorted(_WORKER_KEYS))})")
        _check_keys(w, f"{here} (kind \"{kind}\")", item, _WORKER_KEYS[kind])
        host = node = None
        transport: tuple[str, ...] = ()
        if kind == "ssh":
            host = _string(w, here, item, "host", required=True)
            default_name = host
        elif kind == "slurm":
            node = _string(w, here, item, "node", required=True)
            default_name = node
        elif kind == "command":
            transport = _string_list(w, here, item, "transport", required=True)
            default_name = f"command-{i}"
        else:
            default_name = "local"
        name = _string(w, here, item, "name", default=default_name) or default_name
        if not name.strip() or any(c in name for c in "/\n\0"):
            raise w.error(here, f"key 'name' must be a non-empty label without '/' or newlines, got {name!r}")
        if name in names:
            raise w.error(here, f"duplicate worker name '{name}' (also worker #{names[name]}); give each worker its own `name`")
        names[name] = i
        ssh_config = _string(w, here, item, "ssh_config")
        if ssh_config is not None:
            ssh_config = os.path.normpath(os.path.join(folder, os.path.expanduser(ssh_config)))
            if not os.path.isfile(ssh_config):
                raise w.error(here, f"ssh_config {ssh_config!r} is not a file")
        python = _string(w, here, item, "python")
        if python is not None and not python.strip():
            raise w.error(here, "key 'python' must not be empty")
        directory = _string(w, here, item, "dir")
        if directory is not None and not directory.startswith("/"):
            raise w.error(here, f"key 'dir' must be an absolute path on the host, got {directory!r}")
        out.append(
            WorkerSpec(
                name=name,
                kind=kind,
                host=host,
                ssh_config=ssh_config,
                node=node,
                srun_args=_string_list(w, here, item, "srun_args"),
                transport=transport,
                dir=directory,
                python=python,
                boot_id=_string(w, here, item, "boot_id"),
                reconnect_timeout=_number(w, here, item, "reconnect_timeout", 60.0) or 60.0,
            )
        )
    if not out:
        raise w.error("", "'worker' is empty; remove it to run locally")
    return tuple(out)
