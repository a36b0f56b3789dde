"""The words every layer of benchsage shares, each said once: arms, statuses (of trials, runs
and a host's readings), dimension names, the harness's metrics and their units, option
defaults, the CPU-list syntax and how a duration is written.

Imports nothing (not even typing: annotations are never evaluated), runs on Python 3.8, and
travels in the agent's bundle, so the controller and the agent on every host use the same words.
"""

from __future__ import annotations

VERSION = "0.1.0"

# -- arms and orders -----------------------------------------------------------------------
FIXED = "fixed"  # the baseline order: the tests as the spec lists them
RANDOM = "random"  # a fresh order per run
ARMS = (FIXED, RANDOM)  # an arm's code in a trial table is its index here
SHUFFLE = "shuffle"  # random orders: a fresh permutation per run
WILLIAMS = "williams"  # random orders: rows of randomized Williams squares (carry-over balanced)
RANDOM_ORDERS = (SHUFFLE, WILLIAMS)

# -- how an experiment stops -----------------------------------------------------------------
FIXED_STOP = "fixed"  # every planned run
SEQUENTIAL_STOP = "sequential"  # looks between runs; stop when every test is decided
STOPS = (FIXED_STOP, SEQUENTIAL_STOP)
# What a sequential experiment waits for (`decide`): every test decided, or the experiment's
# verdict settled (an order effect in some test, or every test shown smaller than min_effect).
DECIDE_EACH = "each"
DECIDE_VERDICT = "verdict"
DECIDE_RULES = (DECIDE_EACH, DECIDE_VERDICT)
# Why a sequential experiment stopped (its analysis JSON's sequential.stopped_because).
STOPPED_VERDICT = "verdict-settled"  # decide = "verdict": an effect in some test, or none in any
STOPPED_DECIDED = "every-test-decided"
STOPPED_LAST_LOOK = "last-look"  # the most runs were carried out

# The answer of an analysis (its JSON's "verdict"), the first that applies: a test failed in
# every trial or in more than half of them; some test's order mattered; some primary comparison
# could not have shown an order effect (too few runs for the corrected level, all values equal);
# none found, where each could have been.
VERDICT_TESTS_FAILED = "tests-failed"
VERDICT_ORDER_MATTERS = "order-matters"
VERDICT_UNDETECTABLE = "undetectable"
VERDICT_NO_EFFECT = "no-effect"
VERDICTS = (VERDICT_TESTS_FAILED, VERDICT_ORDER_MATTERS, VERDICT_UNDETECTABLE, VERDICT_NO_EFFECT)

# -- statuses --------------------------------------------------------------------------------
# A trial: a number only when ok.
OK = "ok"
FAILED = "failed"
TIMEOUT = "timeout"
BAD_OUTPUT = "bad-output"
TRIAL_STATUSES = (OK, FAILED, TIMEOUT, BAD_OUTPUT)

# A planned run.
PLANNED = "planned"
RUNNING = "running"
DONE = "done"
SKIPPED = "skipped"  # its context's link-order build failed on its worker
NOT_NEEDED = "not-needed"  # a sequential experiment stopped before it
FINISHED = (DONE, NOT_NEEDED)  # run statuses that leave nothing to carry out

# An attempt at a run (besides running, done, failed).
INTERRUPTED = "interrupted"
RESET_FAILED = "reset-failed"
CONTEXT_FAILED = "context-failed"

# How the agent started a trial.
EXEC = "exec"  # the command's words exec'd directly (no shell syntax)
SHELL = "shell"  # /bin/sh -c

# A reading of a host (`benchsage env`; each run's snapshot keeps its value and state): OK, or
WARN = "warn"  # a setting that can add noise to measurements: the reading advises what to change
UNKNOWN = "unknown"  # it could not be read: the reading says why
OFF = "off"  # how trials are measured: something the host does not allow; its metric is absent, nothing is wrong
READING_STATES = (OK, WARN, UNKNOWN)  # a noise source's states, in the order `benchsage env --json` counts them

# -- the harness's own metrics: name -> (unit, which direction is better) ----------------------
HARNESS_METRICS = ("wall_time", "user_time", "sys_time", "max_rss")  # every trial
OPTIONAL_HARNESS_METRICS = ("peak_memory", "cpu_time", "energy")  # where the host allows (cgroups, RAPL)
HARNESS_METRIC_UNITS = {
    "wall_time": ("s", "lower"),
    "user_time": ("s", "lower"),
    "sys_time": ("s", "lower"),
    "max_rss": ("KiB", "lower"),
    "peak_memory": ("KiB", "lower"),
    "cpu_time": ("s", "lower"),
    "energy": ("J", "lower"),
}
LOWER = "lower"
HIGHER = "higher"
# -- a load generator's schedule (output parsers of tools that take a rate: wrk2 -R, pgbench -R, memtier) --
RATE_ASKED = "rate_asked"  # 1/s: the rate the test's command asked of the load generator
RATE_DELIVERED = "rate_delivered"  # achieved / asked, per trial
RATE_DELIVERED_FLOOR = 0.95  # below this a trial did not deliver the load it was asked for
DIRECTIONS = (LOWER, HIGHER)

