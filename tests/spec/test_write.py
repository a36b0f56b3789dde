"""The spec writer, the inverse of load_spec: every spec of examples/, every spec the suite loads
(data/specs_from_tests.jsonl, harvest_specs.py) and generated ones with awkward names, commands,
env values and sweeps are written and read back into an equal spec, which draws the same plan."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from benchsage.design.experiment import plan_experiment
from benchsage.errors import SpecError
from benchsage.spec import (CollectorSpec, CompareSpec, ContextSpec, FactorSpec, InitSpec, LinkOrder, MetricSpec, ObserverSpec,
                            ResetSpec, ResetStep, Spec, SweepSpec, TestSpec, Treatments, WorkerSpec, load_spec)
from benchsage.spec.fields import Where
from benchsage.spec.model import DeploySpec
from benchsage.spec.provision import with_hosts
from benchsage.spec.sweeps import expand_sweeps
from benchsage.spec.write import differences, reloaded, save_spec, spec_toml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(ROOT.glob("examples/*/*.toml"))
CORPUS = [json.loads(line) for line in (Path(__file__).parent / "data" / "specs_from_tests.jsonl").read_text().splitlines()]
FOLDER = "/srv/bench marks/é"  # nothing is read from it: load_spec is given the text


def _same_plans(a: Spec, b: Spec, seed: int = 1234) -> None:
    """The same plan for the same seed, and for the spec's own seed; only the digest, which
    hashes the spec's text, differs."""
    for s in (seed, None) if a.seed is not None else (seed,):
        pa, pb = plan_experiment(a, seed=s), plan_experiment(b, seed=s)
        assert dataclasses.replace(pa, digest="") == dataclasses.replace(pb, digest="")


def _round_trip(spec: Spec, folder: Path) -> Spec:
    """Save the spec in `folder`, load the file, and check what a saved spec promises."""
    path = folder / "saved.toml"
    folder.mkdir(parents=True, exist_ok=True)
    text = save_spec(spec, str(path))
    back = load_spec(str(path), generated=list(spec.generated), run_generator=False)
    assert differences(spec, back) == []
    assert back.text == text and back.path == str(path)
    if spec.seed is not None:
        assert tomllib.loads(text)["experiment"]["seed"] == spec.seed
    _same_plans(spec, back)
    return back


@pytest.mark.parametrize("path", EXAMPLES, ids=[str(p.relative_to(ROOT)) for p in EXAMPLES])
def test_every_example_reads_back_from_its_folder_and_from_another(path: Path, tmp_path: Path) -> None:
    spec = load_spec(str(path))
    mine = spec_toml(spec, str(path.parent))
    assert reloaded(spec, str(path.parent / "saved.toml")).text == mine  # what `time` would journal is what it saves
    elsewhere = _round_trip(spec, tmp_path / "elsewhere")
    assert spec_toml(elsewhere, str(tmp_path / "elsewhere")) == spec_toml(spec, str(tmp_path / "elsewhere"))


def test_the_corpus_of_the_suites_specs_is_large_and_varied() -> None:
    texts = [r["text"] for r in CORPUS]
    assert len(texts) >= 100
    for table in ("[[sweep]]", "[reset]", "[[reset.step]]", "[[worker]]", "[worker.roles.", "[[collector]]", "[context]",
                  "[observer]", "[[factor]]", "[[compare]]", "[generator]", "[deploy]", "[init]", "output =", "stop = \"sequential\""):
        assert any(table in t for t in texts), table


@pytest.mark.parametrize("record", CORPUS, ids=[f"spec{i}" for i in range(len(CORPUS))])
def test_every_spec_the_suite_loads_reads_back_equal_and_draws_the_same_plan(record: dict, tmp_path: Path) -> None:
    folder = tmp_path / "spec folder"
    folder.mkdir()
    spec = load_spec(str(folder / "experiment.toml"), text=record["text"].replace("{folder}", str(folder)),
                     generated=record["generated"], run_generator=False)
    _round_trip(spec, folder)
    _round_trip(spec, tmp_path / "other")  # its relative paths become absolute


def _spec(tmp_path: Path, text: str) -> Spec:
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return load_spec(str(path))


def test_a_sweep_is_written_as_one_test_naming_it_with_its_levels_as_given(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '[experiment]\nname = "s"\nseed = 3\n'
                           '[[sweep]]\nname = "conns"\nlevels = [2, 8, 32]\n[[sweep]]\nname = "mode"\nlevels = ["read only", "1e3", "0.5"]\n'
                           '[[test]]\nname = "wrk"\ncommand = "wrk -c{conns} --mode={mode}"\nenv = {M = "{mode}"}\ncwd = "data/{mode}"\n'
                           '[[test]]\nname = "idle"\ncommand = "true"\n')
    assert len(spec.tests) == 10
    doc = tomllib.loads(spec_toml(spec, str(tmp_path)))
    assert doc["sweep"] == [{"name": "conns", "levels": [2, 8, 32]}, {"name": "mode", "levels": ["read only", "1e3", 0.5]}]
    assert doc["test"] == [{"name": "wrk", "command": "wrk -c{conns} --mode={mode}", "cwd": "data/{mode}", "env": {"M": "{mode}"}},
                           {"name": "idle", "command": "true"}]
    _round_trip(spec, tmp_path)


