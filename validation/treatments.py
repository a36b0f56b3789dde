"""Monte-Carlo validation of benchsage's treatment statistics: do their 95% intervals cover?

1. The interval of the ratio of medians of an A vs B comparison, both methods: "bauer"
   (stats.compare.ratio_ci: order statistics of the pairwise log differences) and
   "bonett-price" (stats.compare.ratio_ci_bonett_price), on samples where a is theta times b
   in distribution (normal, lognormal, heavy-tailed Pareto, constant + exponential), for
   several sample sizes; and on two samples of different shapes (outside Bauer's model).
2. The interval of each effect q of a 2^k r factorial design (stats.factorial.effects_2k:
   Jain's t interval), with normal, skewed, heavy-tailed and multiplicative errors.
3. How often a comparison "flips" across contexts when a and b do not differ at all
   (stats.compare.summarize_contexts, with and without its family-wise correction).
4. The comparison as the analysis reports it (analyze.treatments.analyze_treatments, the
   "comparisons" of the JSON, its default interval): two tests measured in 8 contexts, each
   context its own level, in both order arms; how often its interval covers the true ratio, and
   when a and b do not differ, how often it names a winner, says the claim holds in both arms,
   or reports a flip.

    python validation/treatments.py [--quick] [--reps R] [--reps-flips R] [--reps-wired R] [--seed 1] [--json FILE]

Intervals are computed in batches with numpy, using benchsage's own rank (ci_rank) and
effects_2k; the first replications of every row are also passed through benchsage's compare()
and factorial_2k() and must give the same interval (the script stops otherwise).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np
from scipy import stats as sps

from scipy import special

from benchsage.analyze.treatments import CompareRequest, TreatmentOptions, analyze_treatments
from benchsage.stats.compare import DEFAULT_RATIO_CI, MIN_VALUES, compare, compare_strata, summarize_contexts
from benchsage.store.table import TrialTable
from benchsage.stats.factorial import effects_2k, factorial_2k, sign_table
from benchsage.stats.ranksum import u_cdf_exact
from benchsage.stats.shift import ci_rank

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # montecarlo.py, beside this script
from montecarlo import Rate, rate  # noqa: E402

LEVEL = 0.95
ALPHA = 0.05
MAX_DIFFS_PER_BATCH = 4_000_000
CHECKED_REPS = 3  # replications per row also run through the public functions

Sampler = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]

# Positive samples, each with median 1, so that theta * X has median theta.
RATIO_DISTRIBUTIONS: dict[str, Sampler] = {
    "normal (CV 5%)": lambda g, s: g.normal(1.0, 0.05, s),
    "lognormal (sigma 0.3)": lambda g, s: g.lognormal(0.0, 0.3, s),
    # Lomax (Pareto II) with shape 1.5: infinite variance; median of 1 + 0.1 L is 1 + 0.1 (2^(2/3) - 1)
    "heavy-tailed (1 + Pareto II, shape 1.5)": lambda g, s: (1.0 + 0.1 * g.pareto(1.5, s)) / (1.0 + 0.1 * (2 ** (1 / 1.5) - 1)),
    "constant + exponential": lambda g, s: (0.9 + g.exponential(0.1, s)) / (0.9 + 0.1 * math.log(2)),
}
THETA = 0.8  # a is 20% faster than b






@dataclass(frozen=True)
class RatioRow:
    distribution: str
    m: int
    n: int
    coverage: Rate  # bauer
    promised: float | None  # 1 - 2 P(U <= k - 1) under the exact distribution, when it is used
    method: str
    median_width_pct: float  # median of (high - low) / theta * 100
    coverage_bp: Rate | None  # bonett-price (None below MIN_VALUES)
    median_width_bp_pct: float | None


def _ratio_batch(a: np.ndarray, b: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of the ratio interval of every row of a (reps, m) and b (reps, n): the k-th and
    (m n + 1 - k)-th of the pairwise log differences, exponentiated."""
    m, n = a.shape[1], b.shape[1]
    d = (np.log(a)[:, :, None] - np.log(b)[:, None, :]).reshape(len(a), m * n)
    part = np.partition(d, [k - 1, m * n - k], axis=1)
    return np.exp(part[:, k - 1]), np.exp(part[:, m * n - k])


