"""The main thread waits for worker threads and still hears Ctrl-C when the kernel handed the
signal to one of them (each case runs in a fresh interpreter: signal handlers and the wakeup
fd belong to a process's main thread)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=60)


# Each script below: a worker thread sends SIGINT to itself once the main thread is asleep in
# `waiting` (its stack says so and /proc says it sleeps), then waits for a release that only the
# interrupted main thread gives. A plain join or result() would sleep on until the script's timeout ran
# out, and print "not interrupted".
HEARD = """
import signal, sys, threading, time
release = threading.Event()
main = threading.main_thread()

def main_asleep_in(waiting):
    frame = sys._current_frames().get(main.ident)
    with open(f"/proc/self/task/{main.native_id}/stat") as stat:
        state = stat.read().rpartition(")")[2].split()[0]
    names = []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return waiting in names and state == "S"

def interrupt_when_asleep_in(waiting):
    while not main_asleep_in(waiting):
        time.sleep(0.001)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    if not release.wait(20):
        print("not interrupted", flush=True)
    return "released"
"""


def test_a_signal_delivered_to_a_worker_thread_interrupts_the_wait() -> None:
    """The worker thread sends SIGINT to itself (as the kernel may send a Ctrl-C to any thread),
    then waits for a release that only the interrupted main thread gives. Waiting with
    Thread.join, the main thread would sleep on and the script would run into its timeout."""
    done = run(HEARD + """
from benchsage.threads import Threads

try:
    with Threads() as threads:
        threads.start(interrupt_when_asleep_in, "wait_all")
        threads.wait_all()
except KeyboardInterrupt:
    release.set()
    threads.join()
    print("interrupted; wakeup fd restored:", signal.set_wakeup_fd(-1) == -1)
""")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted; wakeup fd restored: True"


def test_the_wait_ends_when_every_thread_has_ended_and_the_old_wakeup_fd_is_back() -> None:
    done = run("""
        import os, signal, threading
        from benchsage.threads import Threads
        r, w = os.pipe2(os.O_NONBLOCK)
        signal.set_wakeup_fd(w)
        seen = []
        gate = threading.Barrier(3)

        def worker(n):
            gate.wait()  # all three run at once
            seen.append(n)

        with Threads() as threads:
            for n in range(3):
                threads.start(worker, n)
            threads.wait_all()
            alive = [t for t in threading.enumerate() if t is not threading.main_thread()]
        print(sorted(seen), len(alive), signal.set_wakeup_fd(-1) == w)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0, 1, 2] 0 True"


def test_result_heard_hears_a_signal_delivered_to_the_thread_it_waits_for() -> None:
    done = run(HEARD + """
from benchsage.threads import in_thread, result_heard

future = in_thread(interrupt_when_asleep_in, "result_heard", name="worker")
try:
    result_heard(future)
except KeyboardInterrupt:
    print("interrupted, done:", future.done())
    release.set()
print(result_heard(future))
try:
    result_heard(in_thread(int, "x", name="failing"))
except ValueError as exc:
    print("raised:", exc)
""")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["interrupted, done: False", "released", "raised: invalid literal for int() with base 10: 'x'"]


def test_an_analysis_interrupted_while_its_diagnostics_run_stops_without_waiting_for_them() -> None:
    """The pipeline runs the diagnostics in a second thread: Ctrl-C stops the analysis both
    while the main thread waits for them and while it still computes its own part."""
    done = run(HEARD + """
from benchsage.analyze.pipeline import _side_by_side

try:
    _side_by_side(lambda: "first", lambda: interrupt_when_asleep_in("result_heard"))
except KeyboardInterrupt:
    print("interrupted in the wait")
    release.set()
release.clear()
second_started = threading.Event()

def first():
    second_started.wait()
    raise KeyboardInterrupt

def second():
    second_started.set()
    release.wait(20)

try:
    _side_by_side(first, second)
except KeyboardInterrupt:
    print("interrupted in the first part; the second still runs:", not release.is_set() and
          any(t.name == "benchsage-diagnostics" and t.daemon for t in threading.enumerate()))
    release.set()
""")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["interrupted in the wait", "interrupted in the first part; the second still runs: True"]
