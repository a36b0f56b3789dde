"""`benchsage release DIR` runs only a release command it can trust: the one the spec at the
recorded path still gives for that worker, in that spec's folder, the spec being the user's own
file outside DIR. Anything else (a directory someone sent, a record tampered with, a spec changed
since) is printed with where it came from, nothing runs, exit 2; `--yes` runs it.

The record is real: `allocate` commands run, and the controller "crashes" before the journal
exists (Held.allocate without its exit), leaving workers/allocations.json as a killed `run` does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchsage.execute.allocate import PENDING_RECORD, Held
from benchsage.spec import load_spec

HEAD = '[experiment]\nname = "r"\nruns = 2\n[[test]]\nname = "a"\ncommand = "true"\n'


def crashed(tmp_path: Path, release: str = "echo >> released") -> tuple[Path, Path]:
    """A spec whose allocate prints h1 and h2, allocated and then left as a crash leaves it:
    (the spec, the experiment directory)."""
    spec = tmp_path / "experiment.toml"
    spec.write_text(HEAD + f'[[worker]]\nkind = "ssh"\nallocate = "echo h1; echo h2"\nrelease = \'{release}\'\n')
    out = tmp_path / "out"
    Held(str(out), lambda line: None).allocate(load_spec(spec))
    return spec, out


def release(tmp_path: Path, out: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", "release", str(out), *flags], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


def tamper(out: Path, **changes: object) -> None:
    path = out / PENDING_RECORD
    records = json.loads(path.read_text())
    records[0].update(changes)
    path.write_text(json.dumps(records))


def refused(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("benchsage: error: ") and "nothing was run" in line and "--yes" in line
    return line


def test_the_command_the_spec_still_gives_runs(tmp_path: Path) -> None:
    _, out = crashed(tmp_path)
    done = release(tmp_path, out)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "released hosts (h1, h2)\n"
    assert (tmp_path / "released").read_text() == "h1 h2\n"


def test_a_tampered_command_is_printed_not_run_and_runs_with_yes(tmp_path: Path) -> None:
    _, out = crashed(tmp_path)
    tamper(out, release="touch pwned")
    line = refused(release(tmp_path, out))
    assert f"{out / PENDING_RECORD} records the release command `touch pwned` for hosts h1 h2 in {tmp_path}" in line
    assert f"{tmp_path / 'experiment.toml'} releases those hosts with `echo >> released`" in line
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "released").exists()
    assert json.loads((out / PENDING_RECORD).read_text())[0]["released"] is False
    done = release(tmp_path, out, "--yes")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "pwned").exists() and not (tmp_path / "released").exists()
    assert json.loads((out / PENDING_RECORD).read_text())[0]["released"] is True


def test_a_directory_someone_sent_runs_nothing_of_theirs(tmp_path: Path) -> None:
    """Their spec came along inside DIR and the record points at it; or the record points at a
    spec of theirs elsewhere (owned by another user); or at a folder of theirs where the same
    command names another script; or at a spec anyone may rewrite."""
    spec, out = crashed(tmp_path, release="./release.sh")
    (tmp_path / "release.sh").write_text("#!/bin/sh\ntouch released\n")
    (tmp_path / "release.sh").chmod(0o755)
    theirs = out / "spec.toml"
    shutil.copy(spec, theirs)
    tamper(out, spec=str(theirs), cwd=str(out))
    assert f"the spec it records, {theirs}, lies inside the experiment directory" in refused(release(tmp_path, out))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "release.sh").write_text("#!/bin/sh\ntouch pwned\n")
    (elsewhere / "release.sh").chmod(0o755)
    tamper(out, spec=str(spec), cwd=str(elsewhere))
    assert f"{spec} runs it in {tmp_path}" in refused(release(tmp_path, out))
    tamper(out, cwd=str(tmp_path))
    spec.chmod(0o666)
    assert f"the spec it records, {spec}, may be written by anyone" in refused(release(tmp_path, out))
    spec.chmod(0o644)
    if os.geteuid() == 0:  # a spec of another user: only root can make one here
        os.chown(spec, 65534, 65534)
        assert f"the spec it records, {spec}, is not a file of yours" in refused(release(tmp_path, out))
        os.chown(spec, 0, 0)
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "released").exists()
    done = release(tmp_path, out)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "released").exists() and not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("change, said", [
    ({"hosts": ["h1", "-oProxyCommand=touch pwned"]}, "'-oProxyCommand=touch pwned' is not a host name"),
    ({"spec": "experiment.toml"}, "no spec path is recorded with it"),
])
def test_hosts_and_paths_benchsage_never_records_are_not_trusted(tmp_path: Path, change: dict, said: str) -> None:
    _, out = crashed(tmp_path)
    tamper(out, **change)
    assert said in refused(release(tmp_path, out))
    assert not (tmp_path / "released").exists()


def test_a_spec_changed_or_gone_since_needs_yes(tmp_path: Path) -> None:
    spec, out = crashed(tmp_path)
    spec.write_text(spec.read_text().replace("release = ", "# release = "))
    assert f"{spec} releases those hosts with no command" in refused(release(tmp_path, out))
    spec.unlink()
    assert f"the spec it records, {spec}, is not there" in refused(release(tmp_path, out))
    assert not (tmp_path / "released").exists()
    done = release(tmp_path, out, "--yes")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "released").read_text() == "h1 h2\n"


@pytest.mark.parametrize("job", ["--user=nobody", "12 13", "0x1f"])
def test_a_slurm_job_id_that_is_not_a_number_is_never_cancelled(tmp_path: Path, job: str) -> None:
    """Refused before any Slurm command runs, with --yes too (scancel would read it as options)."""
    out = tmp_path / "out" / "workers"
    out.mkdir(parents=True)
    record = {"kind": "slurm", "hosts": ["c1"], "names": ["c1"], "job": job, "released": False}
    (out / "allocations.json").write_text(json.dumps([record]))
    for flags in ((), ("--yes",)):
        done = release(tmp_path, tmp_path / "out", *flags)
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line == f"benchsage: error: {tmp_path / 'out'}: the recorded Slurm job id {job!r} is not a number; not cancelled; nothing was released"


@pytest.mark.parametrize("text", ["{", '{"kind": "command"}', '[{"kind": "command", "hosts": "h1", "names": [], "released": false}]',
                                  '[{"kind": "ssh", "hosts": [], "names": [], "released": false}]'])
def test_a_record_benchsage_never_writes_is_one_line_exit_2(tmp_path: Path, text: str) -> None:
    out = tmp_path / "out" / "workers"
    out.mkdir(parents=True)
    (out / "allocations.json").write_text(text)
    done = release(tmp_path, tmp_path / "out")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"benchsage: error: {out / 'allocations.json'}: ")
