"""The batched analysis of a tidy file read block by block (analyze/batched.py, tidy_stream.py)
gives the in-memory analysis's JSON byte for byte, whatever the block and batch sizes; files it
does not handle are analysed in memory, and bad files fail with the in-memory reader's error."""

from __future__ import annotations

import csv
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from benchsage import api
from benchsage.analyze import batched
from benchsage.analyze.diagnostics.one_vs_rest import one_vs_rest
from benchsage.analyze.diagnostics.position import pooled_part
from benchsage.analyze.options import Options
from benchsage.api import analyze_sources, analyze_sources_only
from benchsage.cli import cli, main
from benchsage.design.williams import williams_orders
from benchsage.errors import DataError
from benchsage.store.importers import tidy, tidy_stream
from benchsage.report.json import analysis_json_text

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import generate_paper_dataset as gen  # noqa: E402

OPTIONS = [
    Options(),
    Options(diagnostics=False),
    Options(correction="holm", ci_method="le-boudec", ci_level=0.99, ci_case_rule="algorithm-2", alpha=0.1),
]


def in_memory(path: Path, options: Options = Options()) -> str:
    analysis, _ = analyze_sources([str(path)], format="tidy", options=options)
    return analysis_json_text(analysis)


def in_batches(path: Path, options: Options = Options(), *, block_bytes: int = 2048, batch_rows: int = 400) -> str:
    trials = tidy_stream.stream_tidy(path, block_bytes=block_bytes)
    assert trials is not None, "the file was not read block by block"
    assert batched.can_batch(trials)
    return analysis_json_text(batched.analyze_compact(trials, options, batch_rows=batch_rows))


