"""The per-run environment snapshot and the files a command executes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

import benchsage
from benchsage.agent import snapshot
from benchsage.agent.noise import SOURCES
from benchsage.agent.snapshot import collect, command_files, file_hashes


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "run.sh").write_text("#!/bin/sh\necho run\n")
    (tmp_path / "bench.py").write_text(f"#!/usr/bin/env {Path(sys.executable).name}\nprint(1)\n")
    (tmp_path / "plain.py").write_text("print(2)\n")
    (tmp_path / "data.txt").write_text("not a program\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tool").write_bytes(b"\x7fELF fake binary")
    for name in ("run.sh", "bench.py", "sub/tool"):
        (tmp_path / name).chmod(0o755)
    return tmp_path


def test_snapshot_has_what_design_md_lists(project: Path) -> None:
    snap = collect(["run.sh", str(project / "data.txt"), "missing.bin", "sub"], str(project))
    for key in ("host", "kernel", "os", "cpu_model", "cpu_count", "governor", "turbo", "smt", "aslr",
                "load_average", "python", "benchsage", "noise", "files", "time"):
        assert key in snap, key
    assert snap["host"] == os.uname().nodename and snap["kernel"] == os.uname().release
    assert snap["benchsage"] == benchsage.__version__
    assert snap["python"] == ".".join(map(str, sys.version_info[:3]))
    assert len(snap["load_average"]) == 3
    assert set(snap["noise"]) == {s.name for s in SOURCES}
    assert all(set(v) == {"value", "state"} for v in snap["noise"].values())
    assert snap["aslr"] == snap["noise"]["aslr"]["value"]
    assert snap["files"] == {
        "run.sh": sha(b"#!/bin/sh\necho run\n"),
        str(project / "data.txt"): sha(b"not a program\n"),
        "missing.bin": None,
        "sub": None,  # a directory is not a file
    }
    # Stored in the journal as JSON: it must survive a round trip unchanged.
    assert json.loads(json.dumps(snap)) == snap


def test_hashes_follow_content_changes(project: Path) -> None:
    f = project / "data.txt"
    first = file_hashes(["data.txt"], str(project))["data.txt"]
    assert file_hashes(["data.txt"], str(project))["data.txt"] == first
    stat = f.stat()
    f.write_text("NOT a program\n")  # same size
    os.utime(f, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same mtime, as `cp -p` would leave
    assert file_hashes(["data.txt"], str(project))["data.txt"] == sha(b"NOT a program\n")


def test_unchanged_large_files_are_not_hashed_again(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = project / "big.bin"
    big.write_bytes(os.urandom(1 << 20))
    expected = sha(big.read_bytes())
    assert file_hashes(["big.bin"], str(project))["big.bin"] == expected

    def no_hashing(*a: object, **k: object) -> None:
        raise AssertionError("hashed an unchanged file again")

    monkeypatch.setattr(snapshot.hashlib, "file_digest", no_hashing)
    assert file_hashes(["big.bin", str(big)], str(project)) == {"big.bin": expected, str(big): expected}


def test_command_files_program_relative_to_cwd_and_its_shebang(project: Path) -> None:
    assert command_files("./run.sh --fast", str(project)) == [str(project / "run.sh"), "/bin/sh"]
    assert command_files("sub/tool", str(project)) == [str(project / "sub" / "tool")]
    files = command_files("./bench.py", str(project))
    assert files[0] == str(project / "bench.py")
    assert os.path.realpath(files[1]) == os.path.realpath(shutil.which(Path(sys.executable).name) or "")


def test_command_files_interpreter_and_its_script(project: Path) -> None:
    py = shutil.which("python3")
    assert py is not None
    files = command_files("python3 -u plain.py data.txt", str(project))
    assert files[0] == os.path.abspath(py) and files[-1] == str(project / "plain.py")
    assert str(project / "data.txt") not in files
    assert command_files("bash run.sh", str(project))[-1] == str(project / "run.sh")
    assert command_files(". ./run.sh", str(project)) == [str(project / "run.sh")]
    # Inline code and modules run no file argument.
    assert str(project / "plain.py") not in command_files("python3 -m timeit plain.py", str(project))
    assert str(project / "plain.py") not in command_files("python3 -c 'print(1)' plain.py", str(project))


def test_command_files_through_lists_pipes_wrappers_and_sh_c(project: Path) -> None:
    cwd = str(project)
    line = "FOO=1 nice -n 5 taskset -c 0 ./run.sh 2>/dev/null | sub/tool > out.txt && env -i A=1 ./bench.py; echo done"
    files = command_files(line, cwd)
    assert files[:2] == [str(project / "run.sh"), "/bin/sh"]
    assert str(project / "sub" / "tool") in files and str(project / "bench.py") in files
    assert str(project / "out.txt") not in files and not any(f.endswith("/echo") for f in files)
    inner = command_files("sh -c './run.sh; sub/tool'", cwd)
    assert str(project / "run.sh") in inner and str(project / "sub" / "tool") in inner
    assert command_files("timeout -s KILL 10 sub/tool", cwd) == [str(project / "sub" / "tool")]


def test_command_files_never_raises(project: Path) -> None:
    assert command_files("echo 'unbalanced", str(project)) == []
    assert command_files("./missing --x", str(project)) == []
    assert command_files("cd sub && echo hi", str(project)) == []
    assert command_files("", str(project)) == []


def test_each_file_once_however_named(tmp_path: Path) -> None:
    (tmp_path / "real.sh").write_text("echo\n")
    (tmp_path / "link.sh").symlink_to(tmp_path / "real.sh")
    assert command_files("sh ./real.sh; sh ./link.sh", str(tmp_path))[-1] == str(tmp_path / "real.sh")
    assert len(command_files("sh ./real.sh; sh ./link.sh", str(tmp_path))) == 2