def _bonett_price_batch(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of the Bonett-Price interval of every row (see ratio_ci_bonett_price)."""

    def centre_var(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = x.shape[1]
        s = np.sort(np.log(x), axis=1)
        c = max(1, int(round((n + 1) / 2.0 - math.sqrt(n))))
        z = special.ndtri(1.0 - special.bdtr(c - 1, n, 0.5))
        return np.log(np.median(x, axis=1)), ((s[:, n - c] - s[:, c - 1]) / (2.0 * z)) ** 2

    ca, va = centre_var(a)
    cb, vb = centre_var(b)
    half = special.ndtri((1.0 + LEVEL) / 2.0) * np.sqrt(va + vb)
    return np.exp(ca - cb - half), np.exp(ca - cb + half)


def _same(ci: tuple[float, float] | None, low: float, high: float) -> bool:
    return ci is not None and math.isclose(ci[0], low, rel_tol=1e-12) and math.isclose(ci[1], high, rel_tol=1e-12)


def ratio_row(name: str, sample_a: Sampler, sample_b: Sampler, theta: float, m: int, n: int, reps: int, rng: np.random.Generator) -> RatioRow:
    k, method = ci_rank(m, n, LEVEL)
    if k < 1:
        raise SystemExit(f"no {LEVEL:.0%} interval for m={m}, n={n}")
    bp = min(m, n) >= MIN_VALUES
    covered = covered_bp = 0
    widths, widths_bp = [], []
    batch = max(1, MAX_DIFFS_PER_BATCH // (m * n))
    done = 0
    while done < reps:
        size = min(batch, reps - done)
        a, b = sample_a(rng, (size, m)), sample_b(rng, (size, n))
        low, high = _ratio_batch(a, b, k)
        covered += int(np.sum((low <= theta) & (theta <= high)))
        widths.append((high - low) / theta * 100.0)
        if bp:
            low_bp, high_bp = _bonett_price_batch(a, b)
            covered_bp += int(np.sum((low_bp <= theta) & (theta <= high_bp)))
            widths_bp.append((high_bp - low_bp) / theta * 100.0)
        if done == 0:
            for i in range(min(CHECKED_REPS, size)):
                if not _same(compare(a[i], b[i]).ci, low[i], high[i]):
                    raise SystemExit(f"batch interval differs from compare(): {compare(a[i], b[i]).ci} vs {(low[i], high[i])}")
                if bp and not _same(compare(a[i], b[i], ci_method="bonett-price").ci, low_bp[i], high_bp[i]):
                    raise SystemExit("batch Bonett-Price interval differs from compare()")
        done += size
    promised = 1.0 - 2.0 * u_cdf_exact(k - 1, m, n) if method == "bauer-exact" else None
    return RatioRow(
        name, m, n, rate(covered, reps), promised, method, float(np.median(np.concatenate(widths))),
        rate(covered_bp, reps) if bp else None, float(np.median(np.concatenate(widths_bp))) if bp else None,
    )


@dataclass(frozen=True)
class EffectRow:
    errors: str
    k: int
    r: int
    coverage: Rate  # over every term of every replication
    worst_term: float  # the lowest coverage of a single term


def _errors(name: str, g: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    if name == "normal":
        return g.normal(0.0, 1.0, shape)
    if name == "lognormal (skewed)":
        return g.lognormal(0.0, 1.0, shape) - math.exp(0.5)  # mean 0
    if name == "Student t, 3 df (heavy-tailed)":
        return g.standard_t(3, shape)
    if name == "exponential (skewed)":
        return g.exponential(1.0, shape) - 1.0
    raise ValueError(name)


EFFECT_ERRORS = ("normal", "lognormal (skewed)", "Student t, 3 df (heavy-tailed)", "exponential (skewed)")
MULTIPLICATIVE = "multiplicative, CV 5% (A adds 20 ms, B 2 ms to 100 ms)"


def effect_row(errors: str, k: int, r: int, reps: int, rng: np.random.Generator) -> EffectRow:
    cells = 1 << k
    if errors == MULTIPLICATIVE:
        # The example: A adds 20 ms, B 2 ms (factors beyond two add nothing); every
        # observation has a 5% CV around its cell's mean, so the variance differs by cell.
        high = (np.arange(cells)[:, None] >> np.arange(k)[None, :]) & 1
        mean = 0.100 + 0.020 * high[:, 0] + (0.002 * high[:, 1] if k > 1 else 0.0)
        y = mean[None, :, None] * (1.0 + 0.05 * rng.normal(0.0, 1.0, (reps, cells, r)))
    else:
        # arbitrary true effects: the coverage does not depend on them
        mean = sign_table(k) @ np.linspace(5.0, -2.0, cells)
        y = mean[None, :, None] + _errors(errors, rng, (reps, cells, r))
    true_q = mean @ sign_table(k) / cells
    res = effects_2k(y, LEVEL)
    for i in range(CHECKED_REPS):
        settings = {f"f{j}": [int(c >> j & 1) for c in range(cells) for _ in range(r)] for j in range(k)}
        one = factorial_2k(y[i].ravel(), settings, {f"f{j}": (0, 1) for j in range(k)}, LEVEL)
        if not math.isclose(one.terms[0].ci[1] - one.terms[0].effect, float(res.half_width[i]), rel_tol=1e-9):
            raise SystemExit("batch interval differs from factorial_2k()")
    inside = np.abs(res.q[:, 1:] - true_q[None, 1:]) <= res.half_width[:, None]
    return EffectRow(errors, k, r, rate(int(inside.sum()), int(inside.size)), float(inside.mean(axis=0).min()))


@dataclass(frozen=True)
class FlipRow:
    contexts: int
    n: int
    corrected: Rate
    uncorrected: Rate


def flip_row(contexts: int, n: int, reps: int, rng: np.random.Generator) -> FlipRow:
    """a and b identical in every context (lognormal, CV ~3%, each context its own level)."""
    corrected = uncorrected = 0
    for _ in range(reps):
        level = rng.lognormal(0.0, 0.05, contexts)
        samples = {f"c{i}": (level[i] * rng.lognormal(0.0, 0.03, n), level[i] * rng.lognormal(0.0, 0.03, n)) for i in range(contexts)}
        per = compare_strata(samples)
        corrected += summarize_contexts(per).flips
        raw = [c.better for c in per.values()]
        uncorrected += "a" in raw and "b" in raw
    return FlipRow(contexts, n, rate(corrected, reps), rate(uncorrected, reps))


@dataclass(frozen=True)
class WiredRow:
    distribution: str
    n: int  # values per test and context (half in each arm)
    coverage: Rate  # a = THETA x b in each context: the analysis's interval covers the pooled ratio
    target_shift_pct: float  # largest |pooled ratio of medians / THETA - 1| over the experiments
    median_width_pct: float
    null_better: Rate  # a and b identical: a winner is named
    null_holds: Rate  # ... and it is said to hold in both arms
    null_flips: Rate  # ... or a flip across the contexts is reported


CONTEXTS = 8
Cdf = Callable[[np.ndarray], np.ndarray]
_K = 0.9 + 0.1 * math.log(2)  # the median of 0.9 + Exp(0.1), which "constant + exponential" divides by
CDFS: dict[str, Cdf] = {
    "normal (CV 5%)": lambda x: special.ndtr((x - 1.0) / 0.05),
    "constant + exponential": lambda x: np.where(_K * x > 0.9, -np.expm1(-(_K * x - 0.9) / 0.1), 0.0),
}


def mixture_median(cdf: Cdf, scales: np.ndarray) -> float:
    """The median of the pooled values when context c holds scales[c] x X, X with CDF cdf, in
    equal numbers: the x where the mean of cdf(x / scales[c]) is 1/2 (bisection)."""
    lo, hi = 0.0, 10.0 * float(np.max(scales))
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if float(np.mean(cdf(mid / scales))) < 0.5 else (lo, mid)
    return (lo + hi) / 2.0


def _wired(a: np.ndarray, b: np.ndarray) -> Any:
    """The analysis's comparison of a (contexts, n) and b (contexts, n): columns of values
    alternate between the arms."""
    contexts, n = a.shape
    arm = ["fixed" if j % 2 == 0 else "random" for _ in range(contexts) for j in range(n)]
    context = [f"c{c + 1}" for c in range(contexts) for _ in range(n)]
    table = TrialTable.from_columns(
        test=["a"] * a.size + ["b"] * b.size, arm=arm * 2, value=np.concatenate([a.ravel(), b.ravel()]),
        metric=["wall_time"] * (a.size + b.size), treatments={"context": context * 2},
    )
    (row,) = analyze_treatments(table, options=TreatmentOptions((CompareRequest("a", "b"),))).comparisons
    return row


def wired_row(name: str, sample_a: Sampler, sample_b: Sampler, n: int, reps: int, rng: np.random.Generator,
              shapes: tuple[Cdf, Cdf] | None = None) -> WiredRow:
    """shapes: the CDFs of a's and b's distributions when they differ. The reported ratio is that
    of the pooled values' medians; with a = THETA x b in every context it is THETA when a and b
    share a shape, and otherwise the ratio of the two mixtures' medians (the contexts' levels
    spread a tail differently from a symmetric sample), which is the truth then."""
    covered = better = holds = flips = 0
    widths, shifts = [], []
    for i in range(reps):
        level = rng.lognormal(0.0, 0.05, (CONTEXTS, 1))  # each context its own level, a and b alike
        a, b = THETA * level * sample_a(rng, (CONTEXTS, n)), level * sample_b(rng, (CONTEXTS, n))
        truth = THETA
        if shapes is not None:
            truth = mixture_median(shapes[0], THETA * level.ravel()) / mixture_median(shapes[1], level.ravel())
        shifts.append(abs(truth / THETA - 1.0) * 100.0)
        row = _wired(a, b)
        if i < CHECKED_REPS and not _same(compare(a.ravel(), b.ravel(), ci_method=DEFAULT_RATIO_CI).ci, *row.ci):
            raise SystemExit("the analysis's interval differs from compare() of the pooled values")
        if row.ci is not None:
            covered += row.ci[0] <= truth <= row.ci[1]
            widths.append((row.ci[1] - row.ci[0]) / THETA * 100.0)
        null = _wired(level * sample_b(rng, (CONTEXTS, n)), level * sample_b(rng, (CONTEXTS, n)))
        better += null.better is not None
        holds += bool(null.holds_in) and all(null.holds_in.values())
        flips += null.contexts.flips
    return WiredRow(name, n, rate(covered, reps), max(shifts), float(np.median(widths)), rate(better, reps), rate(holds, reps), rate(flips, reps))


def _pct(r: Rate) -> str:
    return f"{100 * r.rate:.1f} % [{100 * r.ci[0]:.1f}, {100 * r.ci[1]:.1f}]"


def _ratio_line(row: RatioRow) -> str:
    promised = f"{100 * row.promised:.1f} %" if row.promised is not None else "-"
    bp = _pct(row.coverage_bp) if row.coverage_bp is not None else "-"
    bp_width = f"{row.median_width_bp_pct:.1f} %" if row.median_width_bp_pct is not None else "-"
    return f"| {row.distribution} | {row.m} | {_pct(row.coverage)} | {promised} | {row.median_width_pct:.1f} % | {bp} | {bp_width} |"


def render(ratio: list[RatioRow], shapes: list[RatioRow], effects: list[EffectRow], flips: list[FlipRow], wired: list[WiredRow], reps: int,
           reps_flips: int, reps_wired: int) -> str:
    out = [f"1. Ratio of medians, 95% interval (a = {THETA} x b in distribution; {reps} replications per row)", ""]
    head = ["| distribution | m = n | bauer | promised | bauer width | bonett-price (default) | bonett-price width |", "|---|---|---|---|---|---|---|"]
    out += head
    out += [_ratio_line(row) for row in ratio]
    out += ["", "a and b of different shapes (outside Bauer's model; true ratio of medians 0.8):", ""]
    out += head
    out += [_ratio_line(row) for row in shapes]
    out += ["", f"2. Effects q of 2^k r designs, 95% t interval ({reps} designs per row, every term)", ""]
    out += ["| errors | k | r | coverage | lowest term |", "|---|---|---|---|---|"]
    for row in effects:
        out.append(f"| {row.errors} | {row.k} | {row.r} | {_pct(row.coverage)} | {100 * row.worst_term:.1f} % |")
    out += ["", f"3. 'flips' when a and b do not differ ({reps_flips} experiments per row)", ""]
    out += ["| contexts | values per test and context | flips (Bonferroni over contexts) | flips (each context at alpha) |", "|---|---|---|---|"]
    for row in flips:
        out.append(f"| {row.contexts} | {row.n} | {_pct(row.corrected)} | {_pct(row.uncorrected)} |")
    out += ["", f"4. The analysis's comparison ({DEFAULT_RATIO_CI} interval): {CONTEXTS} contexts x both arms, "
                f"a = {THETA} x b, and a = b for the rest ({reps_wired} experiments per row)", ""]
    out += ["| a / b | values per test and context | coverage | target shift | width | a = b: winner named | holds in both arms | flips |",
            "|---|---|---|---|---|---|---|---|"]
    for row in wired:
        out.append(f"| {row.distribution} | {row.n} | {_pct(row.coverage)} | {row.target_shift_pct:.2f} % | {row.median_width_pct:.1f} % | "
                   f"{_pct(row.null_better)} | {_pct(row.null_holds)} | {_pct(row.null_flips)} |")
    return "\n".join(out)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few replications: a smoke run of a few seconds")
    parser.add_argument("--sizes", default="5,10,20,30,50,100", help="values per sample for the ratio, comma-separated (default %(default)s)")
    parser.add_argument("--reps", type=int, default=None, help="replications per coverage row (default 10000, --quick 500)")
    parser.add_argument("--reps-flips", type=int, default=None, help="experiments per flips row (default 2000, --quick 100)")
    parser.add_argument("--reps-wired", type=int, default=None, help="experiments per row of the analysis's comparison (default 1000, --quick 50)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=None, help="also write the results as JSON to this file")
    args = parser.parse_args(argv)
    reps = args.reps or (500 if args.quick else 10_000)
    reps_flips = args.reps_flips or (100 if args.quick else 2_000)
    reps_wired = args.reps_wired or (50 if args.quick else 1_000)
    rng = np.random.default_rng(args.seed)
    started = time.monotonic()

    ratio = [
        ratio_row(name, lambda g, s, f=f: THETA * f(g, s), f, THETA, size, size, reps, rng)
        for name, f in RATIO_DISTRIBUTIONS.items()
        for size in _ints(args.sizes)
    ]
    normal, exp_shift = RATIO_DISTRIBUTIONS["normal (CV 5%)"], RATIO_DISTRIBUTIONS["constant + exponential"]
    shapes = [
        ratio_row("normal (CV 5%) / constant + exponential", lambda g, s: THETA * normal(g, s), exp_shift, THETA, size, size, reps, rng)
        for size in _ints(args.sizes)
    ]
    effects = [
        effect_row(errors, k, r, reps, rng)
        for errors in (*EFFECT_ERRORS, MULTIPLICATIVE)
        for k in (2, 3)
        for r in (2, 3, 5, 10)
    ]
    flips = [flip_row(c, n, reps_flips, rng) for c, n in ((12, 10), (12, 30))]
    heavy = RATIO_DISTRIBUTIONS["heavy-tailed (1 + Pareto II, shape 1.5)"]
    lognormal = RATIO_DISTRIBUTIONS["lognormal (sigma 0.3)"]
    different = (CDFS["normal (CV 5%)"], CDFS["constant + exponential"])
    wired = [
        wired_row(name, a, b, n, reps_wired, rng, shapes)
        for name, a, b, shapes in (
            ("normal (CV 5%)", normal, normal, None),
            ("lognormal (sigma 0.3)", lognormal, lognormal, None),
            ("heavy-tailed", heavy, heavy, None),
            ("normal / constant + exponential", normal, exp_shift, different),
        )
        for n in (6, 20)
    ]
    print(render(ratio, shapes, effects, flips, wired, reps, reps_flips, reps_wired))
    print(f"\n({time.monotonic() - started:.0f} s)", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                {"ratio": [asdict(r) for r in ratio], "shapes": [asdict(r) for r in shapes], "effects": [asdict(r) for r in effects], "flips": [asdict(r) for r in flips],
                 "wired": [asdict(r) for r in wired]},
                fh,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
