"""Two jobs that touch no files: `compress` deflates generated data, `sort` sorts numbers.

They run beside the readers to show what no order effect looks like.
"""

import random
import sys
import zlib


def main(job: str) -> None:
    rng = random.Random(42)
    if job == "compress":
        data = rng.randbytes(1 << 20)
        print(len(zlib.compress(data, 6)))
    else:
        numbers = [rng.random() for _ in range(200_000)]
        numbers.sort()
        print(numbers[len(numbers) // 2])


if __name__ == "__main__":
    main(sys.argv[1])
