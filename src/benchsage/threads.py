"""Threads the main thread waits for without going deaf to Ctrl-C.

Linux hands a signal sent to a process to any one of its threads that does not block it, and
CPython runs the Python handler (the one that raises KeyboardInterrupt) in the main thread only,
when it next runs bytecode. A main thread asleep on a lock (Thread.join, Queue.get) wakes for
the signal only when the kernel picked it; when the signal landed in a worker's thread, the
main thread slept on until the wait ended by itself, and `benchsage run` ignored a Ctrl-C for as
long as a stalled connection took. Here the main thread sleeps in select() on a pipe that each
thread writes to as it ends, and that is also the process's signal wakeup fd
(signal.set_wakeup_fd): whichever thread a signal reaches, the main thread wakes up and its
handler runs. Where the main thread waits for one piece of work in another thread (an
analysis's diagnostics, a file's parsers, imports), result_heard wakes it every 50 ms to hear a
signal.
"""

from __future__ import annotations

import os
import select
import signal
import threading
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from typing import Any, Callable, TypeVar

_T = TypeVar("_T")
# How often a main thread waiting in result_heard comes back to hear a signal.
_HEAR_EVERY = 0.05


class Threads:
    """Start threads, then wait for them: `with Threads() as threads: threads.start(f, x);
    threads.wait_all()`. Every thread is a daemon (a bug in one cannot keep the process alive)."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []
        self._ended = 0
        self._lock = threading.Lock()
        self._read, self._write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._old_wakeup: int | None = None
        self._closed = False

    def __enter__(self) -> Threads:
        try:
            self._old_wakeup = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        except ValueError:  # not the main thread: signals are not its to handle
            self._old_wakeup = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._old_wakeup is not None:
            signal.set_wakeup_fd(self._old_wakeup)
        with self._lock:  # a thread still running (after Ctrl-C) no longer writes to the pipe
            self._closed = True
            os.close(self._read)
            os.close(self._write)

    def start(self, target: Callable[..., Any], *args: Any, name: str | None = None) -> threading.Thread:
        def run() -> None:
            try:
                target(*args)
            finally:
                with self._lock:
                    self._ended += 1
                    if not self._closed:
                        self._poke()

        thread = threading.Thread(target=run, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()
        return thread

    def join(self) -> None:
        """Join every thread started (after an interrupt: the ones stopping)."""
        for thread in self._threads:
            thread.join()

    def wait_all(self) -> None:
        """Until every thread started has ended. A signal's handler runs meanwhile, in this
        thread (KeyboardInterrupt from Ctrl-C leaves the wait)."""
        while True:
            with self._lock:
                if self._ended == len(self._threads):
                    break
            select.select([self._read], [], [])
            self._drain()
        self.join()  # each has ended its work: only the thread's own exit is left

    def _poke(self) -> None:
        try:
            os.write(self._write, b"\0")
        except BlockingIOError:  # the pipe is full: already readable
            pass

    def _drain(self) -> None:
        try:
            while os.read(self._read, 4096):
                pass
        except OSError:  # empty: BlockingIOError
            pass


def in_thread(target: Callable[..., _T], *args: Any, name: str) -> Future[_T]:
    """target(*args) in a daemon thread of its own; its result (or exception) in the future, for
    result_heard. The main thread waits on the future, not on the thread: a Thread.join that a
    signal's handler interrupts may mark the thread as ended while it still runs (CPython 3.11's
    _wait_for_tstate_lock releases the thread's own lock when interrupted)."""
    future: Future[_T] = Future()

    def run() -> None:
        try:
            result = target(*args)
        except BaseException as exc:  # noqa: BLE001 - raised again by result_heard
            future.set_exception(exc)
        else:
            future.set_result(result)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def result_heard(future: Future[_T]) -> _T:
    """future.result() that still hears Ctrl-C. Linux hands a signal to any thread of the process,
    and CPython runs its Python handler only in the main thread, when that thread next runs
    bytecode: asleep in a plain result(), the main thread heard a Ctrl-C that landed in another
    thread only when the work it waited for was done (seconds, for an analysis of a large file).
    Here it comes back every 50 ms."""
    while not future.done():
        wait_futures([future], _HEAR_EVERY)
    return future.result()
