"""What a two-sample rank test can detect with the values at hand: the least p-value any
arrangement of them between the samples gives, and the smallest shift of one sample that a
design of these sizes finds with a given power (by bootstrap, exactly per simulated experiment).

The test is the one the order analysis uses (stats/ranksum.py, stats/stratified.py): the
two-sample Kruskal-Wallis H (z^2 of the tie-corrected rank-sum z, p from chi2 with 1 df), or van
Elteren's stratified version, each p floored at one over the number of splits.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np
from scipy import special

from benchsage.stats._grouped import GroupedRanks, grouped_ranks
from benchsage.stats.ranksum import rank_sum_test
from benchsage.stats.stratified import van_elteren

POWER = 0.8  # the power a detectable shift is found with
REPS = 1000  # simulated experiments per comparison: the 80th percentile's level has Monte-Carlo sd 0.013
SEED = 33
CELLS_AT_ONCE = 1 << 22  # experiments x distinct values held at once (32 MiB a float64 array)


# --- the least p-value ----------------------------------------------------------------------


def extreme_labels(block: np.ndarray, starts: np.ndarray, counts: np.ndarray, n0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two extreme arrangements of rows sorted by (block, value): labels 0/1 (int8) that put
    sample 0 (n0[b] rows of block b) on each block's n0 smallest values, and on its n0 largest.

    These arrangements give the rank-sum statistics their largest value: within a block the
    mid-ranks of the pooled values, the sizes and the tie term are what they are whatever the
    arrangement, so Var(S) is fixed and H = S^2 / Var(S) is largest where |S| is, and S, a sum
    of n1 of the block's centred mid-ranks, is largest on its n1 largest and smallest on its n1
    smallest (the rest being sample 0). van Elteren's numerator sum_j w_j S_j with w_j > 0 is
    likewise extreme when every block is, all in the same direction.
    """
    block = np.asarray(block, dtype=np.int64)
    place = np.arange(len(block), dtype=np.int64) - starts[block]
    low = (place >= n0[block]).astype(np.int8)
    high = (place < counts[block] - n0[block]).astype(np.int8)
    return low, high


def _sorted_ranks(values: np.ndarray, group: np.ndarray, n_groups: int) -> GroupedRanks:
    """grouped_ranks of rows already sorted by (group, value), without sorting them again."""
    return grouped_ranks(values, group, n_groups, order=np.arange(len(values)))


def least_p_kruskal(values: np.ndarray, group: np.ndarray, n0: np.ndarray, n_groups: int,
                    ranks: GroupedRanks | None = None) -> np.ndarray:
    """The smallest p-value kruskal_2 gives each comparison over every arrangement of its values
    into samples of n0 (label 0) and the rest (label 1): kruskal_2's own statistic
    (rank_sum_test) on the two extreme arrangements (extreme_labels), the smaller p. values,
    group: sorted by (group, value); ranks: their grouped_ranks when the caller has them (for
    sorted rows: order = arange). NaN where kruskal_2 is undefined (a sample empty, every value
    equal).

    The extremes' rank sums come without labelling a row: S is the sum of sample 1's centred
    mid-ranks, the centred mid-ranks of a comparison sum to 0, so S is P(n1) with sample 1 on the
    smallest values and -P(n0) with it on the largest, P(k) the sum of the k smallest centred
    mid-ranks: k (k + 1) / 2 - k (N + 1) / 2 where no run of ties straddles the k-th value, and
    s (s + 1) / 2 + (k - s) r - k (N + 1) / 2 where the k-th value's run of ties (mid-rank r)
    starts after s values. Half-integers: exact in float64, so S and p are those kruskal_2
    computes from the labelled rows (tests/stats/test_detectable.py checks it by brute force).
    """
    v = np.asarray(values, dtype=np.float64)
    g = np.asarray(group, dtype=np.int64)
    gr = ranks if ranks is not None else _sorted_ranks(v, g, n_groups)
    n0 = np.asarray(n0, dtype=np.int64)
    n = gr.counts.astype(np.int64)
    n1 = n - n0
    s_low = _smallest_sum(gr.ranks_sorted, gr.starts, n1) - n1 * (n + 1) / 2.0
    s_high = -(_smallest_sum(gr.ranks_sorted, gr.starts, n0) - n0 * (n + 1) / 2.0)
    s = np.where(np.abs(s_low) >= np.abs(s_high), s_low, s_high)
    return rank_sum_test(s, n0, n1, gr.tie_term).pvalue