@pytest.fixture(scope="module")
def paper_like(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The paper's shape in small: suites of tests on two workers, failed trials, order effects."""
    path = tmp_path_factory.mktemp("batched") / "paper-like.csv"
    gen.write(path, 90, 90 * 40, 11)
    return path


@pytest.mark.parametrize("options", OPTIONS, ids=["default", "no-diagnostics", "holm-leboudec-99"])
def test_same_json_as_in_memory(paper_like: Path, options: Options) -> None:
    assert in_batches(paper_like, options) == in_memory(paper_like, options)


def test_block_and_batch_sizes_do_not_matter(paper_like: Path) -> None:
    # Tiny pieces cut runs and trials (and a test's rows) across many blocks; one batch per test,
    # and one batch for everything.
    pieces = sum(1 for _ in tidy_stream._pieces(paper_like, 1024))
    assert pieces > 100
    expected = in_memory(paper_like)
    assert in_batches(paper_like, block_bytes=1024, batch_rows=1) == expected
    assert in_batches(paper_like, block_bytes=1 << 24, batch_rows=10**9) == expected


@pytest.mark.parametrize("busy", [(0.0, float("inf")), (float("inf"), 0.0)], ids=["trends-analysing-thread", "trends-diagnosing-thread"])
def test_either_thread_may_compute_the_trends(paper_like: Path, monkeypatch: pytest.MonkeyPatch, busy: tuple[float, float]) -> None:
    real = batched._Found.__init__

    def init(self: batched._Found, *args: object) -> None:
        real(self, *args)  # type: ignore[arg-type]
        self.busy = list(busy)  # the less busy thread takes each batch's trends: always the same one

    monkeypatch.setattr(batched._Found, "__init__", init)
    assert in_batches(paper_like, batch_rows=300) == in_memory(paper_like)


def test_the_fixture_has_what_the_batches_must_handle(paper_like: Path) -> None:
    trials = tidy_stream.stream_tidy(paper_like, block_bytes=2048)
    assert trials is not None
    assert len(trials.worker_names) >= 2 and trials.excluded > 0
    # Position bins that are not single positions, so the pooled "(all tests)" rows exist.
    assert '"(all tests)"' in in_memory(paper_like)


def write(path: Path, header: list[str], rows: list[list[object]], quote_all: bool = False) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def trials_rows(*, tests: list[str], runs: int, seed: int = 3, metrics: tuple[str, ...] = ("value",), failed: float = 0.02,
                williams: bool = False) -> list[list[object]]:
    """Rows test, order, metric, value, run, position, time, status of an interleaved experiment
    (fixed and random runs alternating), with failed trials (empty value) and ties; the random
    runs shuffled, or rows of randomized Williams squares."""
    rng = np.random.default_rng(seed)
    squares = williams_orders(len(tests), np.random.default_rng(seed + 1))
    rows: list[list[object]] = []
    t = 1_700_000_000.0
    for r in range(2 * runs):
        arm = "fixed" if r % 2 == 0 else "random"
        if arm == "fixed":
            order = list(range(len(tests)))
        else:
            order = list(next(squares)) if williams else list(rng.permutation(len(tests)))
        for pos, k in enumerate(order):
            ok = rng.random() > failed
            for m, metric in enumerate(metrics):
                value = round(float((k + 1) * (m + 1) * rng.lognormal(0, 0.05) * (1.1 if pos == 0 else 1.0)), 3)
                rows.append([tests[k], arm, metric, value if ok else "", f"r{r}", pos, round(t, 3), "ok" if ok else "failed"])
            t += 1.5
    return rows


HEADER = ["test", "order", "metric", "value", "run", "position", "time", "status"]


def test_quoted_fields_and_several_metrics(tmp_path: Path) -> None:
    tests = ["a, with comma", 'say "hi"', "plain", "x;y", "tab\there"]
    rows = trials_rows(tests=tests, runs=20, metrics=("wall_time", "max_rss"))
    path = write(tmp_path / "quoted.csv", HEADER, rows, quote_all=True)
    assert in_batches(path, block_bytes=700, batch_rows=50) == in_memory(path)


@pytest.mark.parametrize("dropped", [("metric",), ("time",), ("status",), ("metric", "time", "status")])
def test_missing_optional_columns(tmp_path: Path, dropped: tuple[str, ...]) -> None:
    rows = trials_rows(tests=[f"t{i}" for i in range(6)], runs=15, failed=0.0 if "status" in dropped else 0.05)
    keep = [i for i, name in enumerate(HEADER) if name not in dropped]
    path = write(tmp_path / "some.csv", [HEADER[i] for i in keep], [[row[i] for i in keep] for row in rows])
    assert in_batches(path, block_bytes=512, batch_rows=100) == in_memory(path)


def test_any_tidy_shape_is_streamed_with_the_in_memory_json(tmp_path: Path) -> None:
    # Every subset of the optional columns, down to the three required ones (a file without a
    # status column holds its ok trials only).
    rows = trials_rows(tests=[f"t{i}" for i in range(6)], runs=10, failed=0.05)
    optional = ["metric", "run", "position", "time", "status"]
    for k in range(len(optional) + 1):
        for kept in itertools.combinations(optional, k):
            keep = [i for i, name in enumerate(HEADER) if name in ("test", "order", "value", *kept)]
            some = rows if "status" in kept else [r for r in rows if r[7] == "ok"]
            path = write(tmp_path / f"{'-'.join(kept) or 'minimal'}.csv", [HEADER[i] for i in keep], [[r[i] for i in keep] for r in some])
            assert in_batches(path, block_bytes=512, batch_rows=90) == in_memory(path), kept


@pytest.mark.parametrize("kept", [(), ("time",), ("position", "status")], ids=["minimal", "time", "position-status"])
def test_a_fleet_without_runs_is_streamed(tmp_path: Path, kept: tuple[str, ...]) -> None:
    # Each worker ran its own tests; rows say their worker but not their run.
    rows = [[*r, "n1" if r[0] in ("t0", "t1") else "n2"] for r in trials_rows(tests=[f"t{i}" for i in range(4)], runs=10, failed=0.05)]
    header = [*HEADER, "worker"]
    keep = [i for i, name in enumerate(header) if name in ("test", "order", "value", "worker", *kept)]
    some = rows if "status" in kept else [r for r in rows if r[7] == "ok"]
    path = write(tmp_path / "fleet.csv", [header[i] for i in keep], [[r[i] for i in keep] for r in some])
    expected = in_memory(path)
    assert json.loads(expected)["combined"]["workers"] == 2
    assert in_batches(path, block_bytes=300, batch_rows=50) == expected


def one_piece(path: Path, options: Options = Options()) -> str:
    """analyze_loaded's JSON of the file's table: the in-memory analysis in one piece."""
    from benchsage.analyze.pipeline import analyze_loaded
    from benchsage.store.importers.detect import load_sources

    return analysis_json_text(analyze_loaded(load_sources([str(path)], format="tidy"), options))


def test_a_large_table_in_memory_is_analysed_in_batches_with_the_same_json(paper_like: Path, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "BATCH_TABLE_ROWS", 0)
    used: list[bool] = []
    real = batched.analyze_compact
    monkeypatch.setattr(batched, "analyze_compact", lambda *a, **k: used.append(True) or real(*a, **k))
    rows = trials_rows(tests=[f"t{i}" for i in range(5)], runs=12)
    files = {
        "paper-like": paper_like,
        # Runs apart and a run label used twice: stream_tidy declines, the table is batched.
        "shuffled": write(tmp_path / "shuffled.csv", HEADER, [rows[i] for i in np.random.default_rng(1).permutation(len(rows))]),
        "reused": write(tmp_path / "reused.csv", HEADER, [[*r[:4], "r0" if r[4] == "r8" else r[4], *r[5:]] for r in rows]),
        "minimal": write(tmp_path / "minimal.csv", ["test", "order", "value"], [[r[0], r[1], r[3]] for r in rows if r[7] == "ok"]),
    }
    for name, path in files.items():
        for options in OPTIONS:
            used.clear()
            assert in_memory(path, options) == one_piece(path, options), name
            assert used == [True], name
    # Tables batches would not give analyze_loaded's result for are analysed in one piece.
    for name, case in {"some positions": [[*r[:5], "" if i == 3 else r[5], *r[6:]] for i, r in enumerate(rows)],
                       "spanning workers": [[*r, "n1" if i % 2 else "n2"] for i, r in enumerate(rows)],
                       "a run of two arms": [[*r[:4], "r0" if r[4] == "r7" else r[4], *r[5:]] for r in rows]}.items():
        path = write(tmp_path / "declined.csv", HEADER + ["worker"] * (name == "spanning workers"), case)
        used.clear()
        assert in_memory(path) == one_piece(path) and used == [], name


@pytest.mark.parametrize("kept", [(), ("status",), ("metric", "position", "time", "status", "worker")], ids=["minimal", "status", "all-but-run"])
def test_a_large_file_without_runs_is_read_block_by_block_into_the_same_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                                 kept: tuple[str, ...]) -> None:
    rows = [[*r, "n1" if r[0] < "t3" else "n2"] for r in trials_rows(tests=[f"t{i}" for i in range(6)], runs=10, failed=0.05)]
    header = [*HEADER, "worker"]
    keep = [i for i, name in enumerate(header) if name in ("test", "order", "value", *kept)]
    some = rows if "status" in kept else [r for r in rows if r[7] == "ok"]
    path = write(tmp_path / "runless.csv", [header[i] for i in keep], [[r[i] for i in keep] for r in some])
    whole = tidy.read_tidy(path)
    monkeypatch.setattr(tidy, "STREAM_READ_BYTES", 0)
    monkeypatch.setattr(tidy_stream, "BLOCK_BYTES", 300)
    used: list[bool] = []
    real = tidy_stream.table_of
    monkeypatch.setattr(tidy_stream, "table_of", lambda *a: used.append(True) or real(*a))
    streamed = tidy.read_tidy(path)
    assert used == [True]
    for name in ("test_names", "metric_names", "worker_names", "excluded", "sources", "warnings", "provenance", "dims"):
        assert getattr(streamed, name) == getattr(whole, name), name
    for name in ("test", "metric", "arm", "value", "run", "position", "predecessor", "worker", "time", "primary", "treatment"):
        a, b = getattr(streamed, name), getattr(whole, name)
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), name
    # A bad cell: read_tidy's own error, from the stream.
    some[len(some) // 2][header.index("value")] = "abc"
    bad = write(tmp_path / "bad.csv", [header[i] for i in keep], [[r[i] for i in keep] for r in some])
    with pytest.raises(DataError) as streamed_error:
        tidy.read_tidy(bad)
    monkeypatch.setattr(tidy, "STREAM_READ_BYTES", 1 << 40)
    with pytest.raises(DataError) as whole_error:
        tidy.read_tidy(bad)
    assert str(streamed_error.value) == str(whole_error.value) and f"line {len(some) // 2 + 2}," in str(whole_error.value)


def test_a_minimal_file_is_held_in_eleven_bytes_a_row(tmp_path: Path) -> None:
    rows = [r for r in trials_rows(tests=[f"t{i}" for i in range(5)], runs=12) if r[7] == "ok"]
    path = write(tmp_path / "minimal.csv", ["test", "order", "value"], [r[:2] + [r[3]] for r in rows])
    trials = tidy_stream.stream_tidy(path, block_bytes=256)
    assert trials is not None and batched.can_batch(trials)
    assert trials.run is None and trials.position is None and trials.predecessor is None and trials.row_time is None
    held = sum(a.nbytes for a in (trials.test, trials.value, trials.row_arm))
    assert len(trials) == len(rows) and held == 11 * len(rows)
    assert [trials.test_names[t] for t in trials.test[:3]] == [r[0] for r in rows[:3]]
    assert np.array_equal(trials.value, [r[3] for r in rows])
    assert np.array_equal(trials.arm(), [r[1] == "random" for r in rows])


@pytest.mark.parametrize("failed", [0.0, 0.03])
def test_carryover_balance_adds_up_over_batches(tmp_path: Path, failed: float) -> None:
    # Complete Williams squares of 6 tests, 3 metrics a trial: balanced without failed trials,
    # not balanced with them; batches of 1-2 tests and pieces that cut trials apart.
    rows = trials_rows(tests=[f"t{i}" for i in range(6)], runs=18, metrics=("a", "b", "c"), williams=True, failed=failed)
    path = write(tmp_path / "williams.csv", HEADER, rows)
    analysis, _ = analyze_sources([str(path)], format="tidy")
    balance = analysis.diagnostics.carryover_balance
    assert balance is not None and balance.balanced is (failed == 0.0) and balance.runs == 18
    if failed == 0.0:
        assert (balance.pair_min, balance.pair_max, balance.position_min, balance.position_max) == (3, 3, 3, 3)
    expected = analysis_json_text(analysis)
    for batch_rows in (1, 120, 10**9):
        assert in_batches(path, block_bytes=700, batch_rows=batch_rows) == expected


@pytest.mark.parametrize("column", ["context", "observer", "context:env_bytes", "factor:opt"])
def test_files_with_treatments_are_analysed_in_memory(tmp_path: Path, column: str) -> None:
    rows = trials_rows(tests=[f"t{i}" for i in range(4)], runs=10)
    path = write(tmp_path / "treated.csv", [*HEADER, column], [[*r, "A" if i % 2 else "B"] for i, r in enumerate(rows)])
    assert tidy_stream.stream_tidy(path, block_bytes=256) is None
    assert api.analyze_tidy_file(str(path)) is None


def test_files_it_does_not_handle_are_analysed_in_memory(tmp_path: Path) -> None:
    rows = trials_rows(tests=[f"t{i}" for i in range(5)], runs=12)
    cases = {
        # A quoted field holding a line break: pieces cut at line ends could cut it.
        "newline": [[f"{r[0]}\nsecond line", *r[1:]] if i % 7 == 0 else r for i, r in enumerate(rows)],
        # A run's rows apart (the file is not in execution order).
        "shuffled": [rows[i] for i in np.random.default_rng(1).permutation(len(rows))],
        # A run label used twice, apart.
        "reused": [[*r[:4], "r0" if r[4] == "r7" else r[4], *r[5:]] for r in rows],
        # A row without a position.
        "no position": [[*r[:5], "" if i == 3 else r[5], *r[6:]] for i, r in enumerate(rows)],
    }
    for name, case in cases.items():
        path = write(tmp_path / f"{name.replace(' ', '-')}.csv", HEADER, case)
        assert tidy_stream.stream_tidy(path, block_bytes=256) is None, name
        expected = in_memory(path)
        assert analysis_json_text(analyze_sources_only([str(path)], format="tidy")) == expected, name


def test_a_test_spanning_workers_is_analysed_in_memory(tmp_path: Path) -> None:
    rows = trials_rows(tests=[f"t{i}" for i in range(4)], runs=16)
    header = [*HEADER, "worker"]
    path = write(tmp_path / "spanning.csv", header, [[*r, "n1" if int(r[4][1:]) < 16 else "n2"] for r in rows])
    trials = tidy_stream.stream_tidy(path, block_bytes=256)
    assert trials is not None and not batched.can_batch(trials)


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """`benchsage analyze` reads every file block by block, in small blocks."""
    monkeypatch.setattr(api, "STREAM_BYTES", 0)
    monkeypatch.setattr(tidy_stream, "BLOCK_BYTES", 300)


@pytest.mark.parametrize(
    "line, cell, column",
    [(40, "abc", "value"), (75, "", "value"), (60, "-1", "position"), (90, "1.5", "position"), (55, "neither", "order"), (30, "soon", "time")],
)
def test_bad_rows_fail_as_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], line: int, cell: str,
                                    column: str) -> None:
    rows = trials_rows(tests=[f"t{i}" for i in range(5)], runs=12, failed=0.0)
    rows[line - 2][HEADER.index(column)] = cell
    path = write(tmp_path / "bad.csv", HEADER, rows)

    def run() -> tuple[object, str, str]:
        with pytest.raises(SystemExit) as exit:
            main(["analyze", str(path), "--format", "tidy", "--json"])
        out, err = capsys.readouterr()
        return exit.value.code, out, err

    expected = run()
    assert expected[0] == 2 and f"line {line}" in expected[2] and len(expected[2].strip().splitlines()) == 1
    monkeypatch.setattr(api, "STREAM_BYTES", 0)
    monkeypatch.setattr(tidy_stream, "BLOCK_BYTES", 300)
    assert run() == expected


