"""A spec whose env holds API_TOKEN = "s3cret": nothing benchsage shows or writes beside the journal
(the terminal, --json, the HTML report, the exports, the workers' logs) holds the value, and the
report says it was masked; the journal keeps the spec as written. The experiment directory and
everything in it are never writable by group or other, whatever the umask, and readable by the
user alone when the spec holds such a value."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "s3cret-value"  # long enough to be masked wherever it appears (SPREAD_MIN)


def write_spec(folder: Path, env: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / "experiment.toml"
    spec.write_text(f'[experiment]\nname = "sec"\nruns = 2\nseed = 1\nenv = {{ {env} }}\n'
                    '[[test]]\nname = "a"\ncommand = "true"\n[[test]]\nname = "b"\ncommand = "echo ${#API_TOKEN}"\n'
                    '[reset]\ncommand = "true"\n')
    return spec


def bench(*args: str, cwd: Path, umask: int | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, env={**os.environ, "BENCHSAGE_REPORT": "1"},
                          preexec_fn=None if umask is None else (lambda: os.umask(umask)))
    assert done.returncode == 0, done.stderr
    return done


def test_a_secret_is_in_the_journal_only_and_the_report_says_it_was_masked(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, f'API_TOKEN = "{SECRET}", PLAIN = "visible"')
    shown = [bench("run", str(spec), "-o", "out", cwd=tmp_path),
             bench("analyze", "out", "--json", cwd=tmp_path), bench("analyze", "out", "--all", cwd=tmp_path),
             bench("report", "out", "-o", "again.html", cwd=tmp_path), bench("plan", str(spec), cwd=tmp_path),
             bench("export", "out", "--format", "jsonl", "-o", "trials.jsonl", cwd=tmp_path)]
    assert all(SECRET not in done.stdout + done.stderr for done in shown)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix not in (".sqlite", ".toml") and "sqlite-" not in p.name]
    assert {p.relative_to(tmp_path).as_posix() for p in written} >= {"out/report.html", "out/workers/local.log", "again.html",
                                                                     "trials.jsonl"}
    assert [p for p in written if SECRET in p.read_text(errors="replace")] == []
    for page in (tmp_path / "out" / "report.html", tmp_path / "again.html"):
        html = page.read_text()
        assert "API_TOKEN = &#34;••••••&#34;, PLAIN = &#34;visible&#34;" in html  # the spec as shown
        assert '<p class="note">API_TOKEN = •••••• (masked: its name looks like a secret)</p>' in html
    with sqlite3.connect(tmp_path / "out" / "journal.sqlite") as conn:
        (text,) = conn.execute("SELECT value FROM meta WHERE key = 'spec_text'").fetchone()
        printed = {row[0] for row in conn.execute("SELECT stdout_tail FROM trials JOIN tests ON tests.id = test_id WHERE name = 'b'")}
    assert f'API_TOKEN = \\"{SECRET}\\"' in text  # the journal keeps the spec as written
    assert printed == {f"{len(SECRET)}\n".encode()}  # and the test ran with the value, not the mask


def modes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix() or ".": stat.S_IMODE(p.lstat().st_mode) for p in [root, *root.rglob("*")]}


@pytest.mark.parametrize("umask, private", [(0o000, True), (0o000, False), (0o022, True)])
def test_the_experiment_directory_is_never_writable_by_others_and_private_with_a_secret(tmp_path: Path, umask: int,
                                                                                          private: bool) -> None:
    spec = write_spec(tmp_path / "spec", f'API_TOKEN = "{SECRET}"' if private else 'PLAIN = "visible"')
    bench("run", str(spec), "-o", "results/out", cwd=tmp_path, umask=umask)
    found = modes(tmp_path / "results")
    assert set(found) >= {".", "out", "out/journal.sqlite", "out/journal.sqlite-wal", "out/journal.sqlite-shm", "out/workers",
                          "out/workers/local.log", "out/report.html"}
    assert found["."] == 0o755  # a folder above, made for it
    folder, file = (0o700, 0o600) if private else (0o755, 0o644)
    for name, mode in found.items():
        is_dir = (tmp_path / "results" / name).is_dir()
        assert mode & ~(0o755 if is_dir else 0o644) == 0, (name, oct(mode))  # never writable by group or other
        if name in ("out", "out/journal.sqlite", "out/journal.sqlite-wal", "out/journal.sqlite-shm", "out/workers",
                    "out/workers/local.log"):
            assert mode == (folder if is_dir else file), (name, oct(mode))


def test_a_link_where_a_workers_log_goes_is_never_written_through(tmp_path: Path) -> None:
    """`run` accepts a directory holding only workers/ (a connection that failed leaves it);
    a link planted there as the log is refused, not followed to the file it names."""
    spec = write_spec(tmp_path, 'PLAIN = "visible"')
    (tmp_path / "out" / "workers").mkdir(parents=True)
    (tmp_path / "out" / "workers" / "local.log").symlink_to(tmp_path / "elsewhere")
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out", "--no-report"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line == ("benchsage: error: worker local: cannot create its connection log out/workers/local.log "
                    "(a symbolic link is there, and benchsage never writes through one)")
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "out" / "journal.sqlite").exists()
