"""The spec's sweeps (`[[sweep]]`): a setting swept within every run, such as the connections a
load generator opens. A `[[test]]` naming `{NAME}` of a declared sweep in its command, env
values or cwd becomes one test per level, named `NAME[sweep=level]` (several sweeps crossed:
`NAME[a=1,b=x]`, in the sweeps' declared order), before anything else looks at the tests: the
plan, the journal and every analysis see ordinary tests, each carrying its levels (TestSpec.sweep).

How a level is written in: shell-quoted (shlex.quote) into the command, which /bin/sh reads, so
a level is one word whatever it holds (do not put `{NAME}` inside quotes of your own); as it is
into env values and cwd, which no shell reads (quotes would become part of the value or path).
Only `{NAME}` of a declared sweep is replaced, and not after a `$` (`${NAME}` is the shell's);
any other `{word}` is left as written (brace expansion, awk programs, `find -exec {}`), except a
near miss of a declared name, which is taken for a typo and refused. A generator's commands are
run as printed.
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import re
import shlex
from dataclasses import replace
from typing import Any, Callable

from benchsage.spec import fields
from benchsage.spec.model import SweepSpec, TestSpec

_KEYS = {"name", "levels"}
_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_.-]*)\}")  # {word}, as fields.WORD; not ${word}
_NEAR_MISS = 0.8  # difflib's similarity above which an unknown {word} is taken for a misspelt sweep name


def parse_sweeps(w: fields.Where, value: Any) -> tuple[SweepSpec, ...]:
    """The `[[sweep]]` tables: a word each for a name, unique, and at least two distinct levels."""
    if value is None:
        return ()
    out: list[SweepSpec] = []
    for i, here, item in fields.tables(w, value, "sweep"):
        fields.check_keys(w, here, item, _KEYS)
        name = fields.string(w, here, item, "name", required=True)
        assert name is not None
        if not fields.WORD.match(name):
            raise w.error(here, f"key 'name' must be a word (letters, digits, _ . -), got {name!r}")
        here = f"[[sweep]] #{i} ('{name}')"
        first = next((j for j, s in enumerate(out, 1) if s.name == name), None)
        if first is not None:
            raise w.error(here, f"duplicate sweep name '{name}' (also [[sweep]] #{first}); give each sweep its own name")
        if "levels" not in item:
            raise w.error(here, "missing required key 'levels' (e.g. levels = [2, 8, 32])")
        out.append(SweepSpec(name, _levels(w, here, item["levels"])))
    return tuple(out)


def _levels(w: fields.Where, here: str, levels: Any) -> tuple[str, ...]:
    if not isinstance(levels, list):
        raise w.error(here, f"key 'levels' must be an array of at least two levels (numbers or strings), got {fields.type_name(levels)}")
    named: list[str] = []
    for v in levels:
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise w.error(here, f"key 'levels': {v!r} is {fields.type_name(v)}; a level is a number or a string")
        if isinstance(v, float) and not math.isfinite(v):
            raise w.error(here, f"key 'levels': {v!r} is not a finite number")
        text = str(v)
        if not text.strip() or any(c in text for c in "\n\r\0"):
            raise w.error(here, f"key 'levels': {v!r} is not a level (a level is a non-empty string on one line)")
        if text in named:
            raise w.error(here, f"key 'levels' lists {text!r} twice; list each level once")
        named.append(text)
    if len(named) < 2:
        raise w.error(here, f"key 'levels' must list at least two levels, got {len(named)}: {levels!r} (one level is no sweep: "
                            "write it into the test)")
    return tuple(named)


def expand_sweeps(w: fields.Where, sweeps: tuple[SweepSpec, ...], tests: list[TestSpec]) -> list[TestSpec]:
    """Each test naming sweeps becomes one test per combination of their levels, in its place
    (the first sweep's levels outermost, each in declared order); the other tests stay as they
    are. A sweep no test names is an error: its levels would change nothing."""
    if not sweeps:
        return tests
    by_name = {s.name: s for s in sweeps}
    used: set[str] = set()
    out: list[TestSpec] = []
    for i, test in enumerate(tests, 1):
        named = _named(w, f"[[test]] #{i} ('{test.name}')", test, by_name)
        used |= named
        own = [s for s in sweeps if s.name in named]
        for combo in itertools.product(*[[(s.name, level) for level in s.levels] for s in own]):
            out.append(_substituted(test, combo) if combo else test)
    for i, s in enumerate(sweeps, 1):
        if s.name not in used:
            raise w.error(f"[[sweep]] #{i} ('{s.name}')", f"no [[test]] names {{{s.name}}} in its command, env or cwd: "
                                                          f"write {{{s.name}}} where the level goes, or remove the sweep")
    return out


def _named(w: fields.Where, here: str, test: TestSpec, sweeps: dict[str, SweepSpec]) -> set[str]:
    """The sweeps a test names; an unknown {word} close to a sweep's name is an error naming the key."""
    named: set[str] = set()
    texts = [("command", test.command), ("cwd", test.cwd)] + [(f"env.{k}", v) for k, v in test.env.items()]
    texts += [("prepare", test.prepare)] if test.prepare is not None else []
    for key, text in texts:
        for word in _PLACEHOLDER.findall(text):
            if word in sweeps:
                named.add(word)
                continue
            close = [n for n in sweeps if n.lower() == word.lower()] or difflib.get_close_matches(word, list(sweeps), 1, _NEAR_MISS)
            if close:
                raise w.error(here, f"key '{key}' names {{{word}}}, which is no sweep; did you mean {{{close[0]}}}? "
                                    f"(sweeps: {', '.join(sweeps)}; a {{word}} far from every sweep's name is left as written)")
    return named


def _substituted(test: TestSpec, combo: tuple[tuple[str, str], ...]) -> TestSpec:
    levels = dict(combo)

    def put(text: str, quote: Callable[[str], str]) -> str:
        return _PLACEHOLDER.sub(lambda m: quote(levels[m[1]]) if m[1] in levels else m[0], text)

    def same(level: str) -> str:
        return level

    return replace(
        test,
        name=f"{test.name}[{','.join(f'{name}={level}' for name, level in combo)}]",
        command=put(test.command, shlex.quote),
        prepare=put(test.prepare, shlex.quote) if test.prepare is not None else None,
        env={k: put(v, same) for k, v in test.env.items()},
        cwd=os.path.normpath(put(test.cwd, same)),
        sweep=combo,
        declared=test,
    )
