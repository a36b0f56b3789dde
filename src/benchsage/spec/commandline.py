"""An experiment from a command line: `benchsage time`'s options as an ordinary spec.

The commands become the tests (named by -n, else by short names derived from the commands),
every pair of them a claim ([[compare]]), a parameter scan (-P, -L) a [[sweep]]; the spec's text
is what `--save-spec` writes and what the journal keeps, so `benchsage run` of the saved file
draws the same plan. Pure: no process is started and no file read here.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
from dataclasses import dataclass
from typing import Any
from decimal import Decimal, InvalidOperation

from benchsage.errors import UsageError
from benchsage.spec import emit

TIME_NAME = "time"  # the experiment's name: its directory is results/time-<UTC time>
NAME_WIDTH = 32  # a derived name is cut to this many characters
MAX_SCAN_LEVELS = 1000  # a parameter scan longer than this is a typo (a step of 1 over 0..1e9)
_PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_SCAN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Scan:
    """A parameter scan: {name} in the commands takes each level in turn (hyperfine's -P/-L)."""

    name: str
    levels: tuple[str, ...]


@dataclass(frozen=True)
class TimeRequest:
    """What `benchsage time` was asked: the commands and the experiment's settings."""

    commands: tuple[str, ...]
    folder: str  # where the commands run: the current directory
    names: tuple[str, ...] = ()
    runs: int = 10
    seed: int | None = None
    reset: str | None = None
    setup: str | None = None
    timeout: float | None = None
    cpus: str | None = None
    stop: str | None = None  # "sequential": stop when the answer is clear
    scans: tuple[Scan, ...] = ()
    warmup: int = 0  # trials of every command before the first run, not recorded
    prepare: tuple[str, ...] = ()  # before every trial: one command for all, or one per command
    cleanup: str | None = None  # once after everything, whatever happens ([teardown])
    no_shell: bool = False  # -N: exec every command's words with no shell


def scan_range(name: str, low: str, high: str, step: str | None) -> Scan:
    """-P NAME MIN MAX [-D STEP]: the numbers from MIN to MAX by STEP (default 1), computed in
    decimal so 0.1 steps do not drift (0.3, never 0.30000000000000004)."""
    _check_scan_name(name, "-P")
    try:
        lo, hi, by = Decimal(low), Decimal(high), Decimal(step if step is not None else "1")
    except InvalidOperation:
        raise UsageError(f"-P {name} {low} {high}: MIN and MAX (and -D STEP) must be numbers") from None
    if not (lo.is_finite() and hi.is_finite() and by.is_finite()):
        raise UsageError(f"-P {name} {low} {high}: MIN, MAX and STEP must be finite numbers")
    if by <= 0:
        raise UsageError(f"-D {step}: the step of a parameter scan must be above 0")
    if hi < lo:
        raise UsageError(f"-P {name} {low} {high}: MAX is below MIN")
    count = int((hi - lo) / by) + 1
    if count > MAX_SCAN_LEVELS:
        raise UsageError(f"-P {name} {low} {high}: {count} levels (at most {MAX_SCAN_LEVELS}); give a larger -D STEP")
    levels = tuple(_decimal_text(lo + i * by) for i in range(count))
    return Scan(name, levels)


def scan_list(name: str, values: str) -> Scan:
    """-L NAME a,b,c: the listed values, in order."""
    _check_scan_name(name, "-L")
    levels = tuple(v for v in values.split(","))
    if any(not v for v in levels):
        raise UsageError(f"-L {name} {values}: a value is empty (values are separated by commas)")
    if len(set(levels)) != len(levels):
        raise UsageError(f"-L {name} {values}: a value is listed twice")
    return Scan(name, levels)


def _check_scan_name(name: str, option: str) -> None:
    if not _SCAN_NAME.fullmatch(name):
        raise UsageError(f"{option} {name}: a parameter's name is a word of letters, digits and _ (used as {{{name}}} in the commands)")


def _decimal_text(x: Decimal) -> str:
    """A level as written: 3, 0.5, 2.25 (no exponent, no trailing zeros after the point)."""
    text = format(x.normalize(), "f")
    return text if "." not in text else text.rstrip("0").rstrip(".") or "0"


def short_names(commands: tuple[str, ...]) -> tuple[str, ...]:
    """Readable, unique names for commands, never the whole command line: the program's base
    name alone where no other command runs it ("gzip", "xz"), else with the words that set the
    command apart ("python3 json_bench.py", "python3 os_bench.py"; "sleep 0.01", "sleep 0.02");
    {placeholders} left out, each at most NAME_WIDTH characters; numbered where that is not
    enough ("sleep #1", "sleep #2")."""
    words = [_words(c) for c in commands]
    programs = [os.path.basename(w[0]) if w else "command" for w in words]
    names = []
    for i, w in enumerate(words):
        others = [o for j, o in enumerate(words) if j != i]
        if not others:
            names.append(_cut(" ".join([programs[i], *w[1:3]])))
            continue
        if programs.count(programs[i]) == 1:
            names.append(_cut(programs[i]))
            continue
        apart = [x for k, x in enumerate(w[1:], 1) if any(k >= len(o) or o[k] != x for o in others)]
        names.append(_cut(" ".join([programs[i], *apart[:2]])))
    return _unique(names)


def _words(command: str) -> list[str]:
    """The command's words, those holding a {placeholder} left out (a scan's level names them)."""
    try:
        words = shlex.split(command)
    except ValueError:  # an unbalanced quote: the shell will say so; split on blanks for the name
        words = command.split()
    return [w for w in words if w and not _PLACEHOLDER.search(w)]


def _cut(name: str) -> str:
    name = " ".join(name.split()) or "command"
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…"


def _unique(names: list[str]) -> tuple[str, ...]:
    """Names made unique by their command's number where they repeat: "sleep #1", "sleep #2"."""
    seen = {n: names.count(n) for n in names}
    return tuple(f"{n} #{i + 1}" if seen[n] > 1 else n for i, n in enumerate(names))


def command_names(request: TimeRequest) -> tuple[str, ...]:
    """The tests' names: -n's, in order, else derived from the commands."""
    if len(request.names) > len(request.commands):
        raise UsageError(f"-n/--command-name given {len(request.names)} times for {len(request.commands)} commands")
    if request.names and len(request.names) < len(request.commands):
        raise UsageError(f"-n/--command-name given {len(request.names)} times for {len(request.commands)} commands: "
                         "name every command, or none")
    names = request.names or short_names(request.commands)
    if len(set(names)) != len(names):
        raise UsageError(f"-n/--command-name: the name {next(n for n in names if names.count(n) > 1)!r} is given twice")
    bad = next((n for n in names if not n.strip() or any(c in n for c in "[]\n")), None)
    if bad is not None:
        raise UsageError(f"-n/--command-name {bad!r}: a name is not empty and holds no brackets or newlines")
    return tuple(names)


def claims(request: TimeRequest, names: tuple[str, ...]) -> list[tuple[str, str]]:
    """Every pair of commands (a, b), earlier first; with a scan, every pair at each level."""
    pairs = list(itertools.combinations(names, 2))
    if not request.scans:
        return pairs
    scanned = [s for s in request.scans if any("{" + s.name + "}" in c for c in request.commands)]
    out = []
    for a, b in pairs:
        for levels in itertools.product(*(s.levels for s in scanned)):
            suffix = "[" + ",".join(f"{s.name}={lv}" for s, lv in zip(scanned, levels)) + "]"
            ia, ib = names.index(a), names.index(b)
            sa = suffix if any("{" + s.name + "}" in request.commands[ia] for s in scanned) else ""
            sb = suffix if any("{" + s.name + "}" in request.commands[ib] for s in scanned) else ""
            out.append((a + sa, b + sb))
    return list(dict.fromkeys(out))


def time_spec_text(request: TimeRequest) -> str:
    """The spec of `request` as TOML text (load.load_spec reads it back)."""
    if not request.commands:
        raise UsageError("time: give at least one command to time")
    if any(not c.strip() for c in request.commands):
        raise UsageError("time: a command is empty")
    for scan in request.scans:
        if not any("{" + scan.name + "}" in c for c in request.commands):
            raise UsageError(f"parameter {scan.name!r}: no command names {{{scan.name}}}")
    names = command_names(request)
    if len(request.prepare) not in (0, 1, len(request.commands)):
        raise UsageError(f"-p/--prepare given {len(request.prepare)} times for {len(request.commands)} commands: "
                         "give one for all, or one per command")
    prepares = request.prepare * len(request.commands) if len(request.prepare) == 1 else request.prepare
    experiment = {"name": TIME_NAME, "runs": request.runs, "seed": request.seed, "timeout": request.timeout, "cpus": request.cpus,
                  "stop": request.stop, "warmup": request.warmup or None, "shell": "none" if request.no_shell else None}
    doc: dict[str, Any] = {"experiment": {k: v for k, v in experiment.items() if v is not None}}
    for key, command in (("reset", request.reset), ("init", request.setup), ("teardown", request.cleanup)):
        if command is not None:
            doc[key] = {"command": command}
    if request.scans:
        doc["sweep"] = [{"name": scan.name, "levels": list(scan.levels)} for scan in request.scans]
    doc["test"] = [{"name": name, "command": command, **({"prepare": prepares[i]} if prepares else {})}
                   for i, (name, command) in enumerate(zip(names, request.commands))]
    pairs = claims(request, names)
    if pairs:
        doc["compare"] = [{"a": a, "b": b} for a, b in pairs]
    try:
        text = emit.dumps(doc)
    except ValueError as exc:  # a lone surrogate: bytes that are not UTF-8 in a command
        raise UsageError(f"time: a command cannot be written down as a spec ({exc})") from None
    return "# benchsage time: the commands of one command line as an experiment (benchsage run FILE draws the same plan)\n" + text
