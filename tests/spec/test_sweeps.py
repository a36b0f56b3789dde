"""The spec's sweeps: a test naming {NAME} becomes one test per level, in its place, named
NAME[sweep=level]; the level shell-quoted into the command, as written into env and cwd; a
mistake in [[sweep]] is a one-line error naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchsage.errors import SpecError
from benchsage.spec import SweepSpec, load_spec

HEAD = '[experiment]\nname = "t"\nruns = 4\nseed = 4\n'


def spec_of(tmp_path: Path, body: str):
    path = tmp_path / "experiment.toml"
    path.write_text(HEAD + body)
    return load_spec(str(path))


def test_a_test_naming_a_sweep_becomes_one_test_per_level_in_its_place(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, '[[sweep]]\nname = "conns"\nlevels = [2, 8, 32]\n'
                             '[[test]]\nname = "warm"\ncommand = "true"\n'
                             '[[test]]\nname = "wrk"\ncommand = "wrk -c{conns} http://s1/"\n'
                             '[[test]]\nname = "last"\ncommand = "true"\n')
    assert [t.name for t in spec.tests] == ["warm", "wrk[conns=2]", "wrk[conns=8]", "wrk[conns=32]", "last"]
    assert [t.command for t in spec.tests[1:4]] == ["wrk -c2 http://s1/", "wrk -c8 http://s1/", "wrk -c32 http://s1/"]
    assert [t.sweep for t in spec.tests] == [(), (("conns", "2"),), (("conns", "8"),), (("conns", "32"),), ()]
    assert spec.sweeps == (SweepSpec("conns", ("2", "8", "32")),)


def test_several_sweeps_cross_in_declared_order_whatever_order_the_command_names_them(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, '[[sweep]]\nname = "a"\nlevels = [1, 2]\n[[sweep]]\nname = "b"\nlevels = ["x", "y"]\n'
                             '[[test]]\nname = "t"\ncommand = "run {b} {a}"\n')
    assert [t.name for t in spec.tests] == ["t[a=1,b=x]", "t[a=1,b=y]", "t[a=2,b=x]", "t[a=2,b=y]"]
    assert spec.tests[1].command == "run y 1" and spec.tests[1].sweep == (("a", "1"), ("b", "y"))


def test_levels_are_shell_quoted_in_the_command_and_as_written_in_env_and_cwd(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, '[[sweep]]\nname = "mode"\nlevels = ["read only", "rw"]\n'
                             '[[test]]\nname = "t"\ncommand = "bench --mode={mode}"\ncwd = "data/{mode}"\nenv = {MODE = "{mode}", N = "1"}\n')
    first = spec.tests[0]
    assert first.name == "t[mode=read only]" and first.command == "bench --mode='read only'"
    assert first.env == {"MODE": "read only", "N": "1"} and first.cwd == str(tmp_path / "data" / "read only")
    assert spec.tests[1].command == "bench --mode=rw" and spec.tests[1].env["MODE"] == "rw"


def test_only_declared_names_are_replaced_and_the_shells_own_braces_are_left_alone(tmp_path: Path) -> None:
    command = "echo {n} ${n} {1..3} {a,b} {other}; awk '{print $1}' f; find . -exec ls {} ;"
    spec = spec_of(tmp_path, f'[[sweep]]\nname = "n"\nlevels = [1, 2]\n[[test]]\nname = "t"\ncommand = "{command}"\n')
    assert spec.tests[0].command == "echo 1 ${n} {1..3} {a,b} {other}; awk '{print $1}' f; find . -exec ls {} ;"


def test_an_experiment_wide_env_naming_a_sweep_expands_every_test(tmp_path: Path) -> None:
    spec = load_spec_text(tmp_path, '[experiment]\nname = "t"\nruns = 4\nenv = {N = "{n}"}\n[[sweep]]\nname = "n"\nlevels = [1, 2]\n'
                                    '[[test]]\nname = "a"\ncommand = "true"\n[[test]]\nname = "b"\ncommand = "false"\n')
    assert [t.name for t in spec.tests] == ["a[n=1]", "a[n=2]", "b[n=1]", "b[n=2]"]


def load_spec_text(tmp_path: Path, text: str):
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return load_spec(str(path))


def test_a_comparison_may_name_an_expanded_test(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, '[[sweep]]\nname = "n"\nlevels = [1, 2]\n[[test]]\nname = "t"\ncommand = "echo {n}"\n'
                             '[[compare]]\na = "t[n=1]"\nb = "t[n=2]"\n')
    assert (spec.treatments.compare[0].a, spec.treatments.compare[0].b) == ("t[n=1]", "t[n=2]")
    with pytest.raises(SpecError, match=r"key 'a' names test 't', which is not a test of this spec \(tests: 't\[n=1\]'"):
        spec_of(tmp_path, '[[sweep]]\nname = "n"\nlevels = [1, 2]\n[[test]]\nname = "t"\ncommand = "echo {n}"\n'
                          '[[compare]]\na = "t"\nb = "t[n=2]"\n')


def test_a_spec_without_sweeps_is_as_before(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, '[[test]]\nname = "t"\ncommand = "echo {n}"\n')
    assert [(t.name, t.command, t.sweep) for t in spec.tests] == [("t", "echo {n}", ())] and spec.sweeps == ()


TEST = '[[test]]\nname = "t"\ncommand = "echo {n}"\n'


@pytest.mark.parametrize("body, expected", [
    ('[[sweep]]\nname = "n"\nlevels = [1]\n' + TEST, "[[sweep]] #1 ('n'): key 'levels' must list at least two levels, got 1"),
    ('[[sweep]]\nname = "n"\nlevels = []\n' + TEST, "[[sweep]] #1 ('n'): key 'levels' must list at least two levels, got 0"),
    ('[[sweep]]\nname = "n"\nlevels = [1, 2, 1]\n' + TEST, "[[sweep]] #1 ('n'): key 'levels' lists '1' twice"),
    ('[[sweep]]\nname = "n"\nlevels = [1, "1"]\n' + TEST, "[[sweep]] #1 ('n'): key 'levels' lists '1' twice"),
    ('[[sweep]]\nname = "n"\nlevels = [1, true]\n' + TEST, "[[sweep]] #1 ('n'): key 'levels': True is true/false; a level is a number or a string"),
    ('[[sweep]]\nname = "n"\nlevels = [1, [2]]\n' + TEST, "key 'levels': [2] is an array; a level is a number or a string"),
    ('[[sweep]]\nname = "n"\nlevels = [1, ""]\n' + TEST, "key 'levels': '' is not a level"),
    ('[[sweep]]\nname = "n"\nlevels = [1, nan]\n' + TEST, "key 'levels': nan is not a finite number"),
    ('[[sweep]]\nname = "n"\nlevels = "1 2"\n' + TEST, "key 'levels' must be an array of at least two levels"),
    ('[[sweep]]\nname = "n"\n' + TEST, "[[sweep]] #1 ('n'): missing required key 'levels'"),
    ('[[sweep]]\nname = "n m"\nlevels = [1, 2]\n' + TEST, "[[sweep]] #1: key 'name' must be a word (letters, digits, _ . -), got 'n m'"),
    ('[[sweep]]\nname = "n"\nlevels = [1, 2]\n[[sweep]]\nname = "n"\nlevels = [3, 4]\n' + TEST,
     "[[sweep]] #2 ('n'): duplicate sweep name 'n' (also [[sweep]] #1)"),
    ('[[sweep]]\nname = "n"\nlevels = [1, 2]\nstep = 1\n' + TEST, "[[sweep]] #1: unknown key 'step'"),
    ('[[sweep]]\nname = "n"\nlevels = [1, 2]\n[[sweep]]\nname = "m"\nlevels = [1, 2]\n' + TEST,
     "[[sweep]] #2 ('m'): no [[test]] names {m} in its command, env or cwd"),
    ('[[sweep]]\nname = "conns"\nlevels = [1, 2]\n[[test]]\nname = "t"\ncommand = "wrk -c{conns}"\n[[test]]\nname = "u"\n'
     'command = "wrk -c{conn}"\n', "[[test]] #2 ('u'): key 'command' names {conn}, which is no sweep; did you mean {conns}?"),
    ('[[sweep]]\nname = "conns"\nlevels = [1, 2]\n[[test]]\nname = "t"\ncommand = "wrk -c{conns}"\nenv = {C = "{Conns}"}\n',
     "[[test]] #1 ('t'): key 'env.C' names {Conns}, which is no sweep; did you mean {conns}?"),
    ('[[sweep]]\nname = "n"\nlevels = [1, 2]\n[[test]]\nname = "t[n=1]"\ncommand = "echo 1"\n' + TEST,
     "duplicate test name 't[n=1]'"),
])
def test_bad_sweeps_are_one_line_errors_naming_the_key(tmp_path: Path, body: str, expected: str) -> None:
    with pytest.raises(SpecError) as info:
        spec_of(tmp_path, body)
    message = str(info.value)
    assert expected in message and "\n" not in message and "experiment.toml" in message
