"""Spec validation: every mistake names the file and the key, and is a SpecError (exit 2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchsage.errors import SpecError
from benchsage.spec import load_spec

GOOD = """
[experiment]
name = "demo"
runs = 3
seed = 7

[reset]
command = "true"

[[test]]
name = "a"
command = "echo 'ops: 12.5'"
timeout = 5
[[test.metric]]
name = "ops"
regex = 'ops: ([0-9.]+)'
unit = "ops/s"
better = "higher"

[[test]]
command = "sleep 0"
"""


def write(tmp_path: Path, text: str, name: str = "experiment.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_good_spec_is_typed(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD))
    assert spec.name == "demo" and spec.runs == 3 and spec.seed == 7 and spec.alpha == 0.05
    assert [t.name for t in spec.tests] == ["a", "sleep 0"]  # name defaults to the command
    a = spec.tests[0]
    assert a.timeout == 5 and a.cwd == str(tmp_path)
    assert a.metrics[0].name == "ops" and a.metrics[0].better == "higher"
    assert a.primary_metrics == ("ops",)
    assert spec.tests[1].primary_metrics == ("wall_time",)
    assert spec.reset is not None and spec.reset.timeout == 60
    assert len(spec.digest) == 64


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, text))
    message = str(info.value)
    assert "\n" not in message
    assert "experiment.toml" in message
    return message


@pytest.mark.parametrize(
    "text, expected",
    [
        ('[experiment]\nname = "x"\n[[test]]\ncommand = "true"\ncomand = "x"\n', "unknown key 'comand'"),
        ('[experiment]\nname = "x"\nrunz = 3\n[[test]]\ncommand = "true"\n', "[experiment]: unknown key 'runz'"),
        ('[experiment]\nname = "x"\n[[test]]\nname = "a"\ncommand = "true"\n[[test]]\nname = "a"\ncommand = "false"\n', "duplicate test name 'a'"),
        ('[experiment]\nname = "x"\n[[test]]\ncommand = "true"\n[[test]]\ncommand = "true"\n',
         "duplicate test name 'true' (also test #1); two tests with the same command need a `name` each"),
        ('[experiment]\nname = "x"\n', "no tests"),
        ('[experiment]\nname = "x"\n[[test]]\nname = "a"\n', "[[test]] #1: missing required key 'command'"),
        ('[experiment]\nname = "x"\nruns = "ten"\n[[test]]\ncommand = "true"\n', "key 'runs' must be an integer, got a string"),
        ('[experiment]\nname = "x"\nruns = 0\n[[test]]\ncommand = "true"\n', "key 'runs' must be at least 1"),
        ('[experiment]\nname = "x"\nruns = -4\n[[test]]\ncommand = "true"\n', "key 'runs' must be at least 1"),
        ('[experiment]\nname = "x"\n[[test]]\ncommand = "true"\ntimeout = 0\n', "key 'timeout' must be positive"),
        ('[experiment]\nname = "x"\n[[test]]\ncommand = "true"\n[[test.metric]]\nname = "m"\nregex = "([0-9"\n', "not a valid regular expression"),
        ('[experiment]\nname = "x"\n[[test]]\ncommand = "true"\n[[test.metric]]\nname = "m"\nregex = "[0-9]+"\n', "one capturing group"),
        ('[experiment]\nname = "x"\n[[test]]\ncommand = "true"\n[[test.metric]]\nname = "m"\n', "exactly one of 'regex', 'json' or 'file'"),
        ('[experiment]\nname = "x"\n[[test]]\ncommand = "true"\n[[test.metric]]\nname = "wall_time"\njson = "a"\n', "recorded by the harness"),
        ('[experiment]\nname = "x"\n[[test]]\ncommand = "true"\n[[test.metric]]\nname = "m"\njson = "a"\nbetter = "up"\n', "'better' must be"),
        ('[experiment]\nname = "x"\nalpha = 1.5\n[[test]]\ncommand = "true"\n', "'alpha' must be between 0 and 1"),
        ('[experiment]\nname = "x"\ncorrection = "sidak"\n[[test]]\ncommand = "true"\n', "'correction' must be"),
        ('[experiment]\n[[test]]\ncommand = "true"\n', "missing required key 'name'"),
        ('[[test]]\ncommand = "true"\n', "missing [experiment]"),
        ('[experiment]\nname = "x"\n[reset]\ntimeout = 3\n[[test]]\ncommand = "true"\n', "[reset]: missing required key 'command'"),
        ('[experiment]\nname = "x"\n[[test]]\ncommand = "true"\nenv = "A=1"\n', "key 'env' must be a table"),
        ('[experiment]\nname = "x"\n[[worker]]\nkind = "ssh"\n[[test]]\ncommand = "true"\n', "[[worker]] #1: missing required key 'host'"),
        ('[experiment]\nname = "x"\n[[worker]]\nkind = "telnet"\n[[test]]\ncommand = "true"\n', "unknown worker kind 'telnet'"),
        ('[experiment]\nname = "x"\n[[worker]]\nkind = "ssh"\nhost = "a"\nnode = "b"\n[[test]]\ncommand = "true"\n', "unknown key 'node'"),
        ('[experiment]\nname = "x"\n[[worker]]\nkind = "ssh"\nhost = "a"\n[[worker]]\nkind = "ssh"\nhost = "a"\n[[test]]\ncommand = "true"\n', "duplicate worker name 'a'"),
        ('[experiment]\nname = "x"\n[[worker]]\nkind = "command"\ntransport = "docker"\n[[test]]\ncommand = "true"\n', "'transport' must be an array of strings"),
        ('[experiment]\nname = "x"\n[[worker]]\nkind = "slurm"\nnode = "c1"\ndir = "rel"\n[[test]]\ncommand = "true"\n', "must be an absolute path"),
        ('[experiment]\nname = "x"\n[reset]\nkind = "powercycle"\n[[test]]\ncommand = "true"\n', "\"command\" or \"reboot\""),
        ('[experiment]\nname = "x"\nrandom_orders = "latin"\n[[test]]\ncommand = "true"\n', "[experiment]: key 'random_orders' must be \"shuffle\" or \"williams\", got 'latin'"),
        ('[experiment]\nname = "x"\nrandom_orders = "williams"\n[[test]]\ncommand = "true"\n', "[experiment]: key 'random_orders' = \"williams\" needs at least 2 tests"),
        ('[experiment]\nname = "x"\nrandom_orders = 2\n[[test]]\ncommand = "true"\n', "key 'random_orders' must be a string"),
        ('[experiment\nname = "x"\n', "invalid TOML"),
        ('[experiment]\nname = "x"\nbogus = 1\n', "unknown key 'bogus'"),
    ],
)
def test_bad_specs_name_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in error_of(tmp_path, text)


def test_random_orders_default_to_shuffle(tmp_path: Path) -> None:
    assert load_spec(write(tmp_path, GOOD)).random_orders == "shuffle"
    williams = GOOD.replace("seed = 7", 'seed = 7\nrandom_orders = "williams"')
    assert load_spec(write(tmp_path, williams)).random_orders == "williams"


def test_missing_and_binary_spec_files(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="spec file not found"):
        load_spec(tmp_path / "nope.toml")
    (tmp_path / "bin.toml").write_bytes(b"\x00\xff\xfe\x80")
    with pytest.raises(SpecError, match="not a text file"):
        load_spec(tmp_path / "bin.toml")
    with pytest.raises(SpecError, match="is a directory"):
        load_spec(tmp_path)


def test_generator_prints_one_test_per_line(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    for name in ("b.sh", "a.sh"):
        (tmp_path / "tests" / name).write_text("#!/bin/sh\necho hi\n")
    spec = load_spec(write(tmp_path, '[experiment]\nname = "gen"\ntimeout = 9\n[generator]\ncommand = "ls tests/*.sh | sort"\n'))
    assert [t.command for t in spec.tests] == ["tests/a.sh", "tests/b.sh"]
    assert all(t.timeout == 9 for t in spec.tests)
    assert spec.generated == ("tests/a.sh", "tests/b.sh")
    # Resuming uses the recorded commands, not a second run of the generator.
    again = load_spec(tmp_path / "experiment.toml", text=spec.text, generated=["tests/z.sh"])
    assert [t.command for t in again.tests] == ["tests/z.sh"]


def test_generator_failures(tmp_path: Path) -> None:
    assert "exited with status 3: boom" in error_of(tmp_path, '[experiment]\nname = "g"\n[generator]\ncommand = "echo boom >&2; exit 3"\n')
    assert "printed no test commands" in error_of(tmp_path, '[experiment]\nname = "g"\n[generator]\ncommand = "true"\n')
    assert "duplicate" in error_of(tmp_path, '[experiment]\nname = "g"\n[generator]\ncommand = "echo x; echo x"\n')


def test_relative_paths_resolve_against_spec_folder(tmp_path: Path) -> None:
    sub = tmp_path / "exp"
    sub.mkdir()
    spec = load_spec(write(sub, '[experiment]\nname = "x"\ncwd = "work"\n[[test]]\ncommand = "true"\n[[test]]\ncommand = "false"\ncwd = "/tmp"\n'))
    assert spec.tests[0].cwd == os.path.join(str(sub), "work")
    assert spec.tests[1].cwd == "/tmp"


def test_env_inherits_and_overrides(tmp_path: Path) -> None:
    spec = load_spec(
        write(tmp_path, '[experiment]\nname = "x"\nenv = {A = "1", B = "2"}\n[[test]]\ncommand = "true"\nenv = {B = "3", N = 4}\n')
    )
    assert dict(spec.tests[0].env) == {"A": "1", "B": "3", "N": "4"}


def test_global_metrics_apply_to_tests_without_their_own(tmp_path: Path) -> None:
    spec = load_spec(
        write(
            tmp_path,
            '[experiment]\nname = "x"\n[[metric]]\nname = "ops"\njson = "ops"\n[[test]]\ncommand = "a"\n'
            '[[test]]\ncommand = "b"\n[[test.metric]]\nname = "lat"\nregex = "(\\\\d+)"\n',
        )
    )
    assert [m.name for m in spec.tests[0].metrics] == ["ops"]
    assert [m.name for m in spec.tests[1].metrics] == ["lat"]


def test_a_test_is_its_name_and_tests_may_share_a_command(tmp_path: Path) -> None:
    """Same command with another env or cwd: two tests, nothing said. The same command, env and
    cwd under two names: an A/A test, allowed with a warning naming both."""
    (tmp_path / "sub").mkdir()
    path = tmp_path / "experiment.toml"
    path.write_text(
        '[experiment]\nname = "x"\nenv = {MODE = "base"}\n'
        '[[test]]\nname = "fast"\ncommand = "./bench"\nenv = {MODE = "fast"}\n'
        '[[test]]\nname = "slow"\ncommand = "./bench"\nenv = {MODE = "slow"}\n'
        '[[test]]\nname = "elsewhere"\ncommand = "./bench"\ncwd = "sub"\n'
        '[[test]]\nname = "base"\ncommand = "./bench"\n'
    )
    spec = load_spec(str(path))
    assert [t.name for t in spec.tests] == ["fast", "slow", "elsewhere", "base"]
    assert [t.env["MODE"] for t in spec.tests] == ["fast", "slow", "base", "base"]
    assert spec.warnings == ()
    path.write_text(path.read_text() + '[[test]]\nname = "base again"\ncommand = "./bench"\nenv = {MODE = "base"}\n')
    spec = load_spec(str(path))
    assert len(spec.tests) == 5
    assert spec.warnings == ("tests 'base' and 'base again' run the same command with the same env and cwd: an A/A test "
                             "(any difference the analysis finds between them is noise or order)",)


def test_a_missing_ssh_config_is_no_error_of_the_spec_but_of_carrying_it_out(tmp_path: Path) -> None:
    """The plan needs no fleet; what `run` needs is said by missing_files and raised by check_files."""
    from benchsage.spec import check_files, missing_files

    path = write(tmp_path, '[experiment]\nname = "x"\n[[worker]]\nkind = "ssh"\nhost = "a"\nssh_config = "fleet/ssh_config"\n'
                           '[[test]]\ncommand = "true"\n')
    spec = load_spec(path)
    assert spec.workers[0].ssh_config == str(tmp_path / "fleet" / "ssh_config")
    (message,) = missing_files(spec)
    assert message.endswith(f"[[worker]] #1: ssh_config '{tmp_path / 'fleet' / 'ssh_config'}' is not a file")
    with pytest.raises(SpecError, match="is not a file"):
        check_files(spec)
    (tmp_path / "fleet").mkdir()
    (tmp_path / "fleet" / "ssh_config").write_text("")
    assert missing_files(spec) == []
    check_files(spec)
