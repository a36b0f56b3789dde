"""The experiment as the user wrote it: frozen values, validated by load.py and treatments.py.

A Spec holds its tests, reset, workers and treatments (contexts, observer levels, factors,
comparisons); design turns one into a plan. Paths are absolute; defaults are applied.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from typing import Mapping

from benchsage.vocabulary import CONTEXT_DIMENSIONS, DECIDE_EACH, DEFAULT_MIN_EFFECT, DEFAULT_OUTPUT_LIMIT, FIXED_STOP, SHUFFLE


@dataclass(frozen=True)
class LinkOrder:
    objects: tuple[str, ...]
    build: str  # with {objects}: the objects in the drawn order, separated by spaces


@dataclass(frozen=True)
class ContextSpec:
    """What varies between contexts; None for a dimension that does not."""

    variants: int
    env_bytes: tuple[int, int] | None = None
    cwd_bytes: tuple[int, int] | None = None
    cpus: tuple[tuple[int, ...], ...] | None = None
    aslr: tuple[bool, ...] | None = None
    link_order: LinkOrder | None = None

    @property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(d for d in CONTEXT_DIMENSIONS if getattr(self, d) is not None)


@dataclass(frozen=True)
class ObserverSpec:
    """Instrumentation levels in declared order: (name, wrapper words before the command)."""

    levels: tuple[tuple[str, str], ...]

    @property
    def baseline(self) -> str:
        """The lightest level, against which the others are measured: the one without a
        wrapper, else the first listed."""
        return next((name for name, wrapper in self.levels if not wrapper.strip()), self.levels[0][0])


@dataclass(frozen=True)
class FactorSpec:
    name: str
    levels: tuple[str, ...]  # in declared order, at least two; with two: low (first listed), high (second)
    setup: str | None = None  # run before a run at a level; {level} is replaced by it
    env: str | None = None  # the level is exported to the tests under this name
    role: str | None = None  # with roles: the role whose host runs the setup; None: every role


@dataclass(frozen=True)
class SweepSpec:
    """A setting swept within every run (spec/sweeps.py): a test naming {name} becomes one
    test per level, the levels as strings in declared order."""

    name: str
    levels: tuple[str, ...]


@dataclass(frozen=True)
class CompareSpec:
    a: str
    b: str
    metric: str | None = None  # None: the tests' primary metric


@dataclass(frozen=True)
class Treatments:
    context: ContextSpec | None = None
    observer: ObserverSpec | None = None
    factors: tuple[FactorSpec, ...] = ()
    compare: tuple[CompareSpec, ...] = ()

    @property
    def cells(self) -> int:
        """How many distinct treatments a run can carry (the order arm aside)."""
        n = self.context.variants if self.context else 1
        n *= len(self.observer.levels) if self.observer else 1
        return n * math.prod(len(f.levels) for f in self.factors)

    def describe_cells(self) -> str:
        parts = []
        if self.context:
            parts.append(f"{self.context.variants} contexts")
        if self.observer:
            parts.append(f"{len(self.observer.levels)} observer levels")
        if self.factors and all(len(f.levels) == 2 for f in self.factors):
            parts.append(f"2^{len(self.factors)} factor levels")
        elif self.factors:
            parts.append(f"{' x '.join(str(len(f.levels)) for f in self.factors)} factor levels")
        return " x ".join(parts)


@dataclass(frozen=True)
class MetricSpec:
    """A value read from a trial's output, beside the harness's own wall/user/sys time and RSS.

    Exactly one source: `regex` (first group of the last match in stdout), `json` (a dotted
    key path into a JSON object printed on stdout), or `file` (a results file written by the
    test, one number per line, OrderSage style; `line` picks which, 0-based), or `parser` (the
    name of the output parser of the test, parsers/, that gives it). A regex with a second group
    reads it as the value's unit and converts the value to `unit` (parsers/units.py).
    """

    name: str
    unit: str = ""
    better: str = "lower"
    regex: str | None = None
    json: str | None = None
    file: str | None = None
    line: int = 0
    parser: str | None = None

    @property
    def source(self) -> str:
        if self.parser is not None:
            return "parser"
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
    role: str | None = None  # with roles: the role whose host runs it; None: the first role declared
    output: str | None = None  # the output parser of the test's tool (parsers.PARSERS), whose metrics are in `metrics`
    primary: tuple[str, ...] = ()  # the correction family as chosen (`primary`, or the parser's defaults); () for the rule below
    sweep: tuple[tuple[str, str], ...] = ()  # an expanded test's (sweep, level), in the sweeps' declared order
    prepare: str | None = None  # run before each of its trials, untimed and unrecorded (hyperfine's -p); in the test's cwd and env
    shell: bool = True  # False: the command's words, split as a shell would, are exec'd with no shell (hyperfine's -N)
    # An expanded test's [[test]] as declared, {NAME} not yet replaced (spec/sweeps.py): what a
    # spec writer puts back (spec/write.py), since a level cannot be told apart from the text around it.
    declared: TestSpec | None = None

    @property
    def base_name(self) -> str:
        """The name of the [[test]] a sweep expanded this test from; its own name otherwise."""
        if not self.sweep:
            return self.name
        return self.name.removesuffix("[" + ",".join(f"{name}={level}" for name, level in self.sweep) + "]")

    @property
    def primary_metrics(self) -> tuple[str, ...]:
        """The correction family: the chosen metrics, else the declared ones, else wall_time."""
        return self.primary or tuple(m.name for m in self.metrics) or ("wall_time",)


@dataclass(frozen=True)
class ResetSpec:
    """What runs before every run: a command, or a reboot of the worker's host (kind "reboot":
    verified by a new boot id when the host answers again)."""

    command: str
    timeout: float
    cwd: str
    env: Mapping[str, str]
    kind: str = "command"  # "command" | "reboot"
    steps: tuple[ResetStep, ...] = ()  # with roles: what runs before every run, in order, each on its role's host


@dataclass(frozen=True)
class ResetStep:
    """One step of a reset with roles: a command on one role's host (role None: every role's
    host, in declared order), or that host's reboot."""

    role: str | None
    command: str
    timeout: float
    cwd: str
    env: Mapping[str, str]
    kind: str = "command"  # "command" | "reboot"


