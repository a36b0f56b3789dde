"""The words of the notes on test rows (why a field is null) and of the analysis's warnings about
the data, the environment snapshots and a fleet's workers (analyze/notes.py and its kin).
"""

from __future__ import annotations

from typing import Any

from benchsage.analyze.identity import DIGEST_PREFIX, FILE_PREFIX, IdentityDiffers
from benchsage.analyze.measurement import RssAtFloor
from benchsage.analyze.rates import RateShortfall
from benchsage.analyze.notes import (
    AllEqual,
    EmptyArm,
    FileChanged,
    FileDiffers,
    NoiseWarned,
    NonFinite,
    NoStrata,
    NoValues,
    OnTest,
    SettingChanged,
    SettingDiffers,
    SnapshotMissing,
    TooFewForCI,
    TooFewToTest,
    WorkersDiffer,
    ZeroFixedMean,
)
from benchsage.report.words.registry import count, said, words

# The words for each snapshot setting a warning names (analyze/identity.py's STABLE_FIELDS).
SETTING_WORDS: dict[str, str] = {
    "governor": "governor",
    "turbo": "turbo boost",
    "smt": "SMT",
    "aslr": "ASLR",
    "cpu_idle": "CPU idle states",
    "kernel": "kernel",
    "kernel_version": "kernel build",
    "machine": "machine architecture",
    "os": "OS",
    "cpu_model": "CPU model",
    "cpu_count": "CPU count",
    "python": "Python",
    "benchsage": "benchsage version",
    "spec_hash": "experiment spec",
}
# The words for each time-varying noise reading of a snapshot: its source's title in lower case
# (a snapshot keeps only each reading's value and state).
NOISE_WORDS: dict[str, str] = {
    "load": "load average",
    "memory": "memory available and pressure",
    "swap": "swap in use",
    "thermal_throttle": "thermal throttling",
}


# Why a field of a test row is null.


@words(EmptyArm)
def _empty_arm(note: EmptyArm) -> str:
    return f"no values in the {note.arm} arm: nothing to compare"


@words(TooFewToTest)
def _too_few_to_test(note: TooFewToTest) -> str:
    few = [f"{k} {arm}" for k, arm in ((note.n_fixed, "fixed"), (note.n_random, "random")) if k < note.least]
    plural = "s" if note.n_fixed + note.n_random != 2 else ""
    return f"only {' and '.join(few)} value{plural}: Kruskal-Wallis needs at least {note.least} per arm"


@words(AllEqual)
def _all_equal(note: AllEqual) -> str:
    return f"all {note.n} values are equal ({note.value:g}): Kruskal-Wallis is undefined"


@words(NoStrata)
def _no_strata(note: NoStrata) -> str:
    block, blocks = (("worker's treatment cell", "workers' treatment cells") if note.workers and note.cells else
                     ("treatment cell", "treatment cells") if note.cells else ("worker", "workers"))
    return (f"no {block} has values in both arms, or each {block}'s values are all equal: "
            f"the stratified test compares the arms within {blocks}")


@words(TooFewForCI)
def _too_few_for_ci(note: TooFewForCI) -> str:
    return (
        f"{note.n} {note.arm} value{'s' if note.n != 1 else ''} are too few for a {note.level * 100:g}% {note.method} CI "
        f"of the median (at least {note.least} needed)"
    )


@words(ZeroFixedMean)
def _zero_fixed_mean(note: ZeroFixedMean) -> str:
    return "the fixed-arm mean is 0: Δ% is undefined"


def _kib(x: float) -> str:
    return f"{x:,.0f} KiB"


@words(RssAtFloor)
def _rss_at_floor(note: RssAtFloor) -> str:
    """Why a test's max_rss says nothing about its own memory, and what to read instead."""
    floor = note.floor
    shown = _kib(floor.median) if floor.low == floor.high else f"{floor.low:,.0f}–{_kib(floor.high)}"
    head = (
        f"median {_kib(note.median)} is at the floor of what wait4 can show ({shown}, the max_rss of /bin/true spawned the same way): "
        "the trial's own memory is at most that, and max_rss cannot tell how much"
    )
    if note.has_peak_memory:
        return head + "; read peak_memory for the trial's own memory"
    return head + "; peak_memory would show it (a cgroup per trial: see `benchsage env`)"


@words(RateShortfall)
def _rate_shortfall(note: RateShortfall) -> str:
    """A load generator that could not keep its schedule measured a lighter load than asked."""
    return (f"test '{note.test}': the load generator delivered less than {note.floor:.0%} of the rate its command asked in "
            f"{note.short} of {count(note.trials, 'trial')} (lowest {note.lowest:.1%}; metric rate_delivered): those trials "
            "measured a lighter load than asked; lower the rate, or add load generator threads or hosts")


# Warnings about the data and the arms.


