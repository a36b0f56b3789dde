"""A probe's spec: the user's, with the tests rewritten to run in the worktrees."""

from __future__ import annotations

import tomllib
from pathlib import Path

from benchsage.execute.bisect import ship
from benchsage.execute.bisect.probes import Arm, dumps, probe_spec_text, worktree_cwd
from benchsage.spec import load_spec

SPEC = '''
[experiment]
name = "svc"
runs = 20
stop = "sequential"
env = { MODE = "fast \\"quoted\\"\\nline" }

[reset]
command = "./reset.sh"

[[test]]
name = "load"
command = "./bench --ünïcode"
cwd = "sub"
[[test.metric]]
name = "ops"
regex = 'ops: ([0-9.]+)'
better = "higher"

[[test]]
name = "other"
command = "true"
'''


def test_dumps_round_trips() -> None:
    doc = tomllib.loads(SPEC + '[[worker]]\nname = "g"\nroles = { server = { kind = "ssh", host = "h" } }\n')
    doc["reset"]["step"] = [{"command": "sync", "role": "server"}, {"command": "x", "timeout": 1.5}]
    assert tomllib.loads(dumps(doc)) == doc


def test_probe_spec_keeps_the_test_and_moves_it_into_the_worktrees(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    spec_path = repo / "experiment.toml"
    spec_path.write_text(SPEC)
    spec = load_spec(spec_path)
    arms = [Arm("good", "/w/good"), Arm("bad", "/w/bad"), Arm("abc", "/w/abc")]
    text = probe_spec_text(spec, "load", arms, str(repo), 7, 11)
    probe = load_spec(spec_path, text=text)
    assert [t.name for t in probe.tests] == ["load@good", "load@bad", "load@abc"]
    assert [t.cwd for t in probe.tests] == ["/w/good/sub", "/w/bad/sub", "/w/abc/sub"]
    assert all(t.command == "./bench --ünïcode" and [m.name for m in t.metrics] == ["ops"] for t in probe.tests)
    assert probe.runs == 7 and probe.seed == 11 and probe.stop == "fixed"
    assert probe.reset is not None and probe.reset.command == "./reset.sh" and probe.reset.cwd == str(repo)
    assert probe.tests[0].env["MODE"] == 'fast "quoted"\nline'


def test_a_test_outside_the_repository_runs_at_the_worktree_root(tmp_path: Path) -> None:
    assert worktree_cwd(str(tmp_path / "elsewhere"), str(tmp_path / "repo"), "/w/x") == "/w/x"
    assert worktree_cwd(str(tmp_path / "repo"), str(tmp_path / "repo"), "/w/x") == "/w/x"


def test_a_probe_on_other_hosts_gets_bisect_dirs_and_resets_in_bads_copy(tmp_path: Path) -> None:
    """Workers of other hosts run the worktrees shipped to their bisect dir: the user's dir with
    -bisect appended (their own experiment's deploy is left alone), else one under /tmp per
    search; the reset runs in bad's copy of its folder (the user's checkout is not there)."""
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    spec_path = repo / "experiment.toml"
    workers = ('[[worker]]\nkind = "ssh"\nhost = "n1"\ndir = "/data/{worker}/"\n'
               '[[worker]]\nkind = "ssh"\nhost = "n2"\n[[worker]]\nkind = "local"\n')
    spec_path.write_text(SPEC + workers)
    spec = load_spec(spec_path)
    arms = [Arm("good", "/w/good"), Arm("bad", "/w/bad"), Arm("abc", "/w/abc")]
    probe = load_spec(spec_path, text=probe_spec_text(spec, "load", arms, str(repo), 7, 11, search="5ea7c4"))
    assert [w.dir for w in probe.workers] == ["/data/n1-bisect", "/tmp/benchsage-bisect/5ea7c4/n2", None]
    assert probe.reset is not None and probe.reset.cwd == "/w/bad"
    assert [t.cwd for t in probe.tests] == ["/w/good/sub", "/w/bad/sub", "/w/abc/sub"]


def test_a_batch_killed_while_its_journal_was_created_has_no_plan(tmp_path: Path) -> None:
    import sqlite3

    from benchsage.execute.bisect.probes import _planned
    from benchsage.store.journal import Journal, journal_path

    half = tmp_path / "half"
    half.mkdir()
    sqlite3.connect(journal_path(str(half))).close()  # the file, no tables yet
    assert not _planned(str(half))
    conn = sqlite3.connect(journal_path(str(half)))
    conn.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")  # the schema, the plan not committed
    conn.commit()
    conn.close()
    assert not _planned(str(half))
    Journal.create(str(tmp_path / "whole"), {"name": "x"}, [], []).close()
    assert _planned(str(tmp_path / "whole"))


def test_a_swept_test_and_a_generated_one_are_bisected_by_their_full_name(tmp_path: Path) -> None:
    """`NAME[sweep=level]` is measured with its level written in (the probe declares no sweep);
    a generator's test by its command, with the experiment's defaults and global metrics."""
    repo = tmp_path / "repo"
    (repo / "d8").mkdir(parents=True)
    spec_path = repo / "experiment.toml"
    spec_path.write_text('''
[experiment]
name = "s"
runs = 4
env = { BASE = "1" }
[[metric]]
name = "t"
regex = 't ([0-9.]+)'
[[sweep]]
name = "n"
levels = [8, "a b"]
[[test]]
name = "load"
command = "./bench {n}"
env = { N = "{n}" }
cwd = "d{n}"
[generator]
command = "echo './gen 1'; echo './gen 2'"
''')
    spec = load_spec(spec_path)
    assert [t.name for t in spec.tests] == ["load[n=8]", "load[n=a b]", "./gen 1", "./gen 2"]
    arms = [Arm("good", "/w/good"), Arm("bad", "/w/bad"), Arm("abc", "/w/abc")]
    text = probe_spec_text(spec, "load[n=a b]", arms, str(repo), 4, 1)
    probe = load_spec(spec_path, text=text, run_generator=False)
    assert [t.name for t in probe.tests] == ["load[n=a b]@good", "load[n=a b]@bad", "load[n=a b]@abc"]
    assert {t.command for t in probe.tests} == {"./bench 'a b'"} and probe.tests[0].env == {"BASE": "1", "N": "a b"}
    assert [t.cwd for t in probe.tests] == ["/w/good/da b", "/w/bad/da b", "/w/abc/da b"]
    assert probe.sweeps == () and probe.generator is None
    probe = load_spec(spec_path, text=probe_spec_text(spec, "./gen 2", arms, str(repo), 4, 1))
    assert [t.name for t in probe.tests] == ["./gen 2@good", "./gen 2@bad", "./gen 2@abc"]
    assert {t.command for t in probe.tests} == {"./gen 2"} and [t.cwd for t in probe.tests] == ["/w/good", "/w/bad", "/w/abc"]
    assert [m.name for m in probe.tests[0].metrics] == ["t"] and probe.tests[0].env == {"BASE": "1"}


def test_a_probe_on_role_hosts_gets_a_bisect_dir_per_role_and_runs_each_step_in_bads_copy(tmp_path: Path) -> None:
    """Every role's host of a worker with roles is deployed to: the role's dir with -bisect
    appended, else one under /tmp per search, worker and role; each reset step and collector
    runs in bad's copy of its folder (a step's own cwd kept at its place in the repository)."""
    repo = tmp_path / "repo"
    (repo / "srv").mkdir(parents=True)
    spec_path = repo / "experiment.toml"
    roles = ""
    for pair, (server, client) in (("p1", ("n1", "n2")), ("p2", ("n3", "n4"))):
        roles += (f'[[worker]]\nname = "{pair}"\n[worker.roles.server]\nkind = "ssh"\nhost = "{server}"\ndir = "/data/{{worker}}"\n'
                  f'[worker.roles.client]\nkind = "ssh"\nhost = "{client}"\n')
    spec_path.write_text('''
[experiment]
name = "svc"
runs = 4

[reset]
[[reset.step]]
role = "server"
command = "./restart"
cwd = "srv"
[[reset.step]]
role = "client"
command = "sync"

[[test]]
name = "load"
role = "client"
command = "./client"

[[collector]]
name = "served"
role = "server"
kind = "command"
command = "./count"
''' + roles)
    spec = load_spec(spec_path)
    assert ship.ships(spec)
    arms = [Arm("good", "/w/good"), Arm("bad", "/w/bad"), Arm("abc", "/w/abc")]
    probe = load_spec(spec_path, text=probe_spec_text(spec, "load", arms, str(repo), 7, 11, search="5ea7c4"))
    assert [[(role, h.dir) for role, h in w.roles] for w in probe.workers] == [
        [("server", "/data/p1/server-bisect"), ("client", "/tmp/benchsage-bisect/5ea7c4/p1/client")],
        [("server", "/data/p2/server-bisect"), ("client", "/tmp/benchsage-bisect/5ea7c4/p2/client")]]
    assert probe.reset is not None and [(s.role, s.cwd) for s in probe.reset.steps] == [("server", "/w/bad/srv"), ("client", "/w/bad")]
    assert [c.cwd for c in probe.collectors] == ["/w/bad"]
    assert [(t.role, t.cwd) for t in probe.tests] == [("client", "/w/good"), ("client", "/w/bad"), ("client", "/w/abc")]
    # All on this machine (no dir, no other host): nothing is shipped, the steps run in the user's checkout
    local = spec_path.read_text().split("[[worker]]")[0] + '[[worker]]\nname = "p"\n[worker.roles.server]\n[worker.roles.client]\n'
    spec_path.write_text(local)
    assert not ship.ships(load_spec(spec_path))
    probe = load_spec(spec_path, text=probe_spec_text(load_spec(spec_path), "load", arms, str(repo), 7, 11))
    assert [h.dir for _, h in probe.workers[0].roles] == [None, None]
    assert probe.reset is not None and [s.cwd for s in probe.reset.steps] == [str(repo / "srv"), str(repo)]


def test_a_command_with_any_unicode_is_written_so_toml_reads_it_back() -> None:
    """JSON's escapes are not TOML's for characters outside the BMP (surrogate pairs), nor for DEL."""
    import tomllib

    doc = {"experiment": {"name": "x"}, "test": [{"name": "snake", "command": "echo 🐍 \x7f 'q' \"d\" \\", "env": {"E": "é"}}]}
    assert tomllib.loads(dumps(doc)) == doc
