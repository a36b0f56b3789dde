"""Where the time of `benchsage analyze FILE --format tidy --json` goes, phase by phase, in one process.

    python benchmarks/phases.py [FILE] [--no-diagnostics] [--repeat 3] [--path auto|memory|batched]

Each repetition runs in a fresh child process (imports and first-touch page faults included,
as in a real command; malloc and numpy tuned as the command line tunes them) and reports, for
each phase, its wall seconds and the CPU seconds of all the process's threads in it.

The command line reads a tidy file of api.STREAM_BYTES or more block by block and
analyses it in batches (--path auto picks the path the command line takes). Phases of the
batched path: imports (those reading needs), load (tidy_stream.stream_tidy: parse the CSV into
compact columns, while the analysis's modules are imported in a second thread), imports after
(what of those is left once the file is read), analysis (batched.analyze_compact: order analysis and diagnostics, batch by batch), JSON
(report.json.analysis_json_text, compact, as --json prints when piped). Phases of the in-memory
path: imports, load (parse the CSV into a TrialTable), the shared sort of the values, the order
analysis, the diagnostics, report.json.analysis_json, json.dumps. Then the child's peak RSS, its system
time and minor page faults. Prints the median of each phase over the repetitions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = HERE / "data" / "paper-1880x2300000-s2023.csv"

PROLOGUE = r"""
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
marks = {}
def mark(name):
    global t0, c0
    now, cpu = time.perf_counter(), time.process_time()
    marks[name] = (now - t0, cpu - c0)
    t0, c0 = now, cpu
try:
    from benchsage._runtime import tune_short_lived_process
    tune_short_lived_process()
except ImportError:  # versions before it (to compare with PYTHONPATH=old/src)
    pass
try:
    from benchsage.report.json import analysis_json, analysis_json_text
except ImportError:  # versions whose Analysis encoded its own JSON
    analysis_json, analysis_json_text = (lambda a: a.to_json()), (lambda a: a.to_json_text())
"""

EPILOGUE = r"""
marks["total"] = tuple(sum(m[i] for m in marks.values()) for i in range(2))
use = resource.getrusage(resource.RUSAGE_SELF)
marks.update({"peak MiB": use.ru_maxrss / 1024, "system s": use.ru_stime, "minor faults": use.ru_minflt, "JSON MiB": len(text) / 2**20})
print(json.dumps(marks))
"""

IN_MEMORY = PROLOGUE + r"""
import dataclasses
from benchsage.analyze.diagnostics import diagnose
from benchsage.analyze.order import analyze_table
from benchsage.store.importers.detect import load_sources
try:
    from benchsage.analyze.sorted_values import sort_values
except ImportError:
    try:
        from benchsage.analyze.order import sort_values
    except ImportError:  # versions before the shared sort
        sort_values = None
mark("imports")
table = load_sources([sys.argv[1]], format="tidy"); mark("load")
shared = {}
if sort_values is not None:
    shared = {"sorted_values": sort_values(table)}; mark("sort values")
analysis = analyze_table(table, **shared); mark("order analysis")
if sys.argv[2] == "1":
    analysis = dataclasses.replace(analysis, diagnostics=diagnose(table, **shared)); mark("diagnostics")
doc = analysis_json(analysis); mark("to_json")
text = json.dumps(doc, allow_nan=False, separators=(",", ":")); mark("json.dumps")
""" + EPILOGUE

BATCHED = PROLOGUE + r"""
from benchsage.analyze.options import Options
from benchsage.store.importers.tidy_stream import stream_tidy
try:
    from benchsage._runtime import import_in_background
except ImportError:  # versions that imported the analysis before reading
    import_in_background = None
    import benchsage.analyze.batched
mark("imports")
if import_in_background is not None:  # as api.analyze_tidy_file: the analysis imports while the file is read
    importing = import_in_background("benchsage.analyze.batched")
trials = stream_tidy(sys.argv[1])
if import_in_background is not None:
    (importing.result if hasattr(importing, "result") else importing.join)()  # a future now, a thread before
mark("load")
from benchsage.analyze.batched import analyze_compact, can_batch
mark("imports after")
if trials is None or not can_batch(trials):
    sys.exit("the batched path declines this file: time it with --path memory")
analysis = analyze_compact(trials, Options(diagnostics=sys.argv[2] == "1")); mark("analysis")
del trials
text = analysis_json_text(analysis); mark("to_json_text")
""" + EPILOGUE


def child_for(path: str, choice: str) -> str:
    """The child script of the path `benchsage analyze` takes for this file (or the one chosen)."""
    if choice == "auto":
        from benchsage.api import STREAM_BYTES

        choice = "batched" if Path(path).stat().st_size >= STREAM_BYTES else "memory"
    return BATCHED if choice == "batched" else IN_MEMORY


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(DEFAULT))
    parser.add_argument("--no-diagnostics", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--path", choices=("auto", "memory", "batched"), default="auto",
                        help="the analysis path to time (auto: the one `benchsage analyze` takes for this file)")
    args = parser.parse_args()
    if not Path(args.file).exists():
        print(f"{args.file}: not found (generate it with generate_paper_dataset.py or paper_scale.py)", file=sys.stderr)
        return 2
    Path(args.file).read_bytes()  # into the page cache, as paper_scale.py does
    child = child_for(args.file, args.path)
    print(f"path: {'batched' if child is BATCHED else 'in memory'}; seconds as wall / CPU of all threads")
    runs = []
    for _ in range(args.repeat):
        out = subprocess.run([sys.executable, "-c", child, args.file, "0" if args.no_diagnostics else "1"], capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr.strip(), file=sys.stderr)
            return 1
        runs.append(json.loads(out.stdout))
    for name in runs[0]:  # phases, then totals
        values = [r[name] for r in runs]
        if isinstance(values[0], list):
            wall, cpu = (statistics.median(v[i] for v in values) for i in range(2))
            print(f"{name:16s} {wall:8.3f} / {cpu:6.3f}   (wall min {min(v[0] for v in values):.3f}, max {max(v[0] for v in values):.3f})")
        else:
            print(f"{name:16s} {statistics.median(values):10.3f}   (min {min(values):.3f}, max {max(values):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