def test_what_every_part_shares_is_said_once_in_experiment(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '[experiment]\nname = "x"\ntimeout = 5\ncpus = "0-3,6"\ncwd = "work"\nenv = {A = "1", B = "2"}\n'
                           '[reset]\ncommand = "true"\n'
                           '[[test]]\ncommand = "a"\nenv = {B = "3"}\n[[test]]\ncommand = "b"\ncwd = "/tmp"\n')
    doc = tomllib.loads(spec_toml(spec, str(tmp_path)))
    assert doc["experiment"] == {"name": "x", "runs": 10, "alpha": 0.05, "timeout": 5, "cpus": "0-3,6", "env": {"A": "1"}}
    assert doc["reset"] == {"command": "true", "cwd": "work", "env": {"B": "2"}}
    assert doc["test"] == [{"command": "a", "cwd": "work", "env": {"B": "3"}}, {"command": "b", "cwd": "/tmp", "env": {"B": "2"}}]
    _round_trip(spec, tmp_path)


def test_paths_in_the_folder_are_relative_to_it_and_others_absolute(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '[experiment]\nname = "x"\n[[worker]]\nkind = "ssh"\nhost = "h"\nssh_config = "fleet/ssh_config"\n'
                           '[[test]]\ncommand = "a"\ncwd = "sub/dir"\n[[test]]\ncommand = "b"\ncwd = "~x"\n')
    here = tomllib.loads(spec_toml(spec, str(tmp_path)))
    assert [t.get("cwd") for t in here["test"]] == ["sub/dir", "~x"] and here["worker"][0]["ssh_config"] == "fleet/ssh_config"
    above = tomllib.loads(spec_toml(spec, str(tmp_path / "sub")))  # ~x lies outside it
    assert [t.get("cwd") for t in above["test"]] == ["dir", str(tmp_path / "~x")]
    inside = tomllib.loads(spec_toml(spec, str(tmp_path.parent)))
    assert [t.get("cwd") for t in inside["test"]] == [f"{tmp_path.name}/sub/dir", f"{tmp_path.name}/~x"]
    home = dataclasses.replace(spec, workers=(dataclasses.replace(spec.workers[0], ssh_config=str(tmp_path / "~h" / "c")),))
    assert tomllib.loads(spec_toml(home, str(tmp_path)))["worker"][0]["ssh_config"] == "./~h/c"  # not the home of user h
    for folder in (tmp_path, tmp_path / "sub", tmp_path.parent):
        _round_trip(home, folder)


AWKWARD = ['echo "it\'s" \\$HOME', "printf '%s\\n' a\\\\b", "python3 -c 'print(\"é ☃ 🐍\")'", "for i in 1 2; do\n  echo $i\ndone\n",
           "echo a\tb\r\n", "cat 'a\x7fb' \x1b[0m", "echo {n} ${n} {1..3}", "'''\"\"\"'''"]


@pytest.mark.parametrize("command", AWKWARD)
def test_commands_read_back_exactly(command: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, '[experiment]\nname = "x"\n[reset]\ncommand = "true"\n[[test]]\ncommand = "true"\n')
    test = dataclasses.replace(spec.tests[0], name=command, command=command, env={command: command})
    spec = dataclasses.replace(spec, tests=(test,), reset=dataclasses.replace(spec.reset, command=command))
    back = _round_trip(spec, tmp_path)
    assert back.tests[0].command == command and back.tests[0].env == {command: command} and back.reset.command == command


def test_a_spec_with_no_seed_is_written_without_one_and_keys_at_their_defaults_are_left_out(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '[experiment]\nname = "x"\n[[test]]\ncommand = "true"\n')
    assert spec_toml(spec, str(tmp_path)) == '[experiment]\nname = "x"\nruns = 10\nalpha = 0.05\n\n[[test]]\ncommand = "true"\n'


def test_a_command_line_holding_bytes_that_are_not_utf8_cannot_be_saved(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '[experiment]\nname = "x"\n[[test]]\ncommand = "true"\n')
    bad = dataclasses.replace(spec, tests=(dataclasses.replace(spec.tests[0], command="cat caf\udce9"),))  # argv's surrogateescape
    with pytest.raises(SpecError, match="cannot write the spec of 'x' as TOML: 'cat caf\\\\udce9' is not Unicode text"):
        spec_toml(bad, str(tmp_path))


