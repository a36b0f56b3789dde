"""Two jobs that read the same data file: `index` counts newline bytes, `query` looks for a
pattern. Either one leaves the file in the page cache for the other.

Prints the read throughput so benchsage can pick it up as a metric.
"""

import sys
import time

CHUNK = 1 << 20


def main(job: str, path: str) -> None:
    start = time.perf_counter()
    total = hits = 0
    with open(path, "rb", buffering=0) as fh:
        while chunk := fh.read(CHUNK):
            total += len(chunk)
            hits += chunk.count(b"\n") if job == "index" else chunk.count(b"benchsage")
    seconds = time.perf_counter() - start
    print(f"{job}: {hits} hits in {total >> 20} MiB")
    print(f"MB/s: {total / seconds / 1e6:.1f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