def _smallest_sum(ranks: np.ndarray, starts: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The sum of the mid-ranks of each comparison's k smallest values (0 where k = 0), from the
    mid-ranks of values sorted by (comparison, value)."""
    out = np.zeros(len(k))
    some = np.flatnonzero(k > 0)
    last = starts[some] + k[some] - 1  # the k-th value
    r = ranks[last]
    before = k[some] - 1  # values before the k-th one's run of ties: all of them, unless it ties with the one before
    tied = np.flatnonzero((k[some] > 1) & (ranks[np.maximum(last - 1, 0)] == r))
    for i in tied.tolist():  # a run straddles the boundary: search for its start in the comparison's ranks
        lo = int(starts[some[i]])
        before[i] = int(np.searchsorted(ranks[lo:int(last[i])], r[i], side="left"))
    out[some] = before * (before + 1) / 2.0 + (k[some] - before) * r
    return out


def least_p_van_elteren(values: np.ndarray, group: np.ndarray, stratum: np.ndarray, label: np.ndarray, n_groups: int,
                        n_strata: int) -> np.ndarray:
    """As least_p_kruskal for van Elteren's stratified test: rows sorted by (group, stratum,
    value), label the observed 0/1 of each row (only how many 0s each (group, stratum) block
    holds matters)."""
    stratum = np.asarray(stratum, dtype=np.int64)
    key = np.asarray(group, dtype=np.int64) * max(n_strata, 1) + stratum
    new = np.r_[True, key[1:] != key[:-1]] if len(key) else np.zeros(0, dtype=bool)
    block = np.cumsum(new) - 1
    n_blocks = int(block[-1]) + 1 if len(block) else 0
    counts = np.bincount(block, minlength=n_blocks).astype(np.int64)
    starts = np.cumsum(counts) - counts
    n0 = counts - np.bincount(block, weights=np.asarray(label) != 0, minlength=n_blocks).astype(np.int64)
    low, high = extreme_labels(block, starts, counts, n0)
    ranks = grouped_ranks(values, block, n_blocks, order=np.arange(len(values)))
    p_low = van_elteren(values, group, stratum, low, n_groups, n_strata, ranks=ranks).pvalue
    p_high = van_elteren(values, group, stratum, high, n_groups, n_strata, ranks=ranks).pvalue
    return np.fmin(p_low, p_high)


def least_p_untied(n0: np.ndarray | int, n1: np.ndarray | int, strata: int = 1) -> np.ndarray:
    """The least p-value of the analysis's test for untied values, n0 and n1 of them per
    stratum in each of `strata` strata (a fleet's workers): kruskal_2 with one stratum, van
    Elteren's test with more. Vectorised over the sizes (n0 and n1 broadcast)."""
    a, b = np.broadcast_arrays(np.atleast_1d(np.asarray(n0, dtype=np.int64)), np.atleast_1d(np.asarray(n1, dtype=np.int64)))
    size = a + b
    designs = len(size)
    per_design = size * strata
    group = np.repeat(np.arange(designs), per_design)
    offset = np.cumsum(per_design) - per_design
    place = np.arange(int(per_design.sum())) - offset[group]
    stratum = place // size[group]
    values = (place % size[group]).astype(np.float64)  # 0..size-1 in each stratum: untied
    if strata == 1:
        return least_p_kruskal(values, group, a, designs)
    label = (values >= a[group]).astype(np.int8)
    return least_p_van_elteren(values, group, stratum, label, designs, strata)


# --- the smallest detectable shift ----------------------------------------------------------


@dataclass(frozen=True)
class DetectableShift:
    """The shift of sample 0 that the design finds with `power`, each way: `up` and `down` are
    factors (ratio) or added amounts (difference) such that, in the bootstrap experiments, the
    test rejects "sample 0 larger" at any shift beyond `up` (above 1, resp. 0) in at least
    `power` of them, and "sample 0 smaller" at any shift beyond `down`. None: more than
    1 - power of the experiments cannot reject at any shift (too few values for the level)."""

    up: float | None
    down: float | None
    ratio: bool
    reps: int
    critical_count: int  # u: the test rejects "sample 0 larger" when U >= u


def critical_count(n0: int, n1: int, z_crit: float) -> int:
    """The smallest U = #{(i, j): x_i > y_j} at which the untied rank-sum z reaches z_crit:
    ceil(n0 n1 / 2 + z_crit sd0), sd0 = sqrt(n0 n1 (n0 + n1 + 1) / 12). By symmetry the test
    rejects "sample 0 smaller" when #{(i, j): x_i < y_j} reaches the same count. With ties in
    the data the test's tie-corrected sd is smaller and it rejects at a smaller count: the
    untied count is conservative."""
    sd0 = math.sqrt(n0 * n1 * (n0 + n1 + 1) / 12.0)
    return math.ceil(n0 * n1 / 2.0 + z_crit * sd0)


def detectable_shift(pool: np.ndarray, n0: int, n1: int, z_crit: float, *, ratio: bool, reps: int = REPS,
                     power: float = POWER, seed: int = SEED) -> DetectableShift:
    """The smallest shift of sample 0 that the two-sided rank-sum test at |z| >= z_crit finds
    with `power`, in experiments of n0 and n1 values drawn with replacement from `pool`.

    With x (n0 values, multiplied by f; or plus f when not `ratio`) and y (n1 values) drawn from
    the pool, the test rejects "x larger" iff U(f) = #{(i, j): f x_i > y_j} >= u
    (critical_count). U(f) only grows with f, so each experiment has a threshold f_e (the u-th
    smallest ratio y_j / x_i) beyond which it rejects, and the power at f is the share of
    experiments with f_e < f: the detectable factor is the ceil(power reps)-th smallest f_e.
    It is found without forming any f_e: by bisection on f, counting at each step the
    experiments that reject at f, where an experiment is the two vectors of how often each
    distinct pool value was drawn into x and y (so a step costs reps x distinct values, not
    reps x n0 x n1), and U(f) = sum_a cx[a] #{y below f v_a} comes from the cumulative counts of
    y at the place of f v_a among the distinct values. The same for "x smaller", U'(f) =
    #{(i, j): f x_i < y_j}. The threshold is found to 1e-4 of itself (log f for a ratio), far
    below the Monte-Carlo error of the percentile (about 1 % of the shift at 1,000 experiments).

    Ties: the bootstrap's repeated values and the pool's own ties are treated as untied (the
    untied critical count), which makes the shift conservative (the tie-corrected test the
    analysis uses rejects a little sooner). The opposite tail's rejections (negligible at
    these shifts) are not counted. The draws come from a generator seeded by `seed`, the
    pool's distinct values and their counts, and the sizes: the same data give the same
    numbers, whatever else is analysed with them.
    """
    values, counts = np.unique(np.asarray(pool, dtype=np.float64), return_counts=True)
    inverse = np.repeat(np.arange(len(values)), counts)  # the sorted pool's distinct values: its order does not matter
    u = critical_count(n0, n1, z_crit)
    if u > n0 * n1 or len(values) < 2:
        return DetectableShift(None, None, ratio, reps, u)
    if ratio and values[0] <= 0:
        raise ValueError("a ratio shift needs values above 0")
    entropy = [seed, zlib.crc32(values.tobytes()), zlib.crc32(counts.astype(np.int64).tobytes()), n0, n1, reps]
    rng = np.random.default_rng(entropy)
    cx = _draw_counts(rng, inverse, len(values), n0, reps).astype(np.float64)
    cy = _draw_counts(rng, inverse, len(values), n1, reps)
    below = np.zeros((reps, len(values) + 1))  # below[e, c]: y draws of experiment e among the c smallest values
    np.cumsum(cy, axis=1, out=below[:, 1:])
    need = math.ceil(power * reps - 1e-9)

    def shifted(f: float) -> np.ndarray:
        return values * f if ratio else values + f

    def up_count(f: float) -> int:
        place = np.searchsorted(values, shifted(f), side="left")  # distinct values strictly below f v_a
        return _rejecting(cx, below, place, u, n1, larger=True)

    def down_count(f: float) -> int:
        place = np.searchsorted(values, shifted(f), side="right")  # distinct values at or below f v_a
        return _rejecting(cx, below, place, u, n1, larger=False)

    low, high = _bracket(values, ratio)
    up = _bisect(up_count, need, low, high, ratio, rising=True)
    down = _bisect(down_count, need, low, high, ratio, rising=False)
    return DetectableShift(up, down, ratio, reps, u)


def _draw_counts(rng: np.random.Generator, inverse: np.ndarray, k: int, n: int, reps: int) -> np.ndarray:
    """reps experiments of n values drawn with replacement from the pool (inverse: each pool
    value's distinct value), as how often each of the k distinct values was drawn: (reps, k)."""
    drawn = inverse[rng.integers(0, len(inverse), size=(reps, n))]
    drawn += np.arange(reps)[:, None] * k
    return np.bincount(drawn.ravel(), minlength=reps * k).reshape(reps, k)


def _rejecting(cx: np.ndarray, below: np.ndarray, place: np.ndarray, u: int, n1: int, *, larger: bool) -> int:
    """How many experiments reject at the shift that puts each distinct value a at `place`
    among them: U = sum_a cx[a] (y drawn below it), or for "smaller" sum_a cx[a] (y drawn
    above it), against u. In blocks of experiments (CELLS_AT_ONCE)."""
    reps = len(cx)
    per = max(1, CELLS_AT_ONCE // max(cx.shape[1], 1))
    found = 0
    for start in range(0, reps, per):
        part = slice(start, start + per)
        under = below[part][:, place]
        if not larger:
            under = n1 - under
        found += int(np.count_nonzero(np.einsum("ek,ek->e", cx[part], under) >= u))
    return found


def _bracket(values: np.ndarray, ratio: bool) -> tuple[float, float]:
    """Shifts at which every experiment has U = 0 (low) and U = n0 n1 (high), each way: f x
    below every value, above every value."""
    if ratio:
        spread = float(values[-1] / values[0])
        return (1.0 - 1e-12) / spread, (1.0 + 1e-12) * spread
    span = float(values[-1] - values[0])
    return -span * (1.0 + 1e-12), span * (1.0 + 1e-12)


def _bisect(count, need: int, low: float, high: float, ratio: bool, *, rising: bool) -> float | None:
    """The boundary of {f: count(f) >= need}: its infimum when count rises with f, its supremum
    when it falls, from the side where count(f) >= need. Bisection on log f for a ratio (on f
    otherwise) until the bracket is within 1e-4 of the shift (log f, or f), or 1e-12 of the
    starting bracket, or a float wide. None when no f reaches `need`."""
    hit, miss = (high, low) if rising else (low, high)
    if not (math.isfinite(low) and math.isfinite(high)) or (ratio and low <= 0):
        return None  # values that span more than a float (1e308 beside 1e-3): no shift to search for
    if count(hit) < need:
        return None
    if count(miss) >= need:  # cannot happen with the bracket of _bracket; said for safety
        return miss
    a, b = (math.log(miss), math.log(hit)) if ratio else (miss, hit)
    floor = 1e-12 * abs(b - a)
    for _ in range(200):
        mid = (a + b) / 2.0
        if not (min(a, b) < mid < max(a, b)) or abs(b - a) <= max(1e-4 * abs(b), floor):
            break
        if count(math.exp(mid) if ratio else mid) >= need:
            b = mid
        else:
            a = mid
    return math.exp(b) if ratio else b


def shift_percent(shift: DetectableShift, median: float) -> float | None:
    """The larger of the two detectable shifts, in percent: (up - 1) and (1 - down) x 100 for a
    ratio, up and -down as a percentage of |median| for a difference (None where the median is
    0). An effect of that size either way is found with at least the power."""
    if shift.up is None or shift.down is None:
        return None
    if shift.ratio:
        up, down = (shift.up - 1.0) * 100.0, (1.0 - shift.down) * 100.0
    else:
        if median == 0 or not math.isfinite(median):
            return None
        up, down = shift.up / abs(median) * 100.0, -shift.down / abs(median) * 100.0
    return max(up, down, 0.0)


def critical_z(alpha_test: float) -> float:
    """|z| at which the two-sided p of the rank-sum test (chi2 with 1 df, H = z^2) is alpha_test."""
    return float(-special.ndtri(alpha_test / 2.0))
