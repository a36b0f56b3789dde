"""Reading an experiment changes nothing and runs nothing: after `analyze`, `report` and
`export`, every file of the experiment directory has the same bytes and no file was added (no
SQLite -wal or -shm beside the journal), and the spec's `[generator]` is not run again, even
where it would now print other tests or fail."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path


def bench(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def fingerprint(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_analyze_report_and_export_leave_the_directory_as_it_was(tmp_path: Path) -> None:
    # The generator counts its own runs in a file beside the spec, and fails from its second.
    (tmp_path / "gen.sh").write_text('echo x >> generated.log\n[ "$(wc -l < generated.log)" -gt 1 ] && exit 1\n'
                                     'echo "printf 1"\necho "printf 2"\n')
    spec = tmp_path / "experiment.toml"
    spec.write_text('[experiment]\nname = "readers"\nruns = 3\nseed = 1\n\n[generator]\ncommand = "sh gen.sh"\n')
    done = bench(tmp_path, "run", str(spec), "-o", "out", "--quiet")
    assert done.returncode in (0, 1), done.stderr
    out = tmp_path / "out"
    before = fingerprint(out)
    assert "journal.sqlite" in before
    assert (tmp_path / "generated.log").read_text().count("x") == 1

    analysed = bench(tmp_path, "analyze", "out", "--json")
    assert analysed.returncode in (0, 1), analysed.stderr
    assert {t["test"] for t in json.loads(analysed.stdout)["tests"]} == {"printf 1", "printf 2"}
    assert bench(tmp_path, "report", "out", "-o", str(tmp_path / "report.html")).returncode in (0, 1)
    assert bench(tmp_path, "export", "out", "-o", str(tmp_path / "trials.csv")).returncode == 0

    assert fingerprint(out) == before
    assert (tmp_path / "generated.log").read_text().count("x") == 1  # the generator ran once, for `run`
    assert (tmp_path / "report.html").stat().st_size > 0
    rows = (tmp_path / "trials.csv").read_text().splitlines()
    assert sum(r.startswith('"printf 1",') and ',"wall_time",' in r for r in rows) == 6  # 3 runs per arm