@pytest.mark.parametrize("header", [["test", "order", "value"], HEADER], ids=["minimal", "every-column"])
def test_text_in_block_three_fails_as_in_memory_without_reading_into_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                            capsys: pytest.CaptureFixture[str], header: list[str]) -> None:
    rows = [[r[HEADER.index(c)] for c in header] for r in trials_rows(tests=[f"t{i}" for i in range(5)], runs=30, failed=0.0)]
    path = write(tmp_path / "good.csv", header, rows)
    pieces = [bytes(p).count(b"\n") for p in tidy_stream._pieces(path, 300)]
    line = pieces[0] + pieces[1] + 1 + 3  # the header, two pieces, then the third line of the third piece
    rows[line - 2][header.index("value")] = "abc"
    path = write(tmp_path / "bad.csv", header, rows)
    ends = np.cumsum([bytes(p).count(b"\n") for p in tidy_stream._pieces(path, 300)]) + 1
    assert int(np.searchsorted(ends, line)) == 2  # in the third block

    def run() -> tuple[object, str, str]:
        with pytest.raises(SystemExit) as exit:
            main(["analyze", str(path), "--json"])
        out, err = capsys.readouterr()
        return exit.value.code, out, err

    in_memory = run()
    assert in_memory[0] == 2 and in_memory[1] == "" and len(in_memory[2].strip().splitlines()) == 1
    assert f"line {line}, column 'value': 'abc' is not a number" in in_memory[2] and str(path) in in_memory[2]
    monkeypatch.setattr(api, "STREAM_BYTES", 0)
    monkeypatch.setattr(tidy_stream, "BLOCK_BYTES", 300)
    monkeypatch.setattr(api, "analyze_sources", lambda *a, **k: pytest.fail("the file was read into memory"))
    assert run() == in_memory