@dataclass(frozen=True)
class DeploySpec:
    """[deploy]: what is shipped to every worker's dir before anything runs (deploy.py)."""

    source: str  # "git": a commit of the repository holding the spec; "folder": the spec's folder
    rev: str = "HEAD"  # git: the commit to ship
    dirty: str = "refuse"  # git: uncommitted changes to tracked files refuse to run, or are shipped ("include")


@dataclass(frozen=True)
class WorkerSpec:
    """Where trials run: this machine, an ssh host, a Slurm node, or any transport command."""

    name: str
    kind: str = "local"
    host: str | None = None  # ssh
    ssh_config: str | None = None  # ssh: absolute path of an ssh config file (ssh -F)
    node: str | None = None  # slurm
    het_group: int | None = None  # slurm: the component of the heterogeneous allocation benchsage runs in (srun --het-group)
    srun_args: tuple[str, ...] = ()  # slurm
    transport: tuple[str, ...] = ()  # command
    dir: str | None = None  # the spec's folder on the host; None: the same path as here
    python: str | None = None  # interpreter for the agent on the host (words); None: python3 (local: this one)
    boot_id: str | None = None  # command printing the host's boot identity; None: the kernel's boot_id
    reconnect_timeout: float = 60.0
    roles: tuple[tuple[str, WorkerSpec], ...] = ()  # a group of hosts in named roles (each a worker of its own kind)
    # Allocated workers (spec/provision.py): this entry becomes one worker per host the allocation gives.
    nodes: int | None = None  # slurm: salloc -N nodes
    partition: str | None = None  # slurm: --partition
    constraint: str | None = None  # slurm: --constraint
    time: str | None = None  # slurm: --time
    job: str | None = None  # slurm: the allocation's job id the agent's step runs in (srun --jobid)
    allocate: str | None = None  # ssh: a command printing one host per line
    release: str | None = None  # ssh: a command given those hosts as arguments at the end

    @property
    def allocated(self) -> bool:
        """Hosts come from an allocation made when the experiment runs, not from the spec."""
        return self.nodes is not None or self.allocate is not None

    @property
    def role_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.roles)

    @property
    def target(self) -> str:
        """What the worker reaches, for plans and messages."""
        if self.roles:
            return ", ".join(f"{name}: {ws.target}" for name, ws in self.roles)
        if self.kind == "ssh":
            return f"ssh {self.host}"
        if self.kind == "slurm":
            return f"slurm node {self.node}" if self.node else f"slurm het-group {self.het_group}"
        if self.kind == "command":
            return " ".join(self.transport)
        return "this machine"


@dataclass(frozen=True)
class InitSpec:
    """What runs once on every worker (every role host, or the hosts of `role`) before its first
    run: installing, building, warming caches the runs then share."""

    command: str
    timeout: float
    cwd: str
    env: Mapping[str, str]
    role: str | None = None


@dataclass(frozen=True)
class CollectorSpec:
    """A value measured on a role's host during every trial's window (the window opens right
    before the trial is spawned and closes right after it exits): `energy` (J of the host's CPU
    packages, RAPL), `cpu` (s of CPU time the whole host spent, /proc/stat), or `command` (the
    last number a command prints at the window's close, or close - open with `delta`)."""

    name: str
    role: str
    kind: str  # "energy" | "cpu" | "command"
    command: str | None = None
    delta: bool = False
    unit: str = ""
    better: str = "lower"
    cwd: str = "/"
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 10.0


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
    decide: str = DECIDE_EACH  # sequential: stop when each test is decided ("each") or the verdict is settled ("verdict")
    # Every host holds a PM QoS CPU latency limit of this many microseconds while its agent runs
    # (idle CPUs stay in states that wake within it; 0: they poll); None: as the host has it.
    cpu_latency: int | None = None
    sweeps: tuple[SweepSpec, ...] = ()  # [[sweep]]: already expanded into `tests` (spec/sweeps.py)
    collectors: tuple[CollectorSpec, ...] = ()  # measured on role hosts during every trial (roles.py)
    deploy: DeploySpec | None = None  # [deploy]: shipped to every worker's dir before anything runs (deploy.py)
    init: InitSpec | None = None  # [init]: once per worker before its first run (provision.py)
    teardown: InitSpec | None = None  # [teardown]: once per worker after its last run, whatever happened (provision.py)
    warmup: int = 0  # trials of every test on each worker before its first run of a session, not recorded

    @property
    def roles(self) -> tuple[str, ...]:
        """The role names of the workers (each worker has the same ones); () without roles."""
        return self.workers[0].role_names if self.workers else ()

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