def test_a_spec_that_would_not_read_back_the_same_is_refused_naming_what_differs(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '[experiment]\nname = "x"\n[[worker]]\nkind = "slurm"\nnodes = 1\n[[test]]\ncommand = "true"\n')
    allocated = with_hosts(spec, [[("n1", "n1")]], ["4242"])  # a job id is no key of a spec: it comes from the allocation
    with pytest.raises(SpecError, match=r"workers\[0\]\.job would read back differently"):
        spec_toml(allocated, str(tmp_path))


def test_differences_name_the_fields_and_ignore_where_and_how_a_spec_was_written(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '[experiment]\nname = "x"\n[[test]]\ncommand = "true"\n[[test]]\ncommand = "true"\nname = "again"\n')
    assert spec.warnings  # an A/A test
    same = dataclasses.replace(spec, path="/elsewhere.toml", text="# other", warnings=())
    assert differences(spec, same) == []
    other = dataclasses.replace(spec, runs=3, tests=(spec.tests[0], dataclasses.replace(spec.tests[1], env={"A": "1"})))
    assert differences(spec, other) == ["runs", "tests[1].env"]


# Every field of the spec's values, as spec/write.py writes it or load derives it. A new field
# fails here until write.py writes it (and this list names it): a saved spec must reproduce.
KNOWN_FIELDS = {
    Spec: {"path", "name", "runs", "seed", "alpha", "correction", "tests", "reset", "workers", "output_limit", "text", "generator",
           "generated", "random_orders", "warnings", "treatments", "stop", "looks", "min_effect", "decide", "cpu_latency", "sweeps",
           "collectors", "deploy", "init", "teardown", "warmup"},
    TestSpec: {"name", "command", "timeout", "env", "cwd", "metrics", "cpus", "role", "output", "primary", "sweep", "declared",
               "prepare", "shell"},
    MetricSpec: {"name", "unit", "better", "regex", "json", "file", "line", "parser"},
    ResetSpec: {"command", "timeout", "cwd", "env", "kind", "steps"},
    ResetStep: {"role", "command", "timeout", "cwd", "env", "kind"},
    WorkerSpec: {"name", "kind", "host", "ssh_config", "node", "het_group", "srun_args", "transport", "dir", "python", "boot_id",
                 "reconnect_timeout", "roles", "nodes", "partition", "constraint", "time", "job", "allocate", "release"},
    Treatments: {"context", "observer", "factors", "compare"},
    ContextSpec: {"variants", "env_bytes", "cwd_bytes", "cpus", "aslr", "link_order"},
    LinkOrder: {"objects", "build"},
    ObserverSpec: {"levels"},
    FactorSpec: {"name", "levels", "setup", "env", "role"},
    CompareSpec: {"a", "b", "metric"},
    SweepSpec: {"name", "levels"},
    CollectorSpec: {"name", "role", "kind", "command", "delta", "unit", "better", "cwd", "env", "timeout"},
    DeploySpec: {"source", "rev", "dirty"},
    InitSpec: {"command", "timeout", "cwd", "env", "role"},
}


@pytest.mark.parametrize("cls", list(KNOWN_FIELDS), ids=lambda c: c.__name__)
def test_the_writer_knows_every_field_of_the_spec(cls: type) -> None:
    assert {f.name for f in dataclasses.fields(cls)} == KNOWN_FIELDS[cls], \
        f"a field of {cls.__name__} changed: teach spec/write.py to write it, then list it here"


# Generated specs, built as `benchsage time` builds them: values, not TOML.

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
WORDS = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\0"), min_size=1, max_size=6).filter(
    lambda s: s not in (".", ".."))
LEVEL = st.one_of(st.integers(-5, 10 ** 6).map(str), st.floats(0.001, 1e6).map(str),
                  st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\0"), min_size=1, max_size=8)
                  ).filter(str.strip)
METRICS = [MetricSpec("ops", "ops/s", "higher", regex="ops: ([0-9.]+)"), MetricSpec("lat", json="latency.p99"),
           MetricSpec("res", file="out.txt", line=-1)]


@st.composite
def _cwds(draw: st.DrawFn, sweep: str | None) -> str:
    base = draw(st.sampled_from([FOLDER, "/elsewhere", os.path.dirname(FOLDER)]))
    parts = draw(st.lists(WORDS, max_size=2)) + ([f"{{{sweep}}}"] if sweep and draw(st.booleans()) else [])
    return os.path.normpath(os.path.join(base, *parts))


