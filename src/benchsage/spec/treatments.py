"""The spec's treatments: what a user varies on purpose besides the order (the README's
"Treatments: contexts, instrumentation, factors, comparisons").

- `[context]`: variant generation (Mytkowicz et al., ASPLOS 2009): environment padding,
  working-directory length, CPU pinning, ASLR and link order, varied over `variants` contexts
  drawn from the seed; a test's result should not depend on them.
- `[observer]`: instrumentation levels (a wrapper command per level); does measuring change
  what is measured?
- `[[factor]]`: factors of two or more levels crossed in a full factorial design (two levels
  each: 2^k, Jain ch. 17-18; Nogueira et al.; more: Jain ch. 20-23), a level applied by a setup
  command before a run and/or an environment variable.
- `[[compare]]`: claims "a is better than b" on a metric, answered per arm and per context.

Parsed and validated here (every error names the file and the key, exit 2); design/treatments.py
crosses them into the cells each run carries.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from benchsage.errors import SpecError
from benchsage.spec import fields
from benchsage.spec.model import CompareSpec, ContextSpec, FactorSpec, LinkOrder, ObserverSpec, TestSpec, Treatments
from benchsage.vocabulary import CONTEXT_DIMENSIONS, ENV_PAD, HARNESS_METRIC_UNITS, MAX_ENV_BYTES, parse_cpu_list

DEFAULT_VARIANTS = 8
MAX_CWD_BYTES = 3000  # the drawn directory stays well inside PATH_MAX (4096) with the base path

_CONTEXT_KEYS = {"variants", *CONTEXT_DIMENSIONS}
_LINK_KEYS = {"objects", "build"}
_OBSERVER_KEYS = {"levels"}
_FACTOR_KEYS = {"name", "levels", "setup", "env", "role"}
_COMPARE_KEYS = {"a", "b", "metric"}
_NAME = fields.WORD
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_treatments(w: fields.Where, doc: Mapping[str, Any], tests: list[TestSpec]) -> Treatments:
    return Treatments(
        context=_context(w, doc.get("context")),
        observer=_observer(w, doc.get("observer")),
        factors=_factors(w, doc.get("factor")),
        compare=_compare(w, doc.get("compare"), tests),
    )


def _uncovered(treatments: Treatments, of: str = "") -> str:
    return (f"cannot cover the {treatments.cells} treatments{of} ({treatments.describe_cells()}): "
            "each needs a run in each arm")


def check_coverage(w: fields.Where, treatments: Treatments, runs: int) -> None:
    """Every treatment needs a run in each arm: more treatments than the spec's runs is an error."""
    cells = treatments.cells
    if cells > runs:
        raise w.error("[experiment]", f"key 'runs' = {runs} {_uncovered(treatments)}; set runs to at least {cells} "
                                      f"(a multiple of {cells} keeps them balanced)")


def check_runs_cover(treatments: Treatments, runs_per_arm: int, spec_path: str) -> None:
    """The same for --runs, which overrides the spec's runs."""
    if runs_per_arm < treatments.cells:
        raise SpecError(f"--runs {runs_per_arm} {_uncovered(treatments, f' of {spec_path}')}; give at least {treatments.cells}")


def _table(w: fields.Where, where: str, value: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise w.error("", f"'{where.strip('[]')}' must be a table ({where}), got {fields.type_name(value)}")
    fields.check_keys(w, where, value, allowed)
    return value


def _range(w: fields.Where, table: Mapping[str, Any], key: str, limit: int) -> tuple[int, int] | None:
    if key not in table:
        return None
    value = table[key]
    ok = isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    if not ok:
        raise w.error("[context]", f"key '{key}' must be [low, high] (two integers, bytes), got {value!r}")
    low, high = value
    if low < 0 or high < low:
        raise w.error("[context]", f"key '{key}' must be [low, high] with 0 <= low <= high, got [{low}, {high}]"
                                   + (" (inverted)" if high < low else ""))
    if high > limit:
        why = {"env_bytes": f" (one environment variable, {ENV_PAD}, holds them: Linux refuses to start a program with a longer one)"}
        raise w.error("[context]", f"key '{key}': at most {limit} bytes, got {high}" + why.get(key, ""))
    return (low, high)


def _context(w: fields.Where, value: Any) -> ContextSpec | None:
    if value is None:
        return None

    table = _table(w, "[context]", value, _CONTEXT_KEYS)
    variants = fields.integer(w, "[context]", table, "variants", DEFAULT_VARIANTS, minimum=2)
    cpus = None
    if "cpus" in table:
        raw = table["cpus"]
        if not isinstance(raw, list) or not raw or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in raw):
            raise w.error("[context]", f"key 'cpus' must be a non-empty array of CPU lists (e.g. [\"0\", \"1\"]), got {raw!r}")
        lists = []
        for item in raw:
            try:
                lists.append(tuple(parse_cpu_list(str(item))))
            except ValueError as exc:
                raise w.error("[context]", f"key 'cpus': {exc}") from None
        cpus = tuple(lists)
    aslr = None
    if "aslr" in table:
        raw = table["aslr"]
        if not isinstance(raw, list) or not raw or not all(isinstance(v, bool) for v in raw):
            raise w.error("[context]", f"key 'aslr' must be a non-empty array of true/false, got {raw!r}")
        aslr = tuple(dict.fromkeys(raw))
    link = None
    if "link_order" in table:
        raw = table["link_order"]
        if not isinstance(raw, dict):
            raise w.error("[context]", "key 'link_order' must be a table {objects = [...], build = \"... {objects} ...\"}")

        fields.check_keys(w, "[context] link_order", raw, _LINK_KEYS)
        objects = fields.string_list(w, "[context] link_order", raw, "objects", required=True)
        if len(objects) < 2 or len(set(objects)) != len(objects):
            raise w.error("[context] link_order", f"key 'objects' must list at least two distinct objects, got {list(objects)!r}")
        build = fields.string(w, "[context] link_order", raw, "build", required=True)
        assert build is not None
        if "{objects}" not in build:
            raise w.error("[context] link_order", "key 'build' must contain {objects} (where the objects go, in the drawn order)")
        link = LinkOrder(objects, build)
    context = ContextSpec(
        variants=int(variants or DEFAULT_VARIANTS),
        env_bytes=_range(w, table, "env_bytes", MAX_ENV_BYTES),
        cwd_bytes=_range(w, table, "cwd_bytes", MAX_CWD_BYTES),
        cpus=cpus,
        aslr=aslr,
        link_order=link,
    )
    if not context.dimensions:
        raise w.error("[context]", "nothing to vary: give at least one of " + ", ".join(CONTEXT_DIMENSIONS))
    return context


