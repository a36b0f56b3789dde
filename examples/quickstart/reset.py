"""Reset for the quickstart: make sure the data file exists, then evict it from the page cache.

posix_fadvise(POSIX_FADV_DONTNEED) drops a file's clean pages without root, so every run
starts with the file on disk only, as it would be after a reboot.
"""

import os
import sys

SIZE = 128 << 20  # bytes


def main(path: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if not os.path.exists(path) or os.path.getsize(path) != SIZE:
        block = os.urandom(1 << 20)
        with open(path + ".tmp", "wb") as fh:
            for i in range(SIZE >> 20):
                fh.write(block[i:] + block[:i])
        os.replace(path + ".tmp", path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # dirty pages cannot be dropped; write them out first
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


if __name__ == "__main__":
    main(sys.argv[1])