@st.composite
def _tests(draw: st.DrawFn, sweeps: list[SweepSpec]) -> list[TestSpec]:
    tests = []
    for i in range(draw(st.integers(1, 4))):
        named = [s.name for s in sweeps if draw(st.booleans())] if sweeps else []
        command = draw(TEXT.filter(str.strip)) + "".join(f" -{n}={{{n}}}" for n in named)
        env = draw(st.dictionaries(TEXT, TEXT, max_size=2))
        if named and draw(st.booleans()):
            env["LEVEL"] = f"{{{named[0]}}}"
        tests.append(TestSpec(
            name=draw(st.one_of(TEXT.map(lambda s: f"{s}#{i}"), st.just(command))),  # a name that is its command is left out
            command=command,
            timeout=draw(st.one_of(st.none(), st.floats(0.01, 1e5))),
            env=env,
            cwd=draw(_cwds(named[-1] if named else None)),
            metrics=tuple(draw(st.lists(st.sampled_from(METRICS), unique_by=lambda m: m.name, max_size=2))),
            cpus=draw(st.one_of(st.none(), st.lists(st.integers(0, 64), min_size=1, unique=True).map(lambda c: tuple(sorted(c))))),
            prepare=draw(st.one_of(st.none(), TEXT.filter(str.strip))),
            shell=draw(st.booleans()) if _splits(command) else True,
        ))
    return tests


def _splits(command: str) -> bool:
    """Whether a command splits into words as shell = "none" needs (quotes closed)."""
    try:
        return bool(shlex.split(command))
    except ValueError:
        return False


@st.composite
def _specs(draw: st.DrawFn) -> Spec:
    sweeps = [SweepSpec(name, tuple(draw(st.lists(LEVEL, min_size=2, max_size=3, unique=True))))
              for name in draw(st.lists(st.sampled_from(["conns", "mode", "n.1"]), unique=True, max_size=2))]
    declared = draw(_tests(sweeps))
    try:
        tests = expand_sweeps(Where("generated"), tuple(sweeps), declared)
    except SpecError:
        assume(False)  # a sweep no test names, or a {word} too close to a sweep's name: a spec load refuses
    assume(len({t.name for t in tests}) == len(tests) and len({t.name for t in declared}) == len(declared))
    runs = draw(st.integers(1, 30))
    sequential = draw(st.booleans())
    factors = tuple(FactorSpec(f"f{i}", tuple(draw(st.lists(LEVEL, min_size=2, max_size=2, unique=True))),
                               setup=draw(TEXT.filter(str.strip)))
                    for i in range(draw(st.integers(0, 2))))
    assume(2 ** len(factors) <= runs)
    compare = (CompareSpec(tests[-1].name, tests[0].name, "wall_time"),) if len(tests) > 1 and draw(st.booleans()) else ()
    reset = draw(st.one_of(st.none(), st.builds(
        lambda command, kind, cwd, env, timeout: ResetSpec(command, timeout, cwd, env, kind),
        TEXT.filter(str.strip), st.sampled_from(["command", "reboot"]), _cwds(None), st.dictionaries(TEXT, TEXT, max_size=2),
        st.floats(0.5, 1000.0))))
    return Spec(
        path=os.path.join(FOLDER, "made-up.toml"), name=draw(TEXT.filter(lambda s: s.strip() and "/" not in s and s not in (".", ".."))),
        runs=runs, seed=draw(st.one_of(st.none(), st.integers(0, 2 ** 64))), alpha=draw(st.floats(0.001, 0.5)),
        correction=draw(st.sampled_from(["bonferroni", "holm"])), tests=tuple(tests), reset=reset,
        random_orders=draw(st.sampled_from(["shuffle", "williams"] if len(tests) > 1 else ["shuffle"])),
        treatments=Treatments(factors=factors, compare=compare), sweeps=tuple(sweeps),
        stop="sequential" if sequential else "fixed",
        looks=draw(st.one_of(st.none(), st.integers(1, runs))) if sequential else None,
        min_effect=draw(st.floats(0.1, 50.0)) if sequential else 2.0,
        decide=draw(st.sampled_from(["each", "verdict"])) if sequential else "each",
        cpu_latency=draw(st.one_of(st.none(), st.integers(0, 1000))), output_limit=draw(st.integers(1024, 1 << 24)),
        warmup=draw(st.integers(0, 3)),
        teardown=draw(st.one_of(st.none(), st.builds(lambda command, timeout: InitSpec(command, timeout, FOLDER, {}),
                                                     TEXT.filter(str.strip), st.floats(1.0, 1e4)))),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_specs())
def test_generated_specs_read_back_equal_and_draw_the_same_plan(spec: Spec) -> None:
    back = reloaded(spec, os.path.join(FOLDER, "saved.toml"))
    assert differences(spec, back) == []
    _same_plans(spec, back)
