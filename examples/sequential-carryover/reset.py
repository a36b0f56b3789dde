"""The reset before every run: the corpus out of the page cache, the work folder as new.

The corpus (8 MiB of random bytes in data/) is written once and flushed to disk; from then on
each reset drops its pages from the page cache (posix_fadvise DONTNEED: no root needed), so a
run starts with a cold corpus. work/ gets an empty file under each name the steps hand on, so
every step does the same work whatever ran before it: only what it hands on differs.
"""

import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "data", "corpus.bin")
WORK = os.path.join(HERE, "work")
SIZE = 8 << 20


def write_corpus() -> None:
    os.makedirs(os.path.dirname(CORPUS), exist_ok=True)
    with open(CORPUS + ".tmp", "wb") as fh:
        for _ in range(SIZE >> 20):
            fh.write(os.urandom(1 << 20))
        fh.flush()
        os.fsync(fh.fileno())  # clean pages: DONTNEED drops only pages already on disk
    os.replace(CORPUS + ".tmp", CORPUS)


def main() -> None:
    if not os.path.exists(CORPUS) or os.path.getsize(CORPUS) != SIZE:
        write_corpus()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    for name in ("download.bin", "unpacked.bin", "index.bin"):
        open(os.path.join(WORK, name), "wb").close()
    fd = os.open(CORPUS, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


if __name__ == "__main__":
    main()
