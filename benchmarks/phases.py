"""Where the time of `benchsage analyze FILE --format tidy --json` goes, phase by phase, in one process.

    python benchmarks/phases.py [FILE] [--no-diagnostics] [--repeat 3]

Each repetition runs in a fresh child process (imports and first-touch page faults included,
as in a real command) and reports wall seconds of: imports, load (parse the CSV into a
TrialTable), the shared sort of the values, the order analysis, the diagnostics,
Analysis.to_json, json.dumps (compact, as --json prints when piped); the child's peak RSS, its
system time and minor page faults. Prints the median of each phase over the repetitions.
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

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import dataclasses
from benchsage.analyze.diagnostics import diagnose
from benchsage.analyze.order import analyze_table
from benchsage.store.importers.detect import load_sources
try:
    from benchsage.analyze.order import sort_values
except ImportError:  # versions before the shared sort (to compare with PYTHONPATH=old/src)
    sort_values = None
marks = {"imports": time.perf_counter() - t0}
def mark(name, since):
    now = time.perf_counter(); marks[name] = now - since; return now
t = time.perf_counter()
table = load_sources([sys.argv[1]], format="tidy"); t = mark("load", t)
shared = {}
if sort_values is not None:
    shared = {"sorted_values": sort_values(table)}; t = mark("sort values", t)
analysis = analyze_table(table, **shared); t = mark("order analysis", t)
if sys.argv[2] == "1":
    analysis = dataclasses.replace(analysis, diagnostics=diagnose(table, **shared))
    t = mark("diagnostics", t)
doc = analysis.to_json(); t = mark("to_json", t)
text = json.dumps(doc, allow_nan=False, separators=(",", ":")); t = mark("json.dumps", t)
marks["total"] = time.perf_counter() - t0
use = resource.getrusage(resource.RUSAGE_SELF)
marks.update({"peak MiB": use.ru_maxrss / 1024, "system s": use.ru_stime, "minor faults": use.ru_minflt, "JSON MiB": len(text) / 2**20})
print(json.dumps(marks))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(DEFAULT))
    parser.add_argument("--no-diagnostics", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not Path(args.file).exists():
        print(f"{args.file}: not found (generate it with generate_paper_dataset.py or paper_scale.py)", file=sys.stderr)
        return 2
    Path(args.file).read_bytes()  # into the page cache, as paper_scale.py does
    runs = []
    for _ in range(args.repeat):
        out = subprocess.run([sys.executable, "-c", CHILD, args.file, "0" if args.no_diagnostics else "1"], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    for name in runs[0]:  # phases, then totals
        values = [r[name] for r in runs]
        print(f"{name:16s} {statistics.median(values):10.3f}   (min {min(values):.3f}, max {max(values):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
