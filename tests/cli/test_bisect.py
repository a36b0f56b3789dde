"""`benchsage bisect` end to end on a generated repository (examples/bisect/make_repo.py): the
commit found, a build failing on a probe skipped, resume after a crash, and bad input."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bisect" / "make_repo.py"


def _make_repo():
    spec = importlib.util.spec_from_file_location("benchsage_example_bisect", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_repo


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


def one_line_error(done: subprocess.CompletedProcess, status: int, *words: str) -> None:
    assert done.returncode == status, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("benchsage: error: ") and "Traceback" not in done.stderr, done.stderr
    for w in words:
        assert w in lines[-1], lines[-1]


# The search the tests below read decides from measured times (8 ms of work per trial): it runs
# with the timing tests, one at a time at real-time priority, not beside them (starved by them, a
# probe can stay undecided).
SEARCH = pytest.mark.timing


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path, dict]:
    """8 commits; commit 5 makes the program 40 % slower, commit 3 does not build; 10 runs per
    look. The first probe is commit 3 (the middle of 1..7, the lower of two)."""
    root = tmp_path_factory.mktemp("bisect")
    repo = root / "repo"
    hashes = _make_repo()(str(repo), commits=8, change=5, slowdown=40.0, noise=0.0, work=8.0, runs=10, broken=3)
    out = root / "search"
    # --min-effect 10: a probe shown both above good and below bad is bad only beyond it. Each commit is built and run
    # in a worktree of its own, and the same code there can run a few percent off good's (measurement bias: a CI run
    # called commit 4, the same code as good, "bad" at the default 2 %); the change is 40 %.
    done = bench("bisect", "experiment.toml", "--good", hashes["good"], "--bad", "main", "--build", "make", "--alpha", "0.05",
                 "--min-effect", "10", "--seed", "1", "-o", str(out), "--json", "--quiet", cwd=repo)
    assert done.returncode == 0, done.stderr
    return repo, hashes, out, json.loads(done.stdout)


@SEARCH
def test_finds_the_commit_and_skips_the_one_that_does_not_build(searched) -> None:
    repo, hashes, out, doc = searched
    b = doc["bisect"]
    assert b["first_bad"] == hashes["change"]
    assert b["subject"] == "checksum: visit every entry of the table again"
    assert 30 < b["effect_pct"] < 55 and b["ci"][0] < b["effect_pct"] < b["ci"][1]
    broken = subprocess.run(["git", "-C", str(repo), "rev-parse", "main~4"], capture_output=True, text=True).stdout.strip()
    assert b["skipped"] == [{"commit": broken, "reason": "build-failed", "last_line": "make: *** [Makefile:2: checksum] Error 1"}] or \
        (b["skipped"][0]["commit"] == broken and b["skipped"][0]["reason"] == "build-failed")
    assert [p["verdict"] for p in b["probes"]] == ["good", "bad"]
    assert b["builds"] == 5  # good, bad, the broken commit, two probes
    assert all(p["runs"] in (10, 20) for p in b["probes"])  # 20: measured again once undecided at 10
    assert b["trials"] == 2 * b["bad_vs_good"]["runs"] + 3 * sum(p["runs"] for p in b["probes"])
    assert (out / "bisect.html").read_text().count("<svg") == 1
    # The user's checkout is untouched: no build output, nothing changed
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout
    assert status == "" and not (repo / "checksum").exists()


@SEARCH
def test_resume_after_a_crash_rebuilds_and_measures_only_what_was_lost(searched, tmp_path: Path) -> None:
    repo, hashes, out, doc = searched
    copy = tmp_path / "search"
    shutil.copytree(out, copy, symlinks=True)
    # The copy's worktrees are not the repository's: resume must make them again where missing
    # and rebuild them. Simulate a search killed during the build of its last probe: its build
    # record is gone, its worktree holds a half-built tree, its look was never measured.
    last = doc["bisect"]["probes"][-1]["commit"]
    shutil.rmtree(next((out / "probes").glob(f"*-{last[:12]}")))
    os.remove(out / "builds" / f"{last}.json")
    (out / "worktrees" / last[:12] / "half-built.o").write_text("junk")
    kept = {p: p.stat().st_mtime_ns for p in (out / "builds").glob("*.log") if not p.name.startswith(last)}
    trials_before = {d: _trials(d) for d in (out / "probes").glob("*/look-*")}
    done = bench("resume", str(out), "--json", "--quiet", cwd=repo)
    assert done.returncode == 0, done.stderr
    again = json.loads(done.stdout)["bisect"]
    assert again["first_bad"] == hashes["change"]
    assert {p: p.stat().st_mtime_ns for p in kept} == kept  # nothing else was built again
    assert {d: _trials(d) for d in trials_before} == trials_before  # nor measured again
    assert not (out / "worktrees" / last[:12] / "half-built.o").exists()
    assert (out / "builds" / f"{last}.json").exists()


def _trials(directory: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(f"file:{directory / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    finally:
        conn.close()


@pytest.fixture(scope="module")
def small_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("bisect-input") / "repo"
    return repo, _make_repo()(str(repo), commits=4, change=2, runs=8)


def test_unknown_revision(small_repo, tmp_path: Path) -> None:
    repo, hashes = small_repo
    done = bench("bisect", "experiment.toml", "--good", "no-such-rev", "--bad", "main", "-o", str(tmp_path / "s"), cwd=repo)
    one_line_error(done, 2, "--good no-such-rev", "unknown revision")


def test_good_must_be_an_ancestor_of_bad(small_repo, tmp_path: Path) -> None:
    repo, hashes = small_repo
    done = bench("bisect", "experiment.toml", "--good", "main", "--bad", hashes["good"], "-o", str(tmp_path / "s"), cwd=repo)
    one_line_error(done, 2, "is not an ancestor of --bad")


def test_not_a_git_repository(small_repo, tmp_path: Path) -> None:
    repo, hashes = small_repo
    shutil.copy(repo / "experiment.toml", tmp_path / "experiment.toml")
    done = bench("bisect", "experiment.toml", "--good", "a", "--bad", "b", "-o", str(tmp_path / "s"), cwd=tmp_path)
    one_line_error(done, 2, "is not in a git repository", "--repo")


def test_a_build_failing_on_good_quotes_its_last_line(small_repo, tmp_path: Path) -> None:
    repo, hashes = small_repo
    done = bench("bisect", "experiment.toml", "--good", hashes["good"], "--bad", "main", "--build", "echo linking; echo 'ld: cannot find -lfoo' >&2; exit 1",
                 "-o", str(tmp_path / "s"), cwd=repo)
    one_line_error(done, 2, f"--good {hashes['good'][:12]}", "ld: cannot find -lfoo")
    assert not list((tmp_path / "s" / "probes").glob("*")) if (tmp_path / "s" / "probes").exists() else True


def test_a_build_failing_on_bad_and_leftovers_of_a_killed_search(small_repo, tmp_path: Path) -> None:
    """bad (which holds the slower code) does not build; then the worktrees are left as a killed
    search can leave them: good's with stray files (reused: its build is journaled), bad's as a
    folder git does not know (replaced); the search is started again, never a crash."""
    repo, hashes = small_repo
    out = tmp_path / "s"
    build = "! grep -q 'EXTRA_PERCENT 6 ' checksum.c || { echo 'cc: the slow code is refused'; exit 1; }"
    args = ("bisect", "experiment.toml", "--good", hashes["good"], "--bad", "main", "--build", build, "-o", str(out))
    one_line_error(bench(*args, cwd=repo), 2, "--bad", "cc: the slow code is refused")
    good_tree, bad_tree = out / "worktrees" / hashes["good"][:12], out / "worktrees" / hashes["bad"][:12]
    (good_tree / "stray.o").write_text("x")
    subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(bad_tree)], check=True)
    bad_tree.mkdir()
    (bad_tree / "leftover").write_text("x")
    one_line_error(bench(*args, cwd=repo), 2, "--bad", "cc: the slow code is refused")
    assert (good_tree / "stray.o").exists()
    assert not (bad_tree / "leftover").exists() and (bad_tree / "checksum.c").exists()
    # Another search in the same folder is refused
    other = ("bisect", "experiment.toml", "--good", hashes["good"], "--bad", "main~1", "-o", str(out))
    one_line_error(bench(*other, cwd=repo), 2, "holds another search")


def test_plan_builds_and_runs_nothing(small_repo, tmp_path: Path) -> None:
    repo, hashes = small_repo
    done = bench("bisect", "experiment.toml", "--good", hashes["good"], "--bad", "main", "--plan", "--json", cwd=repo)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["candidates"] == 3 and doc["builds"] == 4 and doc["probes"] == 2
    assert not (repo / "results").exists()


def test_plan_names_each_role_host_and_its_bisect_dir_and_builds_nothing(small_repo, tmp_path: Path) -> None:
    repo, hashes = small_repo
    spec = tmp_path / "experiment.toml"
    spec.write_text((repo / "experiment.toml").read_text() + '[[worker]]\nname = "pair"\n[worker.roles.server]\nkind = "ssh"\n'
                    'host = "s"\ndir = "/srv/bench"\n[worker.roles.client]\nkind = "ssh"\nhost = "c"\n'
                    '[reset]\n[[reset.step]]\nrole = "server"\ncommand = "./serve --restart"\n'
                    '[[reset.step]]\nrole = "client"\ncommand = "true"\n')
    args = ("bisect", str(spec), "--repo", str(repo), "--good", hashes["good"], "--bad", "main", "--plan")
    done = bench(*args, "-o", str(tmp_path / "s"), "--seed", "4", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    from benchsage.execute.bisect.ship import search_id
    from benchsage.report.bisect import plan_lines

    client = f"/tmp/benchsage-bisect/{search_id(str(tmp_path / 's'), 4)}/pair/client"
    assert doc["deploy"] == [{"worker": "pair/server", "host": "ssh s", "dir": "/srv/bench-bisect"},
                             {"worker": "pair/client", "host": "ssh c", "dir": client}]
    assert doc["allocated_once"] is False and doc["keep_dirs"] is False and doc["builds"] == 4
    # Its reset runs on the client host once per run (in bad's copy): what it starts there serves all
    # three commits alike; said in the plan and when the search starts.
    assert doc["shared_reset"] == ["client"]  # the test runs on the first role declared, server
    note = "the reset runs on client once per run, in bad's copy"
    assert note in " ".join(bench(*args, cwd=tmp_path).stdout.split())
    started = bench(*args[:-1], "-o", str(tmp_path / "s2"), "--quiet", cwd=tmp_path)  # its hosts do not exist: it stops
    assert started.returncode != 0 and note in " ".join(started.stderr.split())
    words = bench(*args, "--keep-dirs", cwd=tmp_path)  # no -o, no seed: the search's id is not known yet
    assert words.returncode == 0, words.stderr
    assert "pair/client (ssh c): /tmp/benchsage-bisect/<search>/pair/client" in words.stdout
    assert "pair/server (ssh s): /srv/bench-bisect" in words.stdout and "kept after the search (--keep-dirs)" in words.stdout
    assert not (tmp_path / "s").exists() and not (tmp_path / "results").exists()
    local = bench("bisect", "experiment.toml", "--good", hashes["good"], "--bad", "main", "--plan", cwd=repo)
    assert "nothing is deployed" in local.stdout and "allocated" not in local.stdout
    spec.write_text((repo / "experiment.toml").read_text() + '[[worker]]\nkind = "ssh"\nallocate = "echo h1"\n')
    allocated = bench(*args, "--json", cwd=tmp_path)
    doc = json.loads(allocated.stdout)
    assert doc["allocated_once"] is True and doc["deploy"] == [{"worker": "allocated-1", "host": None,
                                                               "dir": "/tmp/benchsage-bisect/<search>/{worker}"}]
    assert "allocated once for the whole search" in "\n".join(plan_lines(doc))


@SEARCH
def test_report_of_a_search_directory_writes_its_page_and_measures_nothing(searched, tmp_path: Path) -> None:
    repo, hashes, out, doc = searched
    copy = tmp_path / "search"
    shutil.copytree(out, copy, symlinks=True)
    (copy / "bisect.html").unlink()
    shutil.rmtree(copy / "worktrees")  # a report needs the records, not the worktrees: nothing is checked out or built
    done = bench("report", str(copy), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (copy / "bisect.html").read_text()
    assert page == (out / "bisect.html").read_text().replace(str(out), str(copy))
    assert hashes["change"][:12] in page and page.count("<svg") == 1
    assert not (copy / "worktrees").exists()
    done = bench("report", str(copy), "-o", str(tmp_path / "page.html"), cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "page.html").read_text() == page
    # A search that stopped before its answer is not reported, nor continued
    last = doc["bisect"]["probes"][-1]["commit"]
    shutil.rmtree(next((copy / "probes").glob(f"*-{last[:12]}")))
    one_line_error(bench("report", str(copy), cwd=tmp_path), 2, "the search stopped before its answer", f"benchsage resume {copy}")
    assert not list((copy / "probes").glob(f"*-{last[:12]}")) and not (copy / "worktrees").exists()


def test_report_of_an_experiment_still_needs_its_output_file(tmp_path: Path) -> None:
    one_line_error(bench("report", str(tmp_path), cwd=tmp_path), 2, "give -o FILE")


@SEARCH
def test_a_swept_test_is_bisected_by_its_full_name(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    # What is checked is the name, not the search's power: a change that doubles the time is found in a full suite too.
    # 12 runs, not 8: the check's level is 0.015 here (three planned tests), and at 8 runs a single run reversed
    # by a load spike puts the two-sided signed-rank p at 2 * 2/256 = 0.0156, above it (a CI run said "no-change").
    hashes = _make_repo()(str(repo), commits=4, change=2, slowdown=100.0, noise=0.0, work=8.0, runs=12)
    spec = repo / "experiment.toml"
    spec.write_text(spec.read_text().replace('command = "./checksum 8.0 0.0"', 'command = "./checksum {work} 0"')
                    + '\n[[sweep]]\nname = "work"\nlevels = [4, 8]\n')
    done = bench("bisect", "experiment.toml", "--good", hashes["good"], "--bad", "main", "--build", "make", "--test", "checksum[work=8]",
                 "--seed", "1", "-o", str(tmp_path / "s"), "--json", "--quiet", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["bisect"]["first_bad"] == hashes["change"], done.stdout[-4000:]
    batch = tmp_path / "s" / "probes" / "check" / "look-0"
    import sqlite3

    db = sqlite3.connect(f"file:{batch / 'journal.sqlite'}?mode=ro", uri=True)
    assert sorted(n for n, in db.execute("SELECT name FROM tests")) == ["checksum[work=8]@bad", "checksum[work=8]@good"]
    assert {c for c, in db.execute("SELECT command FROM tests")} == {"./checksum 8 0"}
    db.close()
