"""What checking an agent's result costs the controller between two trials, against reading it
unchecked as before (execute/replies.py), measured in the same run.

A real local agent runs `/bin/true` as a trial and a trial that fills both output tails
(`output_limit` 1 MiB); each result is then read, many times over, by the controller's reader
(read_result: types, sizes, base64 decoded strictly, into a ProcessResult) and by the reading
it replaced (defaults put back, base64 decoded, fields cast: below, as it was), alternating.
The JSON parse of the line, done either way, is printed beside. CPU time of this thread, best
of the repetitions, so that other work on the machine does not count. Budget: the checks add
under 10 us to a trial (2% of the 0.5 ms gap between trials).

    python benchmarks/reply_checks.py [--repeat 9]
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import tempfile
import time
from typing import Any, Callable, Mapping

from benchsage.agent.protocol import RESULT_DEFAULTS
from benchsage.execute.local import LocalWorker
from benchsage.execute.replies import read_result
from benchsage.execute.worker import ProcessResult
from benchsage.vocabulary import DEFAULT_OUTPUT_LIMIT

BUDGET_US = 10.0
FULL = "python3 -c \"import sys; sys.stdout.write('o' * (2 << 20)); sys.stderr.write('e' * (2 << 20))\""


def unchecked(reply: Mapping[str, Any]) -> ProcessResult:
    """The result as the controller read it before the checks (execute/connection.py
    decode_result and agentworker.py run)."""
    r = {**RESULT_DEFAULTS, **reply["result"]}
    for key in ("stdout", "stderr"):
        r[key] = base64.b64decode(r[key]) if r[key] else b""
    files = r["files"]
    r["files"] = {k: (None if v is None else base64.b64decode(v)) for k, v in files.items()} if files else {}

    def optional(value: Any, kind: Any) -> Any:
        return None if value is None else kind(value)

    return ProcessResult(
        exit_status=r["exit_status"], timed_out=bool(r["timed_out"]), wall_time=float(r["wall_time"]),
        user_time=float(r["user_time"]), sys_time=float(r["sys_time"]), max_rss=int(r["max_rss"]), started=float(r["started"]),
        ended=float(r["ended"]), stdout=r["stdout"], stderr=r["stderr"], stdout_dropped=int(r["stdout_dropped"]),
        stderr_dropped=int(r["stderr_dropped"]), files=r["files"], error=r["error"], spawn=str(r.get("spawn") or ""),
        peak_memory=optional(r.get("peak_memory"), int), cpu_time=optional(r.get("cpu_time"), float),
        energy=optional(r.get("energy"), float), leftovers=optional(r.get("leftovers"), int),
        oom_kills=int(r.get("oom_kills") or 0), note=r.get("note"))


def cpu_us(action: Callable[[], Any], n: int) -> float:
    start = time.thread_time()
    for _ in range(n):
        action()
    return (time.thread_time() - start) / n * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="alternating repetitions (the best of each is kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, LocalWorker() as worker:
        worker.connect()
        conn = worker._conn
        assert conn is not None
        replies = {name: conn.request({"op": "run", "command": command, "cwd": folder, "env": {}, "timeout": 30,
                                       "output_limit": DEFAULT_OUTPUT_LIMIT, "collect": [], "cpus": None, "trial": True})
                   for name, command in (("/bin/true", "/bin/true"), ("full tails", FULL))}
    worst = 0.0
    for name, reply in replies.items():
        line = json.dumps(reply).encode()
        assert unchecked(reply) == read_result(reply, DEFAULT_OUTPUT_LIMIT)
        n = 20000 if name == "/bin/true" else 20
        best = {"parse": float("inf"), "before": float("inf"), "checked": float("inf")}
        for _ in range(args.repeat):
            best["parse"] = min(best["parse"], cpu_us(lambda: json.loads(line), n))
            best["before"] = min(best["before"], cpu_us(lambda: unchecked(reply), n))
            best["checked"] = min(best["checked"], cpu_us(lambda: read_result(reply, DEFAULT_OUTPUT_LIMIT), n))
        added = best["checked"] - best["before"]
        worst = max(worst, added)
        print(f"{name:10} ({len(line):>9,} bytes): parse {best['parse']:9.2f} us, read unchecked {best['before']:9.2f} us, "
              f"checked {best['checked']:9.2f} us; ratio {best['checked'] / best['before']:.2f}, added {added:+.2f} us")
    print(f"added by the checks: {worst:+.2f} us per trial at most (budget {BUDGET_US:g} us)")
    print("PASS" if worst < BUDGET_US else "OVER BUDGET")
    return 0 if worst < BUDGET_US else 1


if __name__ == "__main__":
    sys.exit(main())
