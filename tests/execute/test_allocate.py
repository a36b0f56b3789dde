"""Bad provisioning input is refused before anything runs (exit 2, one line naming it): the
allocation keys of a [[worker]], [init]'s role, and `allocate` commands that fail or print no
host."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchsage.errors import SpecError
from benchsage.spec import load_spec

HEAD = '[experiment]\nname = "p"\nruns = 2\n[[test]]\nname = "a"\ncommand = "true"\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "experiment.toml"
    path.write_text(HEAD + text)
    return path


@pytest.mark.parametrize("worker, said", [
    ('kind = "slurm"\nnodes = 0', "key 'nodes' must be"),
    ('kind = "slurm"\nnodes = 2\nnode = "c1"', "give either 'nodes'"),
    ('kind = "ssh"\nhost = "node1"\nallocate = "./a.sh"', "give either 'host' or 'allocate'"),
    ('kind = "ssh"\nrelease = "./r.sh"', "key 'release' needs 'allocate'"),
    ('kind = "slurm"\nnode = "c1"\npartition = "bench"', "key 'partition' applies to an allocation"),
])
def test_bad_allocation_keys_are_refused(tmp_path: Path, worker: str, said: str) -> None:
    with pytest.raises(SpecError, match="worker") as err:
        load_spec(write(tmp_path, f"[[worker]]\n{worker}\n"))
    assert said in str(err.value)


def test_init_role_must_be_a_role(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"\[init\]: key 'role' names no role of the workers: 'server' \(the workers have no roles\)"):
        load_spec(write(tmp_path, '[init]\ncommand = "true"\nrole = "server"\n'))


def test_init_defaults(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, '[init]\ncommand = "./init.sh"\n'))
    assert spec.init is not None and spec.init.timeout == 1800 and spec.init.cwd == str(tmp_path) and spec.init.role is None


@pytest.mark.parametrize("script, said", [
    ("echo 'no nodes free' >&2; exit 5", "failed (exit status 5: no nodes free); nothing ran"),
    ("echo", "printed no host (it must print one ssh destination per line); nothing ran"),
])
def test_allocate_that_fails_or_prints_no_host_is_refused(tmp_path: Path, script: str, said: str) -> None:
    spec = write(tmp_path, f'[[worker]]\nkind = "ssh"\nallocate = "{script}"\nrelease = "touch released"\n')
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("benchsage: error: [[worker]] allocate `") and line.endswith(said)
    assert not (tmp_path / "released").exists() and not (tmp_path / "out" / "journal.sqlite").exists()


@pytest.mark.parametrize("printed, line", [
    ("echo node1; echo ../../etc", "line 2 '../../etc'"),
    ("echo a/b", "line 1 'a/b'"),
    ("echo ..", "line 1 '..'"),
    ("printf 'node1\\033[2Jx\\n'", "line 1 'node1\\x1b[2Jx'"),
    ("echo -oProxyCommand=x", "line 1 '-oProxyCommand=x'"),
    ("echo a b", "line 1 'a b'"),
    (f"echo {'n' * 300}", f"line 1 '{'n' * 60}"),
])
def test_a_host_an_allocate_command_prints_must_be_an_ssh_destination(tmp_path: Path, printed: str, line: str) -> None:
    """Its name becomes the worker's and goes into `dir` through {worker}: nothing but a plain ssh
    destination may (user@host, user@host:port)."""
    toml = printed.replace("\\", "\\\\")
    spec = write(tmp_path, f'[[worker]]\nkind = "ssh"\nallocate = "{toml}"\ndir = "{tmp_path}/hosts/{{worker}}"\n')
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    (said,) = done.stderr.strip().splitlines()
    assert said.startswith("benchsage: error: [[worker]] allocate `") and f": {line}" in said and "is not an ssh destination" in said, said
    assert said.endswith("; nothing ran") and not (tmp_path / "hosts").exists() and not (tmp_path / "etc").exists()


def test_the_ssh_destinations_an_allocate_command_may_print() -> None:
    from benchsage.execute.allocate import destination_problem

    for host in ("node1", "alice@node1.example.org", "alice@node1:2222", "10.0.0.7", "bench_user@h-1:22", "[::1]", "ops@[fe80::1]"):
        assert destination_problem(host) is None, host
    for host in ("", ".", "..", "a/b", "a\\b", "-p22", "a b", "a\tb", "a\x7f", "x" * 256, "é.example.org", "a;b", "$(id)"):
        assert destination_problem(host) is not None, host


def test_a_recorded_host_that_is_not_an_ssh_destination_names_no_dir(tmp_path: Path) -> None:
    """A journal's or allocations.json's record changed by hand: resume refuses it too."""
    from benchsage.errors import WorkerSetupError
    from benchsage.execute.allocate import Allocation, spec_with

    spec = load_spec(write(tmp_path, f'[[worker]]\nkind = "ssh"\nallocate = "echo n1"\ndir = "{tmp_path}/hosts/{{worker}}"\n'))
    assert spec_with(spec, [Allocation("command", ("n1",), ("n1",))]).workers[0].dir == f"{tmp_path}/hosts/n1"
    with pytest.raises(WorkerSetupError, match=r"names '\.\./\.\./etc', which is not an ssh destination"):
        spec_with(spec, [Allocation("command", ("n1",), ("../../etc",))])


def test_a_crash_before_the_journal_exists_leaves_a_record_release_frees(tmp_path: Path) -> None:
    from benchsage.execute.allocate import Held
    from benchsage.execute.release import release_directory

    spec = load_spec(write(tmp_path, '[[worker]]\nkind = "ssh"\nallocate = "echo h1; echo h2"\nrelease = "echo >released"\n'))
    directory = str(tmp_path / "out")
    held = Held(directory, lambda line: None)
    planned = held.allocate(spec)  # the controller dies here: no journal yet, no __exit__
    assert [(w.name, w.host) for w in planned.workers] == [("h1", "h1"), ("h2", "h2")]
    assert release_directory(directory) == ["released hosts (h1, h2)"]
    assert (tmp_path / "released").read_text() == "h1 h2\n"
    assert release_directory(directory) == [f"{directory}: every allocation was released already"]


def test_init_with_a_role_runs_on_that_role_host_of_every_worker_once(tmp_path: Path) -> None:
    text = ('[init]\ncommand = "echo $ROLE >> inits"\nrole = "server"\n'
            '[[worker]]\nname = "pair1"\n[worker.roles.server]\nkind = "local"\n[worker.roles.client]\nkind = "local"\n')
    spec = write(tmp_path, text.replace('[init]\n', '[init]\nenv = { ROLE = "server" }\n'))
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "inits").read_text() == "server\n"
    import sqlite3
    with sqlite3.connect(tmp_path / "out" / "journal.sqlite") as conn:
        assert conn.execute("SELECT worker, role, status FROM inits").fetchall() == [("pair1", "server", "ok")]
