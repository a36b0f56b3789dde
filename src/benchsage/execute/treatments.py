"""Applying a run's treatment: what the runner changes for its trials, and what it runs first.

A treatment (design/treatments.py) is turned into requests the agent carries out on the
worker's host, so every variant is really applied and the same way on every worker:

- environment padding: the variable BENCHSAGE_ENV_PAD holding env_bytes bytes, in every run
  (empty at 0 bytes, so contexts differ only in its size, as in Mytkowicz et al.);
- working-directory length: the agent runs the trial in a real directory whose path is
  cwd_bytes longer than the test's (agent/spawn.py: padded_cwd), removed when the experiment
  ends;
- CPU pinning: the context's CPU list replaces the test's;
- ASLR: personality(ADDR_NO_RANDOMIZE) set or cleared in the trial's process before exec;
- link order: the user's build command with {objects} in the drawn order, run on the worker
  before the first run of a context (and again whenever the worker's last build was another
  context's); a build that fails marks that context failed on that worker, and its runs there
  are skipped while the others go on;
- instrumentation: the level's wrapper words before the test's command (a command with shell
  syntax is wrapped as `/bin/sh -c '...'`), every wrapper checked on every worker before
  anything runs;
- factors: each factor's setup command with {level} (shell-quoted, as the objects are) before
  every run at that level, and/or its level exported to the tests in the factor's variable.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from typing import Any, Sequence

from benchsage.agent.spawn import SHELL_PATH, needs_shell, pad_folder
from benchsage.design.treatments import Treatment
from benchsage.errors import WorkerSetupError
from benchsage.execute.worker import EVERY_ROLE, ProcessRequest
from benchsage.spec import Spec
from benchsage.spec.load import DEFAULT_RESET_TIMEOUT
from benchsage.vocabulary import ENV_PAD

BUILD_TIMEOUT = 600.0  # seconds a link-order build may take


@dataclass(frozen=True)
class Step:
    """A command run on the worker before a run's trials: a link-order build or a factor's setup."""

    kind: str  # "build" | "setup"
    what: str  # "context c3", "factor smt=on"
    request: ProcessRequest
    context: str | None = None  # a build's context label


class Applier:
    """The requests of each (test, treatment) and the steps before each run."""

    def __init__(self, spec: Spec, cells: Sequence[Treatment], base: Sequence[ProcessRequest]) -> None:
        self.spec = spec
        self.cells = list(cells)
        self.base = list(base)
        self.active = spec.treatments.cells > 1
        self._requests: dict[tuple[int, int], ProcessRequest] = {}
        self._wrappers = dict(spec.treatments.observer.levels) if spec.treatments.observer else {}
        factors = {f.name: f for f in spec.treatments.factors}
        self._factor_env = {name: f.env for name, f in factors.items() if f.env}
        self._factor_setup = {name: f.setup for name, f in factors.items() if f.setup}
        self._factor_role = {name: f.role or EVERY_ROLE for name, f in factors.items()}

    def request(self, test_id: int, cell: int | None) -> ProcessRequest:
        """The request of a test's trial under a treatment (the test's own without one)."""
        if not self.active or cell is None:
            return self.base[test_id]
        key = (test_id, cell)
        found = self._requests.get(key)
        if found is None:
            found = self._requests[key] = self._build(self.base[test_id], self.cells[cell])
        return found

    def _build(self, base: ProcessRequest, cell: Treatment) -> ProcessRequest:
        env = dict(base.env)
        changes: dict[str, Any] = {}
        context = cell.context
        if context is not None:
            if context.env_bytes is not None:
                env[ENV_PAD] = "x" * context.env_bytes
            if context.cwd_bytes:
                changes["cwd_pad"] = context.cwd_bytes
            if context.cpus is not None:
                changes["cpus"] = context.cpus
            if context.aslr is not None:
                changes["aslr"] = context.aslr
        for name, level in cell.factors:
            if name in self._factor_env:
                env[self._factor_env[name]] = level
        command = base.command
        if cell.observer is not None:
            command = wrap(self._wrappers.get(cell.observer, ""), command)
        return dataclasses.replace(base, command=command, env=env, **changes)

    def steps(self, cell: int | None, built: str | None) -> list[Step]:
        """What runs on the worker after the reset and before a run's trials. `built`: the
        context whose link order the worker's last successful build used (None: none yet)."""
        if not self.active or cell is None:
            return []
        treatment = self.cells[cell]
        out: list[Step] = []
        context = treatment.context
        link = self.spec.treatments.context.link_order if self.spec.treatments.context else None
        if link is not None and context is not None and context.link_order is not None and built != context.label:
            objects = " ".join(shlex.quote(o) for o in context.link_order)
            out.append(Step("build", f"context {context.label}", ProcessRequest(
                command=link.build.replace("{objects}", objects), cwd=self.spec.folder, timeout=BUILD_TIMEOUT), context.label))
        for name, level in treatment.factors:
            setup = self._factor_setup.get(name)
            if setup:
                out.append(Step("setup", f"factor {name}={level}", ProcessRequest(
                    command=setup.replace("{level}", shlex.quote(level)), cwd=self.spec.folder, timeout=DEFAULT_RESET_TIMEOUT,
                    role=self._factor_role[name])))
        return out

    def tidy_up(self) -> list[ProcessRequest]:
        """What removes, at the end of the experiment, the longer working directories its
        contexts' trials ran in (hidden folders of underscores in each test's cwd)."""
        if not self.active:
            return []
        folders = sorted({name for cell in self.cells if cell.context is not None and cell.context.cwd_bytes
                          for name in [pad_folder(cell.context.cwd_bytes)] if name is not None})
        if not folders:
            return []
        command = "rm -rf -- " + " ".join(shlex.quote(name) for name in folders)
        return [ProcessRequest(command=command, cwd=cwd, timeout=DEFAULT_RESET_TIMEOUT)
                for cwd in sorted({request.cwd for request in self.base})]