def test_cli_analyses_a_large_file_in_batches(paper_like: Path, streamed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    used: list[bool] = []
    real = batched.analyze_compact
    monkeypatch.setattr(batched, "analyze_compact", lambda *a, **k: used.append(True) or real(*a, **k))
    got = CliRunner().invoke(cli, ["analyze", str(paper_like), "--format", "tidy", "--json"])
    assert got.exit_code == 0 and used == [True]
    assert got.output.strip() == in_memory(paper_like)


def test_pooled_comparison_does_not_depend_on_row_order() -> None:
    rng = np.random.default_rng(5)
    n = 5000
    percentile = np.round(rng.random(n), 2)  # many ties
    ratio = rng.lognormal(0, 0.1, n)
    metric = rng.integers(0, 2, n)
    b = rng.integers(0, 4, n)
    first, _, _ = pooled_part(percentile, ratio, metric, b, 2, 4, 5)
    shuffled = rng.permutation(n)
    second, _, _ = pooled_part(percentile[shuffled], ratio[shuffled], metric[shuffled].astype(np.int32), b[shuffled].astype(np.int8), 2, 4, 5)
    for field in ("comp", "cat", "n_at", "n_other", "median_at", "median_other", "h", "p"):
        assert np.array_equal(getattr(first, field), getattr(second, field), equal_nan=True), field
    direct = one_vs_rest(percentile, ratio, metric, b, 2, 4, 5)
    assert np.array_equal(direct.h, first.h, equal_nan=True)