def _observer(w: fields.Where, value: Any) -> ObserverSpec | None:
    if value is None:
        return None
    table = _table(w, "[observer]", value, _OBSERVER_KEYS)
    levels = table.get("levels")
    if not isinstance(levels, dict) or len(levels) < 2:
        raise w.error("[observer]", "key 'levels' must be a table of at least two levels, name = \"wrapper\" "
                                    "(e.g. {none = \"\", strace = \"strace -f -o /dev/null --\"})")
    out = []
    for name, wrapper in levels.items():
        if not isinstance(wrapper, str):
            raise w.error("[observer]", f"levels.{name} must be a string (the wrapper command, \"\" for none), got {wrapper!r}")
        if not _NAME.match(name):
            raise w.error("[observer]", f"level name {name!r} must be a word (letters, digits, _ . -)")
        out.append((name, wrapper.strip()))
    if sum(1 for _, wrapper in out if not wrapper) > 1:
        raise w.error("[observer]", "key 'levels': only one level can have no wrapper")
    return ObserverSpec(tuple(out))


def _factors(w: fields.Where, value: Any) -> tuple[FactorSpec, ...]:
    if value is None:
        return ()

    out: list[FactorSpec] = []
    for i, here, item in fields.tables(w, value, "factor"):
        fields.check_keys(w, here, item, _FACTOR_KEYS)
        name = fields.string(w, here, item, "name", required=True)
        assert name is not None
        if not _NAME.match(name):
            raise w.error(here, f"key 'name' must be a word (letters, digits, _ . -), got {name!r}")
        here = f"[[factor]] #{i} ('{name}')"
        if any(f.name == name for f in out):
            raise w.error(here, f"duplicate factor name '{name}'")
        levels = item.get("levels")
        if not isinstance(levels, list) or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in levels):
            raise w.error(here, f"key 'levels' must be an array of at least two levels (numbers or strings), got {levels!r}")
        if len(levels) < 2:
            raise w.error(here, f"key 'levels' must list at least two levels (two: a 2^k design), got {len(levels)}: {levels!r}")
        named = tuple(str(v) for v in levels)
        twice = next((v for i, v in enumerate(named) if v in named[:i]), None)
        if twice is not None:
            raise w.error(here, f"key 'levels' must list different levels, got {twice!r} twice")
        setup = fields.string(w, here, item, "setup")
        env = fields.string(w, here, item, "env")
        if env is not None and not _ENV_NAME.match(env):
            raise w.error(here, f"key 'env' must be an environment variable name, got {env!r}")
        if not (setup or "").strip() and env is None:
            raise w.error(here, "needs 'setup' (a command run before each run at a level, {level} replaced) or 'env' "
                                "(a variable the tests see), or both: otherwise its levels change nothing")
        out.append(FactorSpec(name, named, setup or None, env, fields.string(w, here, item, "role")))
    return tuple(out)


def _compare(w: fields.Where, value: Any, tests: list[TestSpec]) -> tuple[CompareSpec, ...]:
    if value is None:
        return ()

    by_name = {t.name: t for t in tests}
    out = []
    for _, here, item in fields.tables(w, value, "compare"):
        fields.check_keys(w, here, item, _COMPARE_KEYS)
        names = []
        for key in ("a", "b"):
            name = fields.string(w, here, item, key, required=True)
            assert name is not None
            if name not in by_name:
                listing = ", ".join(repr(n) for n in list(by_name)[:8]) + (", ..." if len(by_name) > 8 else "")
                raise w.error(here, f"key '{key}' names test {name!r}, which is not a test of this spec (tests: {listing})")
            names.append(name)
        a, b = names
        if a == b:
            raise w.error(here, f"keys 'a' and 'b' name the same test {a!r}")
        metric = fields.string(w, here, item, "metric")
        if metric is not None:
            for name in names:
                own = {m.name for m in by_name[name].metrics}
                if metric not in own and metric not in HARNESS_METRIC_UNITS:
                    known = sorted(own) + sorted(HARNESS_METRIC_UNITS)
                    raise w.error(here, f"key 'metric' names {metric!r}, which test {name!r} does not record "
                                        f"(it records: {', '.join(known)})")
        else:
            pa, pb = by_name[a].primary_metrics, by_name[b].primary_metrics
            if pa[0] != pb[0]:
                raise w.error(here, f"tests {a!r} and {b!r} have different primary metrics ({pa[0]!r}, {pb[0]!r}): "
                                    "name the one to compare with key 'metric'")
        out.append(CompareSpec(a, b, metric))
    return tuple(out)