def wrap(wrapper: str, command: str) -> str:
    """The command run under an instrumentation wrapper: the wrapper's words, then the command
    as it is (a plain command line) or through /bin/sh -c (one with shell syntax)."""
    if not wrapper.strip():
        return command
    if needs_shell(command):
        return f"{wrapper.strip()} {SHELL_PATH} -c {shlex.quote(command)}"
    return f"{wrapper.strip()} {command}"


def check_wrappers(spec: Spec, workers: Sequence[Any]) -> None:
    """Every instrumentation wrapper's program is installed on every worker (`command -v` on
    the host, in the tests' environment); else WorkerSetupError (exit 2) before anything runs."""
    levels = spec.treatments.observer.levels if spec.treatments.observer else ()
    programs = sorted({(name, shlex.split(wrapper)[0]) for name, wrapper in levels if wrapper.strip()})
    if not programs:
        return
    env = spec.tests[0].env if spec.tests else {}
    probe = "; ".join(f"command -v {shlex.quote(p)} >/dev/null || echo {shlex.quote(p)}" for p in sorted({p for _, p in programs}))
    problems = []
    for worker in workers:
        result = worker.run(ProcessRequest(command=probe, cwd=spec.folder, env=env, timeout=30.0))
        missing = set(result.stdout.decode(errors="replace").split())
        if result.error or result.timed_out:
            missing = {p for _, p in programs}
        for level, program in programs:
            if program in missing:
                where = f" on worker {worker.name}" if len(workers) > 1 or getattr(worker, "kind", "local") != "local" else ""
                problems.append(f"level '{level}' wraps the tests in '{program}', which is not installed{where}")
    if problems:
        raise WorkerSetupError(f"{spec.path}: [observer]: " + "; ".join(problems) + "; nothing ran")
