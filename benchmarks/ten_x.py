"""Ten times the paper's dataset: `benchsage analyze` of a 23 M-trial tidy CSV against pyarrow
reading the same file, in one run.

Generates the file if it is missing (generate_paper_dataset.py, 1,880 tests, 23 M trials,
about 1.5 GiB, into benchmarks/data/ or --dir), reads it once into the page cache, then times,
alternating and each in its own child process: `pyarrow.csv.read_csv(FILE)` (the baseline; pyarrow
is only the yardstick here) and `benchsage analyze FILE --format tidy --json`. Each child's peak
memory is its own ru_maxrss, read with wait4 on that child alone. Prints the times, the ratio,
the peaks and PASS/FAIL against the budget: under 1 GiB and within 3x of pyarrow's read.

It also checks that the result is the in-memory analysis's: on --check-file (default: the
paper-scale file, 2.3 M trials) `benchsage analyze` by blocks and batches, the in-memory
path (benchsage.api.analyze_sources) and the table analysed in one piece (analyze_loaded)
must print the same JSON, byte for byte, and the peak of each is printed;
--check-ten-x compares on the 23 M-trial file as well (the one-piece analysis needs ~6 GiB there, ~3 minimal).

--minimal does all this with files of the required columns only, `test,order,value` (failed
trials left out; generate_paper_dataset.py --minimal), analysed as `benchsage analyze FILE --json`
(the format detected, as a user would type it): no runs, no positions, no start times. With
--dir /tmp and --delete, the files this run generated (the 23 M-trial one: 0.7 GiB minimal) are removed when done.

    python benchmarks/ten_x.py [--minimal] [--repeat 1] [--dir DIR] [--delete] [--check-file FILE] [--check-ten-x]

Exit status: 0 when the results are identical (whatever the timings), 1 otherwise.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate_paper_dataset as gen  # noqa: E402
from paper_scale import Measurement, benchsage_command, machine, measure  # noqa: E402

TRIALS = 10 * gen.DEFAULT_TRIALS
MEMORY_BUDGET_MIB = 1024.0
RATIO_BUDGET = 3.0

PYARROW_READ = "import sys, pyarrow.csv as c; t = c.read_csv(sys.argv[1]); print(t.num_rows)"

# The JSON of each path in one child per path: the batched one as `benchsage analyze` runs it,
# the in-memory one as analyze_sources does for any file (its table analysed in batches of tests
# from a million rows on), and the reference, the table analysed in one piece (analyze_loaded).
IN_MEMORY = (
    "import sys; from benchsage.api import analyze_sources; from benchsage.report.json import analysis_json_text; "
    "a, _ = analyze_sources([sys.argv[1]], format='tidy'); sys.stdout.write(analysis_json_text(a))"
)
ONE_PIECE = (
    "import sys; from benchsage.store.importers.detect import load_sources; from benchsage.analyze.pipeline import analyze_loaded; "
    "from benchsage.report.json import analysis_json_text; "
    "sys.stdout.write(analysis_json_text(analyze_loaded(load_sources([sys.argv[1]], format='tidy'))))"
)
BATCHED = (
    "import sys; from benchsage.api import analyze_tidy_file; from benchsage.report.json import analysis_json_text; "
    "a = analyze_tidy_file(sys.argv[1]); "
    "sys.stdout.write('DECLINED' if a is None else analysis_json_text(a))"
)


def data_lines(path: Path) -> int:
    """The rows of a CSV file (its lines after the header; no line breaks in fields here)."""
    with open(path, "rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 24), b"")) - 1


def same_result(path: Path, workdir: str) -> tuple[bool, str]:
    """Whether the batched, the in-memory and the one-piece analysis of `path` print the same JSON."""
    batched = measure([sys.executable, "-c", BATCHED, str(path)], workdir)
    in_memory = measure([sys.executable, "-c", IN_MEMORY, str(path)], workdir)
    one_piece = measure([sys.executable, "-c", ONE_PIECE, str(path)], workdir)
    if batched.stdout == "DECLINED":
        return False, f"{path.name}: the batched analysis declined the file (batched.can_batch, tidy_stream.stream_tidy): `benchsage analyze` reads it in memory"
    same = batched.stdout == in_memory.stdout == one_piece.stdout
    rows = data_lines(path)
    per_row = 2**20 / max(rows, 1)
    peaks = ", ".join(f"{name} {m.peak_mib:.0f} MiB ({m.peak_mib * per_row:.0f} bytes a row)"
                      for name, m in (("batched", batched), ("in memory", in_memory), ("one piece", one_piece)))
    return same, (f"{path.name}: JSON of the batched, in-memory and one-piece analyses {'identical' if same else 'DIFFER'} "
                  f"({len(batched.stdout):,} bytes; {rows:,} rows); peaks: {peaks}")


def print_times(base: list[Measurement], ours: list[Measurement], repeat: int, command: str) -> None:
    base_time = statistics.median(m.seconds for m in base)
    ours_time = statistics.median(m.seconds for m in ours)
    print(f"{'command':44s} {'seconds':>9s} {'ratio':>7s} {'peak MiB':>9s}")
    print(f"{'pyarrow.csv.read_csv(FILE)':44s} {base_time:9.2f} {'1.0x':>7s} {max(m.peak_mib for m in base):9.0f}")
    print(f"{command:44s} {ours_time:9.2f} {ours_time / base_time:6.2f}x {max(m.peak_mib for m in ours):9.0f}", flush=True)
    if repeat > 1:
        print(f"(median of {repeat} alternating repetitions; peak = the largest of them)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="where the 23 M-trial file is generated (default benchmarks/data/)")
    parser.add_argument("--file", type=Path, default=None, help="time this tidy CSV instead of the generated one")
    parser.add_argument("--repeat", type=int, default=1, help="measure each command this many times, alternating (median reported)")
    parser.add_argument("--check-file", type=Path, default=None, help="compare the batched and in-memory JSON on this file (default: the paper-scale file)")
    parser.add_argument("--check-ten-x", action="store_true", help="also compare on the 23 M-trial file (needs ~6 GiB)")
    parser.add_argument("--minimal", action="store_true", help="files of the columns test, order, value only")
    parser.add_argument("--delete", action="store_true", help="delete the files this run generated when done")
    args = parser.parse_args()
    minimal = args.minimal

    path = args.file or gen.default_path(gen.DEFAULT_TESTS, TRIALS, gen.DEFAULT_SEED, minimal=minimal)
    if args.dir is not None and args.file is None:
        path = args.dir / path.name
    check = args.check_file or gen.default_path(minimal=minimal)
    if args.dir is not None and args.check_file is None:
        check = args.dir / check.name
    generated = []
    for file, trials in ((path, TRIALS), (check, gen.DEFAULT_TRIALS)):
        if not file.exists():
            print(f"generating {file} ...", flush=True)
            # In a child of its own: a child's ru_maxrss starts at its parent's peak (the exec
            # records the forked memory's high-water mark), and generating 23 M trials takes 3 GiB.
            subprocess.run([sys.executable, str(HERE / "generate_paper_dataset.py"), "--trials", str(trials), "-o", str(file),
                            *(["--minimal"] if minimal else [])], check=True, stdout=subprocess.DEVNULL)
            generated += [file, file.with_name(file.name + ".truth.json")]
    try:
        return run(args, path, check)
    finally:
        for file in generated if args.delete else []:
            file.unlink(missing_ok=True)


def run(args: argparse.Namespace, path: Path, check: Path) -> int:
    """Time and compare (main's work once the files exist)."""
    with open(path, "rb") as fh:  # both children then read the file from the page cache
        while fh.read(1 << 24):
            pass

    print(f"file: {path} ({path.stat().st_size / 2**20:.0f} MiB)")
    print(f"machine: {machine()}")
    base_cmd = [sys.executable, "-c", PYARROW_READ, str(path)]
    ours_cmd = [*benchsage_command(), "analyze", str(path), *([] if args.minimal else ["--format", "tidy"]), "--json"]
    base: list[Measurement] = []
    ours: list[Measurement] = []
    with tempfile.TemporaryDirectory() as workdir:
        for i in range(max(1, args.repeat)):
            pair = [(base, base_cmd), (ours, ours_cmd)]
            for results, cmd in pair if i % 2 == 0 else reversed(pair):
                results.append(measure(cmd, workdir))
        print_times(base, ours, args.repeat, f"benchsage analyze FILE{'' if args.minimal else ' --format tidy'} --json")
        checks = [same_result(check, workdir)]
        if args.check_ten_x:
            checks.append(same_result(path, workdir))

    base_time = statistics.median(m.seconds for m in base)
    ours_time = statistics.median(m.seconds for m in ours)
    ours_peak = max(m.peak_mib for m in ours)
    ratio = ours_time / base_time
    identical = all(same for same, _ in checks)
    for _, line in checks:
        print(line)
    ok = identical and ours_peak <= MEMORY_BUDGET_MIB and ratio <= RATIO_BUDGET
    print(f"peak {ours_peak:.0f} MiB (budget <= {MEMORY_BUDGET_MIB:.0f}); {ratio:.2f}x pyarrow's read (budget <= {RATIO_BUDGET:.0f}x); "
          f"results {'identical' if identical else 'DIFFER'}: {'PASS' if ok else 'FAIL'}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
