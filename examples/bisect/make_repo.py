#!/usr/bin/env python3
"""Generate the git repository `benchsage bisect` searches in this example.

A small C program (checksum.c: a checksum over a table, timed by itself) in N commits; commit
number CHANGE makes each checksum do `SLOWDOWN` percent more work, every other commit changes
nothing the program runs (a comment, a notes file). Each run of the program scales its work by
a random factor of coefficient of variation NOISE percent, so the noise is known whatever the
machine. The spec (experiment.toml) is in the repository, identical in every commit.

    python3 make_repo.py DIR [--commits 48] [--change 31] [--slowdown 6] [--noise 3] [--work 60]

prints the hashes of the first and last commit (the good and the bad of the search), and of the
commit that slows the program down.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

PROGRAM = r"""/* checksum.c: a checksum over a table, WORK times; prints the CPU time it took (less disturbed by a busy machine than wall time). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#define TABLE 4096
#define ROUNDS_PER_MS 600 /* about one millisecond of checksums per WORK unit */
#define EXTRA_PERCENT %(extra)s /* the work a commit adds (or not) */

static double noise_factor(double cv) {
    uint64_t seed = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd >= 0) { if (read(fd, &seed, sizeof seed) != sizeof seed) seed = (uint64_t)time(NULL); close(fd); }
    double u1 = ((seed >> 11) & 0xFFFFF) / (double)0x100000 + 1e-9, u2 = (seed >> 40) / (double)(1ULL << 24);
    double z = sqrt(-2.0 * log(u1)) * cos(2.0 * 3.141592653589793 * u2);
    double f = 1.0 + cv * z;
    return f < 0.5 ? 0.5 : f;
}

int main(int argc, char **argv) {
    double work = argc > 1 ? atof(argv[1]) : 60.0, cv = argc > 2 ? atof(argv[2]) / 100.0 : 0.0;
    static uint32_t table[TABLE];
    for (int i = 0; i < TABLE; i++) table[i] = (uint32_t)i * 2654435761u;
    long rounds = (long)(work * ROUNDS_PER_MS * (1.0 + EXTRA_PERCENT / 100.0) * noise_factor(cv));
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    uint32_t sum = 0;
    for (long r = 0; r < rounds; r++)
        for (int i = 0; i < TABLE; i += 16) sum = (sum ^ table[i]) * 16777619u + (uint32_t)r;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    printf("checksum %%08x\ntime %%.6f s\n", sum, (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return 0;
}
"""

SPEC = """# `benchsage bisect experiment.toml --good GOOD --bad BAD --build "make"`: which commit slowed
# checksum down? Each probe runs the program at good, bad and the probed commit, in a random
# order per run, at most %(runs)d runs (in 3 looks: after a third, two thirds and all of them).
[experiment]
name = "checksum"
runs = %(runs)d
timeout = 60

[[test]]
name = "checksum"
command = "./checksum %(work)s %(noise)s"
metric = [{ name = "time", regex = "time ([0-9.]+) s", unit = "s", better = "lower" }]
"""

MAKEFILE = "checksum: checksum.c\n\tcc -O2 -o checksum checksum.c -lm\n"
BROKEN_MAKEFILE = "checksum: checksum.c\n\t@echo 'checksum.c:1: error: this commit does not build' >&2; exit 1\n"


def git(repo: str, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True, env=env).stdout.strip()


def write(repo: str, name: str, text: str) -> None:
    with open(os.path.join(repo, name), "w", encoding="utf-8") as fh:
        fh.write(text)


def make_repo(repo: str, commits: int = 48, change: int = 31, slowdown: float = 6.0, noise: float = 3.0, work: float = 60.0,
              runs: int = 30, broken: int | None = None) -> dict[str, str]:
    """Make the repository; returns the hashes of "good" (first commit), "bad" (last) and "change"."""
    if not 1 <= change < commits:
        raise SystemExit(f"--change must lie in 1..{commits - 1}")
    os.makedirs(repo, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    write(repo, "experiment.toml", SPEC % {"runs": runs, "work": work, "noise": noise})
    write(repo, ".gitignore", "checksum\n")
    hashes: dict[str, str] = {}
    for k in range(commits):
        extra = slowdown if k >= change else 0
        write(repo, "checksum.c", PROGRAM % {"extra": f"{extra:g}"})
        write(repo, "NOTES", f"release notes, entry {k}\n")
        write(repo, "Makefile", BROKEN_MAKEFILE if k == broken else MAKEFILE)
        git(repo, "add", "-A")
        subject = "checksum: visit every entry of the table again" if k == change else f"notes: entry {k}"
        git(repo, "commit", "-q", "-m", subject)
        if k == change:
            hashes["change"] = git(repo, "rev-parse", "HEAD")
    hashes["good"] = git(repo, "rev-list", "--max-parents=0", "HEAD")
    hashes["bad"] = git(repo, "rev-parse", "HEAD")
    return hashes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--commits", type=int, default=48)
    ap.add_argument("--change", type=int, default=31, help="the commit (0-based) that adds the slowdown")
    ap.add_argument("--slowdown", type=float, default=6.0, help="percent")
    ap.add_argument("--noise", type=float, default=3.0, help="percent: the coefficient of variation of the work")
    ap.add_argument("--work", type=float, default=60.0, help="about how many milliseconds a run of the program takes")
    ap.add_argument("--runs", type=int, default=30, help="the most runs per probe")
    ap.add_argument("--broken", type=int, default=None, help="a commit (0-based) whose build fails")
    args = ap.parse_args(argv)
    hashes = make_repo(args.dir, args.commits, args.change, args.slowdown, args.noise, args.work, args.runs, args.broken)
    for key in ("good", "bad", "change"):
        print(f"{key} {hashes[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
