"""The query step: one 4 KiB lookup at every page of the index, in a scattered order.

It reads work/index.bin when the steps before it built one in this run (download wrote it, so
its pages are in the page cache; the reset leaves an empty one) and otherwise data/corpus.bin,
the same size, which the reset dropped from the page cache: then every lookup is a disk read.
"""

import os

PAGE = 4096
STRIDE = 1031  # a prime: k * STRIDE mod pages visits every page once, never two neighbours in a row


def main() -> None:
    path = "work/index.bin" if os.path.getsize("work/index.bin") else "data/corpus.bin"
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no readahead: one page per lookup
        pages = os.fstat(fd).st_size // PAGE
        found = sum(len(os.pread(fd, PAGE, (k * STRIDE % pages) * PAGE)) for k in range(pages))
    finally:
        os.close(fd)
    print(f"lookups: {pages} ({found} bytes) in {path}")


if __name__ == "__main__":
    main()
