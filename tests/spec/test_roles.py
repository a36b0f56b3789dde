"""Roles and collectors in the spec: groups of hosts in named roles, what runs on which role, and
every mistake a one-line error naming the key (exit 2) before anything runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchsage.errors import SpecError
from benchsage.spec import load_spec

PAIR = """
[experiment]
name = "svc"
runs = 2

[[worker]]
name = "pair1"
[worker.roles.server]
kind = "ssh"
host = "s1"
[worker.roles.client]
kind = "ssh"
host = "c1"

[[worker]]
name = "pair2"
[worker.roles.server]
kind = "ssh"
host = "s2"
[worker.roles.client]
kind = "ssh"
host = "c2"
"""

REST = """
[reset]
[[reset.step]]
role = "server"
command = "./server.sh restart"
[[reset.step]]
role = "client"
command = "sync"

[[factor]]
name = "governor"
levels = ["performance", "schedutil"]
setup = "echo {level}"
role = "server"

[[test]]
name = "wrk"
role = "client"
command = "wrk -c8 http://s1/"

[[collector]]
name = "server_energy"
role = "server"
kind = "energy"

[[collector]]
name = "served"
role = "server"
kind = "command"
command = "cat /srv/count"
delta = true
unit = "requests"
better = "higher"
"""


def load(tmp_path: Path, text: str):
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return load_spec(path)


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(SpecError) as caught:
        load(tmp_path, text)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_pair_of_roles_is_read_with_where_everything_runs(tmp_path: Path) -> None:
    spec = load(tmp_path, PAIR + REST)
    assert [w.name for w in spec.workers] == ["pair1", "pair2"]
    pair1 = spec.workers[0]
    assert pair1.role_names == ("server", "client") and spec.roles == ("server", "client")
    assert [(role, m.name, m.host) for role, m in pair1.roles] == [("server", "pair1/server", "s1"), ("client", "pair1/client", "c1")]
    assert pair1.target == "server: ssh s1, client: ssh c1"
    assert [(s.role, s.command) for s in spec.reset.steps] == [("server", "./server.sh restart"), ("client", "sync")]
    assert spec.treatments.factors[0].role == "server" and spec.tests[0].role == "client"
    energy, served = spec.collectors
    assert (energy.kind, energy.unit, energy.better, energy.role) == ("energy", "J", "lower", "server")
    assert (served.kind, served.delta, served.unit, served.better, served.command) == ("command", True, "requests", "higher", "cat /srv/count")


def test_a_plain_reset_runs_on_every_role_in_declared_order(tmp_path: Path) -> None:
    spec = load(tmp_path, PAIR + '[reset]\ncommand = "sync"\n[[test]]\ncommand = "true"\n')
    (step,) = spec.reset.steps
    assert step.role is None and step.command == "sync"
    reboot = load(tmp_path, PAIR + '[reset]\nkind = "reboot"\n[[test]]\ncommand = "true"\n')
    assert [(s.role, s.kind) for s in reboot.reset.steps] == [(None, "reboot")]


@pytest.mark.parametrize(
    "change, expected",
    [
        ('[[test]]\nname = "x"\nrole = "db"\ncommand = "true"\n', "[[test]] 'x': key 'role' names role 'db', which worker 'pair1' lacks (its roles: server, client)"),
        ('[[test]]\ncommand = "true"\n[reset]\n[[reset.step]]\nrole = "db"\ncommand = "true"\n', "[[reset.step]] #1: key 'role' names role 'db'"),
        ('[[test]]\ncommand = "true"\n[[factor]]\nname = "f"\nlevels = ["a", "b"]\nenv = "F"\nrole = "db"\n', "[[factor]] 'f': key 'role' names role 'db'"),
        ('[[test]]\ncommand = "true"\n[[collector]]\nname = "e"\nrole = "db"\nkind = "energy"\n', "[[collector]] 'e': key 'role' names role 'db'"),
        ('[[test]]\ncommand = "true"\n[[collector]]\nname = "e"\nrole = "server"\nkind = "power"\n', "[[collector]] #1 ('e'): key 'kind' must be one of 'energy', 'cpu', 'command', got 'power'"),
        ('[[test]]\ncommand = "true"\n[[collector]]\nname = "wall_time"\nrole = "server"\nkind = "cpu"\n', "a metric 'wall_time' is already recorded"),
        ('[[test]]\ncommand = "true"\n[[collector]]\nname = "c"\nrole = "server"\nkind = "command"\n', "[[collector]] #1 ('c'): missing required key 'command'"),
        ('[[test]]\ncommand = "true"\n[[collector]]\nname = "c"\nrole = "server"\nkind = "cpu"\ndelta = true\n', "key 'delta' only applies to kind = \"command\""),
    ],
)
def test_naming_what_the_workers_lack_is_one_line(tmp_path: Path, change: str, expected: str) -> None:
    assert expected in error(tmp_path, PAIR + change)


def test_roles_need_a_worker_name(tmp_path: Path) -> None:
    text = '[experiment]\nname = "x"\n[[worker]]\n[worker.roles.server]\nkind = "local"\n[[test]]\ncommand = "true"\n'
    assert "[[worker]] #1: a worker with roles needs a `name`" in error(tmp_path, text)


def test_two_groups_cannot_share_a_host(tmp_path: Path) -> None:
    text = PAIR.replace('host = "s2"', 'host = "s1"') + '[[test]]\ncommand = "true"\n'
    message = error(tmp_path, text)
    assert "[[worker]] 'pair2' role 'server': ssh s1 is also pair1/server: two groups cannot share a host" in message


def test_a_role_is_a_role_of_every_worker_or_of_none(tmp_path: Path) -> None:
    text = PAIR + '[[worker]]\nname = "solo"\nkind = "ssh"\nhost = "x"\n[[test]]\ncommand = "true"\n'
    assert "[[worker]] #3: has no roles while other workers have" in error(tmp_path, text)
    plain = '[experiment]\nname = "x"\n[[test]]\nrole = "client"\ncommand = "true"\n'
    assert "key 'role' names role 'client', but the workers have no roles" in error(tmp_path, plain)
    steps = '[experiment]\nname = "x"\n[reset]\n[[reset.step]]\nrole = "a"\ncommand = "true"\n[[test]]\ncommand = "true"\n'
    assert "[reset]: key 'step' needs workers with roles" in error(tmp_path, steps)


def test_the_command_line_says_it_in_one_line_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "experiment.toml"
    path.write_text(PAIR + '[[test]]\nrole = "db"\ncommand = "true"\n')
    done = subprocess.run([sys.executable, "-m", "benchsage", "plan", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "role 'db'" in done.stderr and "Traceback" not in done.stderr


def test_plan_lists_each_role_its_host_and_what_runs_there(tmp_path: Path) -> None:
    path = tmp_path / "experiment.toml"
    path.write_text(PAIR + REST)
    done = subprocess.run([sys.executable, "-m", "benchsage", "plan", str(path)], capture_output=True, text=True, cwd=tmp_path,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "ssh " in line and ("server" in line or "client" in line)]
    assert any("pair1" in line and "server" in line and "ssh s1" in line and "collectors server_energy (energy), served (command)" in line
               for line in lines), done.stdout
    assert any("client" in line and "ssh c2" in line and "tests wrk" in line for line in lines), done.stdout


def test_a_slurm_role_is_a_node_or_a_component_of_a_heterogeneous_allocation(tmp_path: Path) -> None:
    base = '[experiment]\nname = "x"\n[[worker]]\nname = "p"\n[worker.roles.server]\nkind = "slurm"\n{}\n' \
           '[worker.roles.client]\nkind = "slurm"\nhet_group = 1\n[[test]]\ncommand = "true"\n'
    spec = load(tmp_path, base.format("het_group = 0"))
    assert [(m.node, m.het_group, m.target) for _, m in spec.workers[0].roles] == [(None, 0, "slurm het-group 0"),
                                                                                  (None, 1, "slurm het-group 1")]
    assert "give either 'node' (a node by name) or 'het_group'" in error(tmp_path, base.format('het_group = 0\nnode = "c1"'))
    assert "missing required key 'node'" in error(tmp_path, base.format(""))
    assert "is also p/client: two groups" not in error(tmp_path, base.format("het_group = -1"))
    twice = base.format("het_group = 0") + '[[worker]]\nname = "q"\n[worker.roles.server]\nkind = "slurm"\nhet_group = 0\n' \
                                           '[worker.roles.client]\nkind = "slurm"\nnode = "c3"\n'
    assert "slurm het-group 0 is also p/server: two groups cannot share a host" in error(tmp_path, twice)
