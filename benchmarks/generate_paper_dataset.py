"""Write a tidy CSV shaped like the paper's long-term dataset: 1,880 tests, about 2.3 M trials.

The tests come in suites (4-16 tests each, like one benchmark repository on one worker); every
suite runs R fixed-order and R random-order runs, interleaved in pairs (paper Algorithm 1), with
run, position, worker and time columns. Values are lognormal with per-test scales spanning six
orders of magnitude; some tests report coarse values (ties), a few trials fail, and a fraction
of suites carry injected order effects (a warm-up penalty at position 0, a carry-over pair).

    python benchmarks/generate_paper_dataset.py [--tests 1880] [--trials 2300000] [--seed 2023] [--minimal] [-o FILE]

--minimal writes only the columns a tidy file needs, test, order and value, and leaves the
failed trials out (without a status column an empty value is an error). The same arguments
always give the same file. Next to it, FILE.truth.json says which order effects were injected where.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

HERE = Path(__file__).resolve().parent
DEFAULT_TESTS = 1880
DEFAULT_TRIALS = 2_300_000
DEFAULT_SEED = 2023
EPOCH = 1_650_000_000.0  # spring 2022, when long-term studies like the paper's were running

SUITE_SIZES = (4, 16)  # tests per suite, inclusive
WARMUP_SUITES = 0.25  # share of suites whose first trial after the reset is slower
CARRYOVER_SUITES = 0.30  # share of suites with one carry-over pair
ADJACENT_PAIRS = 0.5  # of those: the pair is adjacent in the fixed order (the fixed arm always sees it)
COARSE_TESTS = 0.10  # tests that report values at a coarse resolution (many ties)
FAILED_TRIALS = 0.0005
OUTLIER_TRIALS = 0.005  # OS jitter: a trial slowed by an exponential amount


MINIMAL = ("test", "order", "value")  # the required columns of a tidy file


def default_path(tests: int = DEFAULT_TESTS, trials: int = DEFAULT_TRIALS, seed: int = DEFAULT_SEED, *, minimal: bool = False) -> Path:
    return HERE / "data" / f"paper-{tests}x{trials}-s{seed}{'-minimal' if minimal else ''}.csv"


@dataclass(frozen=True)
class Injected:
    """One injected order effect, for the truth file."""

    suite: int
    kind: str  # "warmup" (position 0 is slower) or "carryover" (test after `after` is slower)
    effect_pct: float
    test: str | None  # the affected test (None for warmup: whatever runs first)
    after: str | None = None
    fixed_affected: str | None = None  # the test whose fixed-arm sample is shifted, if any


def suite_sizes(tests: int, rng: np.random.Generator) -> list[int]:
    """Split `tests` into suites of SUITE_SIZES[0]..SUITE_SIZES[1] tests (the last may be smaller)."""
    sizes: list[int] = []
    left = tests
    while left > 0:
        k = int(rng.integers(SUITE_SIZES[0], SUITE_SIZES[1] + 1))
        if left - k < SUITE_SIZES[0]:
            k = left if left <= SUITE_SIZES[1] else left - SUITE_SIZES[0]
        sizes.append(k)
        left -= k
    return sizes


def generate(tests: int, trials: int, seed: int) -> tuple[pa.Table, list[Injected]]:
    """The dataset as an arrow table (rows in time order per worker) and the injected effects."""
    rng = np.random.default_rng(seed)
    runs = max(6, round(trials / (2 * tests)))  # runs per arm
    sizes = suite_sizes(tests, rng)
    n_workers = max(1, len(sizes) // 4)

    # Per-test properties: median spanning 1 ms .. 1000 s, CV 1-8 %, nominal duration.
    scale = 10.0 ** rng.uniform(-3, 3, tests)
    cv = rng.uniform(0.01, 0.08, tests)
    sigma = np.sqrt(np.log1p(cv * cv))
    coarse = rng.random(tests) < COARSE_TESTS
    resolution = np.where(coarse, scale * cv / 4.0, 0.0)  # about 25 distinct values over +-3 sigma

    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("test", "arm", "run", "position", "worker", "factor")}
    injected: list[Injected] = []
    first_test = 0
    run_base = 0
    for s, k in enumerate(sizes):
        # Run pairs in time order; in each pair a coin says whether the fixed run goes first.
        fixed_first = rng.random(runs) < 0.5
        arm = np.stack([~fixed_first, fixed_first], axis=1).astype(np.int8).ravel()  # 0 fixed, 1 random
        orders = np.tile(np.arange(k), (2 * runs, 1))
        shuffled = rng.permuted(orders[arm == 1], axis=1)
        orders[arm == 1] = shuffled
        n_runs = 2 * runs
        test_local = orders.ravel()
        position = np.tile(np.arange(k), n_runs)
        factor = np.ones(n_runs * k)

        if rng.random() < WARMUP_SUITES:
            pct = float(rng.uniform(2, 20))
            factor[position == 0] *= 1 + pct / 100
            injected.append(Injected(s, "warmup", pct, None, None, _name(s, 0)))
        if k >= 3 and rng.random() < CARRYOVER_SUITES:
            pct = float(rng.choice([-1, 1]) * rng.uniform(1, 10))
            if rng.random() < ADJACENT_PAIRS:
                a = int(rng.integers(0, k - 1))
                b = a + 1
            else:
                a, b = (int(x) for x in rng.choice(k, 2, replace=False))
            prev = np.concatenate([[-1], test_local[:-1]])
            prev[position == 0] = -1
            factor[(test_local == b) & (prev == a)] *= 1 + pct / 100
            injected.append(Injected(s, "carryover", pct, _name(s, b), _name(s, a), _name(s, b) if b == a + 1 else None))

        cols["test"].append(first_test + test_local)
        cols["arm"].append(np.repeat(arm, k))
        cols["run"].append(run_base + np.repeat(np.arange(n_runs), k))
        cols["position"].append(position)
        cols["worker"].append(np.full(n_runs * k, s % n_workers))
        cols["factor"].append(factor)
        first_test += k
        run_base += n_runs

    test = np.concatenate(cols["test"]).astype(np.int32)
    arm = np.concatenate(cols["arm"])
    run = np.concatenate(cols["run"])
    position = np.concatenate(cols["position"]).astype(np.int32)
    worker = np.concatenate(cols["worker"]).astype(np.int32)
    factor = np.concatenate(cols["factor"])
    n = len(test)

    value = scale[test] * np.exp(sigma[test] * rng.standard_normal(n) - sigma[test] ** 2 / 2) * factor
    jitter = rng.random(n) < OUTLIER_TRIALS
    value[jitter] *= 1 + rng.exponential(0.3, int(jitter.sum()))
    res = resolution[test]
    value = np.where(res > 0, np.maximum(np.round(value / np.where(res > 0, res, 1.0)), 1.0) * res, value)
    value = _significant_digits(value, 6)
    failed = rng.random(n) < FAILED_TRIALS

    # Wall-clock start: each worker runs its suites one after the other; a trial lasts about
    # its test's nominal duration, a run starts after a reset of 2-5 s.
    duration = np.minimum(scale[test], 120.0) + 0.05
    duration = duration + np.where(position == 0, rng.uniform(2, 5, n), 0.0)
    order = np.argsort(worker, kind="stable")  # stable: each worker's rows stay in time order
    d = duration[order]
    cum = np.cumsum(d)
    first = np.searchsorted(worker[order], np.arange(n_workers))
    before = np.where(first > 0, cum[np.maximum(first - 1, 0)], 0.0)  # time used by earlier workers' rows
    elapsed = np.empty(n)
    elapsed[order] = cum - d - before[worker[order]]
    start = np.round(EPOCH + worker * 0.731 + elapsed, 3)

    test_names = [_name(s, j) for s, k in enumerate(sizes) for j in range(k)]
    table = pa.table(
        {
            "test": pa.DictionaryArray.from_arrays(pa.array(test), pa.array(test_names)),
            "order": pa.DictionaryArray.from_arrays(pa.array(arm.astype(np.int32)), pa.array(["fixed", "random"])),
            "value": pa.array(value, mask=failed),
            "run": pa.array(run),
            "position": pa.array(position),
            "worker": pa.DictionaryArray.from_arrays(pa.array(worker), pa.array([f"node{w:03d}" for w in range(n_workers)])),
            "time": pa.array(start),
            "status": pa.DictionaryArray.from_arrays(pa.array(failed.astype(np.int32)), pa.array(["ok", "failed"])),
        }
    )
    return table, injected


def _name(suite: int, index: int) -> str:
    return f"suite{suite:03d}/bench{index:02d}"


def _significant_digits(x: np.ndarray, digits: int) -> np.ndarray:
    """Round to `digits` significant digits, as a benchmark printing %.6g would."""
    mag = np.floor(np.log10(np.abs(x)))
    factor = 10.0 ** (digits - 1 - mag)
    return np.round(x * factor) / factor


def write(path: Path, tests: int, trials: int, seed: int, *, minimal: bool = False) -> tuple[int, list[Injected]]:
    table, injected = generate(tests, trials, seed)
    if minimal:  # the ok trials' test, order and value
        table = table.filter(pa.array(table.column("status").combine_chunks().indices.to_numpy(zero_copy_only=False) == 0)).select(list(MINIMAL))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    # Dictionary columns are written as their text; cast first for older pyarrow versions.
    plain = table.cast(pa.schema([pa.field(f.name, pa.string() if pa.types.is_dictionary(f.type) else f.type) for f in table.schema]))
    pacsv.write_csv(plain, tmp, pacsv.WriteOptions(quoting_style="none"))
    tmp.replace(path)  # a half-written file never passes for a dataset
    truth = {"tests": tests, "trials": table.num_rows, "seed": seed, "injected": [asdict(i) for i in injected]}
    path.with_name(path.name + ".truth.json").write_text(json.dumps(truth, indent=1))
    return table.num_rows, injected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=DEFAULT_TESTS, help="number of tests (default %(default)s)")
    parser.add_argument("--trials", type=int, default=DEFAULT_TRIALS, help="approximate number of trials (default %(default)s)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--minimal", action="store_true", help="only the columns test, order, value (failed trials left out)")
    parser.add_argument("-o", "--output", type=Path, default=None, help="CSV to write (default benchmarks/data/paper-...csv)")
    args = parser.parse_args()
    if args.tests < 1 or args.trials < 12 * args.tests:
        parser.error("need at least 1 test and 12 trials per test (6 runs per arm)")
    path = args.output or default_path(args.tests, args.trials, args.seed, minimal=args.minimal)
    t0 = time.perf_counter()
    rows, injected = write(path, args.tests, args.trials, args.seed, minimal=args.minimal)
    size = path.stat().st_size / 2**20
    kinds = {k: sum(i.kind == k for i in injected) for k in ("warmup", "carryover")}
    print(f"wrote {rows:,} trials of {args.tests:,} tests to {path} ({size:.0f} MiB) in {time.perf_counter() - t0:.1f} s; "
          f"injected {kinds['warmup']} warm-up and {kinds['carryover']} carry-over effects")


if __name__ == "__main__":
    main()