# -- treatment dimensions (the trial table's columns) ------------------------------------------
CONTEXT = "context"
OBSERVER = "observer"
FACTOR_PREFIX = "factor:"  # "factor:threads"
SWEEP_PREFIX = "sweep:"  # "sweep:conns": the level of an expanded test, constant within it (not a treatment of runs)
CONTEXT_DIMENSIONS = ("env_bytes", "cwd_bytes", "cpus", "aslr", "link_order")  # "context:env_bytes", ...
ENV_PAD = "BENCHSAGE_ENV_PAD"  # the environment variable whose size a context's env_bytes sets
# Linux refuses an exec (E2BIG) when one "NAME=value" string of its environment, with its NUL,
# is longer than MAX_ARG_STRLEN (32 pages of 4 KiB): the most env_bytes one variable can hold.
MAX_ENV_BYTES = 32 * 4096 - len(ENV_PAD + "=") - 1


def dimension_labels(described: dict[str, object]) -> dict[str, str]:
    """A treatment's level of each dimension, from its description (as the journal records
    each cell): "context", the context's own values as "context:env_bytes", ..., "observer" and
    "factor:NAME"; every level a string."""
    out: dict[str, str] = {}
    if CONTEXT in described:
        out[CONTEXT] = str(described[CONTEXT])
        for key in CONTEXT_DIMENSIONS:
            if key in described:
                value = described[key]
                out[CONTEXT + ":" + key] = (" ".join(value) if isinstance(value, list) else
                                            str(value).lower() if isinstance(value, bool) else str(value))
    if OBSERVER in described:
        out[OBSERVER] = str(described[OBSERVER])
    for name, level in (described.get("factors") or {}).items():
        out[FACTOR_PREFIX + name] = str(level)
    return out


def cell_columns(described: list[dict[str, object]]) -> tuple[list[dict[str, str]], list[str]]:
    """Each recorded cell's dimension labels, and the dimensions in order of first appearance."""
    labels = [dimension_labels(d) for d in described]
    return labels, list(dict.fromkeys(k for cell in labels for k in cell))


# -- defaults ----------------------------------------------------------------------------------
DEFAULT_RUNS = 10  # per arm
DEFAULT_ALPHA = 0.05
BONFERRONI = "bonferroni"
HOLM = "holm"
CORRECTIONS = (BONFERRONI, HOLM)
DEFAULT_CORRECTION = BONFERRONI
DEFAULT_MIN_EFFECT = 2.0  # percent: the smallest order effect a sequential experiment looks for
DEFAULT_OUTPUT_LIMIT = 1 << 20  # bytes of a trial's stdout/stderr kept in memory (the tail)
MIN_RUNS_PER_ARM = 5  # below this the analysis gives no p-value
# How a test row's order effect is expressed (TestVerdict.shift_kind): fixed / random when every
# value is above 0, fixed - random in the metric's unit otherwise.
SHIFT_RATIO = "ratio"
SHIFT_DIFFERENCE = "difference"


# -- CPU lists (taskset's syntax) --------------------------------------------------------------
def parse_cpu_list(text: str) -> list[int]:
    """The CPUs of a list in taskset/cpuset syntax, sorted and without repeats.

    Comma-separated items, each "N", "A-B" (inclusive) or "A-B:S" (every S-th CPU from A to B,
    taskset's stride): "0-3,5,8-11:2" is [0, 1, 2, 3, 5, 8, 10]. Blanks around items are
    allowed. Raises ValueError naming the bad item: empty lists or items, negative or
    non-decimal numbers, reversed ranges, zero strides. The kernel's lists (sysfs, cpusets)
    are this syntax without strides.
    """
    if not text.strip():
        raise ValueError("empty CPU list %r: give CPU numbers like \"0-3,5\"" % text)
    cpus: set[int] = set()
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise ValueError("bad CPU list %r: an empty item (two commas in a row, or a comma at an end)" % text)
        if item.startswith("-"):
            raise ValueError("bad CPU list %r: %r is negative" % (text, item))
        span, colon, stride_text = item.partition(":")
        low_text, dash, high_text = span.partition("-")
        low = _cpu_number(low_text, item, text)
        high = _cpu_number(high_text, item, text) if dash else low
        stride = _cpu_number(stride_text, item, text) if colon else 1
        if colon and not dash:
            raise ValueError("bad CPU list %r: %r has a stride but no range (write A-B:S)" % (text, item))
        if high < low:
            raise ValueError("bad CPU list %r: %r is a reversed range" % (text, item))
        if stride < 1:
            raise ValueError("bad CPU list %r: %r has stride 0" % (text, item))
        cpus.update(range(low, high + 1, stride))
    return sorted(cpus)


def _cpu_number(word: str, item: str, text: str) -> int:
    word = word.strip()
    if not word:
        raise ValueError("bad CPU list %r: %r is missing a number" % (text, item))
    if not (word.isascii() and word.isdigit()):
        where = "" if word == item else " in %r" % item
        raise ValueError("bad CPU list %r: %r%s is not a CPU number" % (text, word, where))
    return int(word)


def format_cpu_list(cpus: list[int] | tuple[int, ...] | set[int]) -> str:
    """The shortest list without strides: [0, 1, 2, 5, 7, 8] -> "0-2,5,7-8"; [] -> ""."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(lo) if lo == hi else "%d-%d" % (lo, hi) for lo, hi in ranges)


# -- durations -----------------------------------------------------------------------------------
def format_duration(seconds: float) -> str:
    """A duration as a clock reads it, to the second: "1:02:03", or "2:03" under an hour (the
    progress display's ETA and the plan's estimates write it the same way)."""
    seconds = max(0, int(round(seconds)))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return "%d:%02d:%02d" % (h, m, s) if h else "%d:%02d" % (m, s)