@words(NonFinite)
def _non_finite(note: NonFinite) -> str:
    return f"{note.count} value{'s' if note.count != 1 else ''} that are not finite numbers (NaN or infinity) were left out"


@words(NoValues)
def _no_values(note: NoValues) -> str:
    return "no trials to analyze: the data holds no values"


@words(OnTest)
def _on_test(note: OnTest) -> str:
    return f"{note.test} ({note.metric}): {'; '.join(said(note.notes))}"


# Warnings about a fleet's workers.


@words(WorkersDiffer)
def _workers_differ(note: WorkersDiffer) -> str:
    spread = ""
    if note.largest is not None:
        pct, test, metric = note.largest
        spread = f"; largest spread {pct:.1f}% ({test} [{metric}])"
    odd = ", ".join(f"{w} ({count(n, 'test')})" for w, n in note.outliers)
    return (
        f"the workers' results differ in {note.differing} of {note.tests} tests (fleet diagnostic){spread}"
        + (f"; outliers: {odd}" if odd else "")
        + ": compare results between workers with care; the combined verdict is stratified by worker"
    )


def _identity_value(what: str, value: Any) -> str:
    """A worker's value of a field: a file's digest (each of several) shortened, text quoted."""
    if value is None:
        return "missing" if what.startswith(FILE_PREFIX) else "unknown"
    if what.startswith(FILE_PREFIX) and isinstance(value, str):
        return " / ".join(v[: len(DIGEST_PREFIX) + 12] for v in value.split(" / "))
    return repr(value) if isinstance(value, str) else str(value)


@words(IdentityDiffers)
def _identity_differs(note: IdentityDiffers) -> str:
    """'workers ran different versions of bin/app: sha256:ab12cd34ef56 on node1, node2;
    sha256:9f3e... on node3 (...)', workers grouped by the value shown."""
    what = note.difference.what
    groups: dict[str, list[str]] = {}
    for worker, value in note.difference.values.items():
        groups.setdefault(_identity_value(what, value), []).append(worker)
    listing = "; ".join(f"{value} on {', '.join(ws)}" for value, ws in groups.items())
    if what.startswith(FILE_PREFIX):
        return (
            f"workers ran different versions of {what[len(FILE_PREFIX):]}: {listing} "
            "(differences between these workers may come from the software, not the machines)"
        )
    return f"workers differ in {SETTING_WORDS.get(what, what)}: {listing}"


@words(SnapshotMissing)
def _snapshot_missing(note: SnapshotMissing) -> str:
    return (
        f"no environment snapshot from worker{'s' if len(note.workers) > 1 else ''} {', '.join(note.workers)}: "
        "whether it ran the same software cannot be checked"
    )


# Warnings about the runs' environment snapshots.


def _shown(value: Any) -> str:
    return "unknown" if value is None else repr(value) if isinstance(value, str) else str(value)


def _runs(n: int) -> str:
    return count(n, "run")


def _short(digest: str | None) -> str:
    return "missing" if digest is None else digest[:12]


def _in_runs(values: tuple[tuple[Any, int], ...]) -> str:
    return ", ".join(f"{_shown(value)} in {_runs(n)}" for value, n in values)


@words(SettingDiffers)
def _setting_differs(note: SettingDiffers) -> str:
    text = f"{SETTING_WORDS.get(note.setting, note.setting)} differs between runs: {_in_runs(note.values)}"
    if note.by_worker is not None:
        text += " (by worker: " + ", ".join(f"{w} {_shown(v)}" for w, v in note.by_worker) + ")"
    return text


@words(SettingChanged)
def _setting_changed(note: SettingChanged) -> str:
    return f"{SETTING_WORDS.get(note.setting, note.setting)} changed between runs on worker {note.worker}: {_in_runs(note.values)}"


@words(NoiseWarned)
def _noise_warned(note: NoiseWarned) -> str:
    return f"{NOISE_WORDS.get(note.source, note.source)} warned before {note.warned} of {_runs(note.runs)} (e.g. {note.example})"


@words(FileChanged)
def _file_changed(note: FileChanged) -> str:
    within = f" of {note.group}" if note.group else ""
    versions = ", ".join(f"{_short(d)} in {_runs(n)}" for d, n in note.versions)
    return f"{note.path} changed between runs{within} on worker {note.worker}: {versions}"


@words(FileDiffers)
def _file_differs(note: FileDiffers) -> str:
    """Workers grouped by the digests shown: '/x differs between workers: 111111111111 on a, b; missing on c'."""
    by_digest: dict[str, list[str]] = {}
    for worker, digests in note.digests:
        by_digest.setdefault(" / ".join(_short(d) for d in digests), []).append(worker)
    listing = "; ".join(f"{digest} on {', '.join(ws)}" for digest, ws in by_digest.items())
    within = f" in runs of {note.group}" if note.group else ""
    return f"{note.path} differs between workers{within}: {listing}"
