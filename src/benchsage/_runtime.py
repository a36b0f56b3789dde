"""Settings for a short-lived process that analyses one large table and exits (the command line).

Each is measured on the paper-scale benchmark (benchmarks/paper_scale.py, docs/benchmarks.md):
the analysis there is dominated not by arithmetic but by first touches of fresh memory and by
imports, so these tune exactly that. None of them changes a result. A notebook or a long-lived
program should not call them: they trade memory kept until exit for speed.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import Future

from benchsage.threads import in_thread


def retain_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for reuse rather than hand it back at once.

    The analysis allocates and frees hundreds of MiB of temporaries, and each large block that
    malloc returns to the system comes back as fresh pages, one page fault per 4 KiB. With
    large blocks taken from the heap (no mmap below 1 GiB) and the heap never trimmed, the
    paper-scale benchmark took ~30 % fewer page faults and 0.1-0.4 s less system time on two
    vCPUs, for 30-45 MiB more peak memory. The process keeps its peak memory until it exits.
    Returns False (changing nothing) where malloc is not glibc's.
    """
    import ctypes

    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    m_trim_threshold, m_mmap_threshold, m_arena_max = -1, -3, -8  # glibc's malloc.h
    # One arena: the CSV parser's threads would otherwise allocate in arenas of their own,
    # whose freed memory the main thread's arrays cannot reuse.
    return mallopt(m_mmap_threshold, 1 << 30) == 1 and mallopt(m_trim_threshold, (1 << 31) - 1) == 1 and mallopt(m_arena_max, 1) == 1


def no_hugepage_advice() -> bool:
    """Stop numpy from advising transparent huge pages for its large arrays.

    numpy asks the kernel for huge pages (madvise MADV_HUGEPAGE) for every array of 4 MiB or
    more. Where huge pages are scarce (a fragmented or virtualised machine; the kernel's default
    `defrag = madvise` then compacts memory synchronously on the faulting thread) each such
    array's first touch stalls: on the two-vCPU test machine, allocating and filling ten
    18 MiB arrays took 0.40-0.46 s with the advice and 0.07-0.08 s without, and the paper-scale
    analysis was 0.3-0.4 s faster without it. Honours NUMPY_MADVISE_HUGEPAGE when the user set
    it. Returns whether the advice is now off.
    """
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return os.environ["NUMPY_MADVISE_HUGEPAGE"] == "0"
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # numpy < 2
        try:
            from numpy.core.multiarray import _set_madvise_hugepage  # type: ignore[no-redef]
        except ImportError:
            return False
    _set_madvise_hugepage(False)
    return True


def import_in_background(*modules: str) -> Future[None]:
    """Import modules in a background thread, while the calling thread reads data.

    pyarrow parses a CSV file with the GIL released, so the imports the analysis needs next
    (its own modules and scipy.special, 0.2 s) cost next to nothing on the critical path. The
    caller must not import anything itself until the future is done (threads.result_heard),
    unless the modules never import benchsage: two threads importing modules that import each
    other could deadlock. An import that fails here fails again, with its message, where it is
    used.
    """

    def run() -> None:
        import importlib

        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - reported by the real import later
                pass

    return in_thread(run, name="benchsage-import")


def tune_short_lived_process() -> None:
    """All of the above, for `benchsage analyze` and `benchsage report`."""
    retain_freed_memory()
    no_hugepage_advice()
    import_in_background("scipy.special")
