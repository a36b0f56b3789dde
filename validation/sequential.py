"""Monte-Carlo validation of benchsage's sequential stopping (benchsage.stats.sequential).

Simulates order experiments whose truth is known — m tests, up to N runs per arm, K looks — and
runs them through the same code `SequentialDesign.decide` uses (`mann_whitney_z`, `shift_ci`,
`decide_step`), vectorised over thousands of experiments. It prints, as markdown tables:

1. the family-wise error over tests and looks with no order effect at all, for several value
   distributions (continuous, heavy-tailed, discrete with many ties), numbers of tests, N and
   looks, with both spending functions and both corrections;
2. the whole procedure (no-effect decisions and stopping included) with no order effect:
   family-wise error and the runs it takes;
3. power and average runs against the fixed design when one test has an order effect;
4. how often a test whose order effect is exactly min_effect is wrongly decided "no-effect";
5. decide = "verdict" (stop when an effect is found in some test, or none in any) against the
   default "each" on the same experiments: family-wise error, power, runs, undecided tests.

    python validation/sequential.py [--reps 10000] [--seed 1] [--quick] [--json FILE]
                                    [--sections null,full,power,boundary,verdict,api]

Each experiment's values: test j's fixed-arm and random-arm values are independent draws
M (1 + cv e) from the named distribution (M = 100, cv = 2 %, e with median 0); an order effect
of x % adds M x / (100 - x) to the fixed arm: a shift of the location by x % of the fixed arm's
median, the reference of benchsage's no-effect rule and of its delta % (fixed - random) / fixed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any, Callable

import numpy as np
from scipy import stats as sps

from benchsage.stats.ranksum import mann_whitney_z
from benchsage.stats.sequential import (DECIDED_EFFECT, DECIDED_NO_EFFECT, UNDECIDED, SequentialDesign, decide_step, relative_interval,
                                        settled, stops)
from benchsage.stats.shift import shift_ci

ALPHA = 0.05
MEDIAN = 100.0
CV = 0.02
CHUNK_VALUES = 4_000_000  # values per simulated batch: keeps memory near 100 MB


def _lognormal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return (np.exp(0.5 * rng.standard_normal(shape)) - 1.0) / 0.5  # right-skewed, median 0


def _pareto(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.pareto(1.5, shape) - (2.0 ** (1 / 1.5) - 1.0)  # Lomax(1.5): infinite variance, median 0


NOISE: dict[str, Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]] = {
    "normal": lambda rng, shape: rng.standard_normal(shape),
    "lognormal": _lognormal,
    "t3": lambda rng, shape: rng.standard_t(3, shape) / math.sqrt(3.0),
    "pareto": _pareto,
    "discrete": lambda rng, shape: rng.standard_normal(shape),  # rounded to integers below
    "poisson": lambda rng, shape: rng.standard_normal(shape),  # replaced below
}
DESCRIPTION = {
    "normal": "normal, CV 2 %",
    "lognormal": "lognormal (sigma 0.5, right-skewed), scaled to 2 % of the median",
    "t3": "Student t with 3 df (heavy tails), sd 2 % of the median",
    "pareto": "Lomax/Pareto with shape 1.5 (infinite variance), scaled to 2 % of the median",
    "discrete": "normal, CV 2 %, rounded to integers (about 11 distinct values: heavy ties)",
    "poisson": "Poisson with mean 2 (5-6 distinct values: extreme ties)",
}


def draw(dist: str, rng: np.random.Generator, shape: tuple[int, ...], effect_pct: np.ndarray | float = 0.0, cv: float = CV) -> np.ndarray:
    """Values of shape (..., 2, n): [..., 0, :] the fixed arm (shifted by effect_pct % of the
    median, broadcast over the leading axes), [..., 1, :] the random arm; noise scaled by cv."""
    e = np.asarray(effect_pct, dtype=np.float64) / 100.0
    if dist == "poisson":
        x = rng.poisson(2.0, shape).astype(np.float64)
        shift = 2.0 * e / (1.0 - e)
    else:
        x = MEDIAN * (1.0 + cv * NOISE[dist](rng, shape))
        # x % of the fixed arm's own median (M + shift), the reference benchsage's rule uses
        shift = MEDIAN * e / (1.0 - e)
    x[..., 0, :] += np.asarray(shift)[..., None] if np.ndim(shift) else shift
    if dist in ("discrete", "poisson"):
        x = np.round(x)
    return x


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(sps.beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(sps.beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def _chunks(reps: int, per_rep_values: int) -> list[int]:
    per = max(1, CHUNK_VALUES // max(per_rep_values, 1))
    return [min(per, reps - s) for s in range(0, reps, per)]


# --------------------------------------------------------------------------------------------
# 1. Family-wise error of the efficacy decisions, all looks, no order effect


def null_efficacy(dist: str, m: int, n_max: int, looks: list[int], reps: int, rng: np.random.Generator,
                  spendings: list[str], corrections: list[str]) -> dict[tuple[int, str, str], int]:
    """Experiments (out of reps) with at least one test decided "effect" at some look.

    No-effect decisions and stopping are left out: they can only remove rejections (a test
    decided no-effect is never rejected, and Holm's step-down only rejects less when a p-value
    grows), so this is an upper bound, experiment by experiment, of the whole procedure's error.
    """
    designs = {(k, s, c): SequentialDesign(n_max, k, ALPHA, c, 2.0, s) for k in looks for s in spendings for c in corrections}
    prefixes = sorted({p for d in designs.values() for p in d.look_points()})
    hits = dict.fromkeys(designs, 0)
    for size in _chunks(reps, m * 2 * n_max):
        x = draw(dist, rng, (size, m, 2, n_max))
        z = {p: np.abs(mann_whitney_z(x[:, :, 0, :p], x[:, :, 1, :p]).z) for p in prefixes}
        none = np.zeros((size, m), bool)
        for key, d in designs.items():
            state = np.zeros((size, m), np.int8)
            zs = [z[p] for p in d.look_points()]
            for k in range(d.looks):
                state, _ = decide_step(d, k, np.stack(zs[: k + 1], axis=2), none, state)
            hits[key] += int((state == DECIDED_EFFECT).any(axis=1).sum())
    return hits


# --------------------------------------------------------------------------------------------
# The whole procedure: efficacy, no-effect, stopping


def simulate_procedure(design: SequentialDesign, x: np.ndarray, *, designs: list[SequentialDesign] | None = None) -> dict[str, Any]:
    """Run `design` (and any other `designs` with the same looks, spending and rule, e.g. the
    other correction) on values x of shape (reps, m, 2, N). Returns, per design, the final states
    (reps, m), the look index at which each test was decided (-1: never) and at which each
    experiment stopped: the first look where its rule (`design.rule`: every test decided, or the
    verdict settled) lets it stop, after which nothing more is decided."""
    reps, m, _, _ = x.shape
    all_designs = [design] + list(designs or [])
    points = design.look_points()
    crit = design.critical(m)
    zs = []
    out = {}
    states = {id(d): np.zeros((reps, m), np.int8) for d in all_designs}
    decided_at = {id(d): np.full((reps, m), -1) for d in all_designs}
    stop_look = {id(d): np.full(reps, design.looks - 1) for d in all_designs}
    stopped = {id(d): np.zeros(reps, bool) for d in all_designs}
    for k, p in enumerate(points):
        f, r = x[:, :, 0, :p], x[:, :, 1, :p]
        zs.append(np.abs(mann_whitney_z(f, r).z))
        if p < design.min_values:
            zs[-1][:] = np.nan
        open_any = np.zeros((reps, m), bool)
        for d in all_designs:
            open_any |= (states[id(d)] == UNDECIDED) & ~stopped[id(d)][:, None]
        within = np.zeros((reps, m), bool)
        if p >= design.min_values and open_any.any():
            rows, cols = np.nonzero(open_any)
            ci = shift_ci(f[rows, cols], r[rows, cols], crit[k])
            med = np.median(f[rows, cols], axis=1)
            lo, hi = relative_interval(ci.low, ci.high, med)
            with np.errstate(invalid="ignore"):
                within[rows, cols] = (lo >= -design.min_effect) & (hi <= design.min_effect)
        abs_z = np.stack(zs, axis=2)
        for d in all_designs:
            before, halted = states[id(d)], stopped[id(d)]
            after, _ = decide_step(d, k, abs_z, within, before)
            after = np.where(halted[:, None], before, after)  # a stopped experiment decides nothing more
            decided_at[id(d)][(before == UNDECIDED) & (after != UNDECIDED)] = k
            states[id(d)] = after
            now = ~halted & stops(after, d.rule)
            stop_look[id(d)][now] = k
            stopped[id(d)] = halted | now
    for d in all_designs:
        out[d.correction] = {"state": states[id(d)], "decided_at": decided_at[id(d)], "stop_look": stop_look[id(d)],
                             "stop_runs": np.asarray(points)[stop_look[id(d)]]}
    return out


def full_null(dist: str, m: int, n_max: int, k: int, reps: int, rng: np.random.Generator, spending: str) -> dict[str, Any]:
    designs = [SequentialDesign(n_max, k, ALPHA, c, 2.0, spending) for c in ("bonferroni", "holm")]
    acc = {c: {"fwer": 0, "runs": 0.0, "early": 0, "no_effect": 0} for c in ("bonferroni", "holm")}
    for size in _chunks(reps, m * 2 * n_max * 8):
        x = draw(dist, rng, (size, m, 2, n_max))
        res = simulate_procedure(designs[0], x, designs=designs[1:])
        for c, r in res.items():
            acc[c]["fwer"] += int((r["state"] == DECIDED_EFFECT).any(axis=1).sum())
            acc[c]["runs"] += float(r["stop_runs"].sum())
            acc[c]["early"] += int((r["stop_runs"] < n_max).sum())
            acc[c]["no_effect"] += int((r["state"] == DECIDED_NO_EFFECT).sum())
    return {c: {"fwer": a["fwer"] / reps, "fwer_ci": clopper_pearson(a["fwer"], reps), "mean_runs": a["runs"] / reps,
                "stopped_early": a["early"] / reps, "no_effect_share": a["no_effect"] / (reps * m)} for c, a in acc.items()}


def check_api(dist: str, m: int, n_max: int, k: int, reps: int, rng: np.random.Generator, effect: float, rule: str = "each") -> int:
    """Run SequentialDesign.decide experiment by experiment on data the vectorised simulation
    also decides; return how many experiments disagree (must be 0)."""
    effects = np.zeros(m)
    effects[0] = effect
    x = draw(dist, rng, (reps, m, 2, n_max), effects)
    bad = 0
    for correction in ("bonferroni", "holm"):
        d = SequentialDesign(n_max, k, ALPHA, correction, 2.0, rule=rule)
        sim = simulate_procedure(d, x)[correction]
        for i in range(reps):
            data_at = [{j: (x[i, j, 0, :p], x[i, j, 1, :p]) for j in range(m)} for p in d.look_points()]
            looks = d.run(data_at)
            codes = [{None: UNDECIDED, "effect": DECIDED_EFFECT, "no-effect": DECIDED_NO_EFFECT}[t.decided] for t in looks[-1].tests]
            if list(sim["state"][i]) != codes or looks[-1].runs != sim["stop_runs"][i]:
                bad += 1
    return bad


def compare_rules(dist: str, effects: np.ndarray, cvs: np.ndarray, n_max: int, k: int, reps: int, rng: np.random.Generator,
                  spending: str = "obrien-fleming", min_effect: float = 2.0) -> dict[str, Any]:
    """decide = "each" and decide = "verdict" on the same experiments: m tests, test j with an
    order effect of effects[j] % and noise cvs[j]. Per correction and rule: the family-wise
    error (some test without an effect decided "effect"), the power (some test with one decided
    "effect"), the mean runs per arm, the share stopped early, the verdicts and the share of
    tests left undecided; and, experiment by experiment, how often "verdict" made a false
    "effect" that "each" did not, or stopped later (both must be 0)."""
    effects, cvs = np.asarray(effects, dtype=np.float64), np.asarray(cvs, dtype=np.float64)
    m = len(effects)
    null = effects == 0
    keys = [(c, rule) for c in ("bonferroni", "holm") for rule in ("each", "verdict")]
    acc = {key: {"fwer": 0, "found": 0, "runs": 0.0, "early": 0, "effect": 0, "no_effect": 0, "undecided": 0} for key in keys}
    extra = {c: {"false_effect_only_verdict": 0, "verdict_later": 0} for c in ("bonferroni", "holm")}
    for size in _chunks(reps, m * 2 * n_max * 8):
        x = draw(dist, rng, (size, m, 2, n_max), effects, cvs[:, None, None])
        res = {}
        for rule in ("each", "verdict"):
            ds = [SequentialDesign(n_max, k, ALPHA, c, min_effect, spending, rule=rule) for c in ("bonferroni", "holm")]
            res[rule] = simulate_procedure(ds[0], x, designs=ds[1:])
        for c, rule in keys:
            r, a = res[rule][c], acc[(c, rule)]
            effect = r["state"] == DECIDED_EFFECT
            verdict = settled(r["state"])
            a["fwer"] += int(effect[:, null].any(axis=1).sum())
            a["found"] += int(effect[:, ~null].any(axis=1).sum())
            a["runs"] += float(r["stop_runs"].sum())
            a["early"] += int((r["stop_runs"] < n_max).sum())
            a["effect"] += int((verdict == DECIDED_EFFECT).sum())
            a["no_effect"] += int((verdict == DECIDED_NO_EFFECT).sum())
            a["undecided"] += int((r["state"] == UNDECIDED).sum())
        for c in ("bonferroni", "holm"):
            each, verd = res["each"][c], res["verdict"][c]
            false_each = (each["state"][:, null] == DECIDED_EFFECT).any(axis=1)
            false_verdict = (verd["state"][:, null] == DECIDED_EFFECT).any(axis=1)
            extra[c]["false_effect_only_verdict"] += int((false_verdict & ~false_each).sum())
            extra[c]["verdict_later"] += int((verd["stop_runs"] > each["stop_runs"]).sum())
    out: dict[str, Any] = {}
    for (c, rule), a in acc.items():
        out[f"{c}|{rule}"] = {"fwer": a["fwer"] / reps, "fwer_ci": clopper_pearson(a["fwer"], reps), "power": a["found"] / reps,
                              "mean_runs": a["runs"] / reps, "stopped_early": a["early"] / reps, "verdict_effect": a["effect"] / reps,
                              "verdict_no_effect": a["no_effect"] / reps, "undecided_share": a["undecided"] / (reps * m)}
    out["paired"] = extra
    return out


# --------------------------------------------------------------------------------------------
# 3. Power and runs against the fixed design


def power(dist: str, m: int, n_max: int, k: int, effect: float, reps: int, rng: np.random.Generator, spending: str, cv: float = CV) -> dict[str, Any]:
    """Test 0 has an order effect of `effect` %, the other m - 1 none."""
    designs = [SequentialDesign(n_max, k, ALPHA, c, 2.0, spending) for c in ("bonferroni", "holm")]
    effects = np.zeros(m)
    effects[0] = effect
    acc = {c: {"found": 0, "fixed": 0, "runs": 0.0, "early": 0, "wrong_no": 0, "null_no": 0, "fwer_null": 0} for c in ("bonferroni", "holm")}
    z_fixed = sps.norm.isf(ALPHA / m / 2)
    for size in _chunks(reps, m * 2 * n_max * 8):
        x = draw(dist, rng, (size, m, 2, n_max), effects, cv)
        res = simulate_procedure(designs[0], x, designs=designs[1:])
        zf = np.abs(mann_whitney_z(x[:, :, 0, :], x[:, :, 1, :]).z)
        p = 2 * sps.norm.sf(zf)
        fixed = {"bonferroni": zf[:, 0] >= z_fixed, "holm": _holm_reject(p, ALPHA)[:, 0]}
        for c, r in res.items():
            a = acc[c]
            a["found"] += int((r["state"][:, 0] == DECIDED_EFFECT).sum())
            a["fixed"] += int(fixed[c].sum())
            a["runs"] += float(r["stop_runs"].sum())
            a["early"] += int((r["stop_runs"] < n_max).sum())
            a["wrong_no"] += int((r["state"][:, 0] == DECIDED_NO_EFFECT).sum())
            a["null_no"] += int((r["state"][:, 1:] == DECIDED_NO_EFFECT).sum())
            a["fwer_null"] += int((r["state"][:, 1:] == DECIDED_EFFECT).any(axis=1).sum())
    return {c: {"power": a["found"] / reps, "power_fixed": a["fixed"] / reps, "mean_runs": a["runs"] / reps,
                "stopped_early": a["early"] / reps, "affected_no_effect": a["wrong_no"] / reps,
                "others_no_effect": a["null_no"] / (reps * max(m - 1, 1)), "others_effect": a["fwer_null"] / reps}
            for c, a in acc.items()}


def _holm_reject(p: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step-down on each row of p (reps, m)."""
    order = np.argsort(p, axis=1)
    ps = np.take_along_axis(p, order, axis=1)
    m = p.shape[1]
    ok = np.logical_and.accumulate(ps <= alpha / (m - np.arange(m)), axis=1)
    out = np.zeros_like(ok)
    np.put_along_axis(out, order, ok, axis=1)
    return out


# --------------------------------------------------------------------------------------------
# 4. No-effect at the boundary: the true order effect is exactly min_effect


def boundary(dist: str, m: int, n_max: int, k: int, effect: float, reps: int, rng: np.random.Generator, min_effect: float = 2.0) -> dict[str, Any]:
    """One test with an order effect of `effect` % in a family of m (its boundaries and CIs at
    alpha / m; Bonferroni efficacy). Shares of experiments in which it is decided no-effect (the
    procedure: efficacy first), decided effect, and in which its repeated CI lies within
    +-min_effect % at some look whatever efficacy says (the no-effect rule alone: its error is
    what the bound alpha / (2m) is about)."""
    d = SequentialDesign(n_max, k, ALPHA, "bonferroni", min_effect)
    crit = d.critical(m)
    no = eff = ever = 0
    for size in _chunks(reps, 2 * n_max * 8):
        x = draw(dist, rng, (size, 2, n_max), effect)
        state = np.zeros((size, 1), np.int8)
        ever_within = np.zeros(size, bool)
        zs = []
        for look, p in enumerate(d.look_points()):
            f, r = x[:, 0, :p], x[:, 1, :p]
            zs.append(np.abs(mann_whitney_z(f, r).z)[:, None])
            within = np.zeros((size, 1), bool)
            if p >= d.min_values:
                ci = shift_ci(f, r, crit[look])
                lo, hi = relative_interval(ci.low, ci.high, np.median(f, axis=1))
                with np.errstate(invalid="ignore"):
                    within[:, 0] = (lo >= -min_effect) & (hi <= min_effect)
            else:
                zs[-1][:] = np.nan
            ever_within |= within[:, 0]
            # The family's other m - 1 tests are not simulated: c_k(alpha / m) is this test's
            # Bonferroni boundary whatever they do.
            state, _ = _decide_one(d, look, np.stack(zs, axis=2), within, state, crit)
        no += int((state == DECIDED_NO_EFFECT).sum())
        eff += int((state == DECIDED_EFFECT).sum())
        ever += int(ever_within.sum())
    return {"no_effect": no / reps, "no_effect_ci": clopper_pearson(no, reps), "effect": eff / reps,
            "within": ever / reps, "within_ci": clopper_pearson(ever, reps), "bound": ALPHA / m / 2}


def _decide_one(d: SequentialDesign, look: int, abs_z: np.ndarray, within: np.ndarray, state: np.ndarray, crit: tuple[float, ...]) -> tuple[np.ndarray, None]:
    open_ = state == UNDECIDED
    with np.errstate(invalid="ignore"):
        cross = open_ & (abs_z[:, :, look] >= crit[look])
    new = state.copy()
    new[cross] = DECIDED_EFFECT
    new[open_ & ~cross & within] = DECIDED_NO_EFFECT
    return new, None


# --------------------------------------------------------------------------------------------
# Reporting


def pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f} %"


def pct_ci(x: float, ci: tuple[float, float], digits: int = 1) -> str:
    return f"{100 * x:.{digits}f} % [{100 * ci[0]:.{digits}f}, {100 * ci[1]:.{digits}f}]"


# The scenarios of section 5: (name, effects %, noise CV per test, N, looks, min_effect %).
VERDICT_SCENARIOS: list[tuple[str, list[float], list[float], int, int, float]] = [
    ("no effect, 5 tests", [0.0] * 5, [CV] * 5, 50, 5, 2.0),
    ("no effect, 20 tests", [0.0] * 20, [CV] * 20, 50, 5, 2.0),
    ("no effect, 5 tests, one with CV 10 %", [0.0] * 5, [CV] * 4 + [0.10], 50, 5, 2.0),
    ("1 % in one of 5 tests", [1.0] + [0.0] * 4, [CV] * 5, 50, 5, 2.0),
    ("2 % in one of 5 tests", [2.0] + [0.0] * 4, [CV] * 5, 50, 5, 2.0),
    ("5 % in one of 5 tests", [5.0] + [0.0] * 4, [CV] * 5, 50, 5, 2.0),
    ("5 % in 3 of 5 tests (Holm's strong control)", [5.0] * 3 + [0.0] * 2, [CV] * 5, 50, 5, 2.0),
    ("carry-over: victim 20 %, CV 10 % test, quiet test", [20.0, 0.0, 0.0], [CV, 0.10, CV], 40, 4, 5.0),
]


def verdict_section(reps: int, rng: np.random.Generator, quick: bool, started: float) -> dict[str, Any]:
    """5. decide = "verdict" against "each" on the same experiments."""
    print(f"## 5. decide = \"verdict\" against \"each\" on the same experiments ({reps:,} per row; normal noise, O'Brien-Fleming)\n")
    print("| scenario | N | looks | min_effect | correction | rule | FWER [95 % CI] | found | mean runs per arm | stopped early | "
          "verdict effect / no-effect | tests undecided |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    out: dict[str, Any] = {}
    scenarios = VERDICT_SCENARIOS if not quick else [VERDICT_SCENARIOS[i] for i in (0, 4, 7)]
    for name, effects, cvs, n, k, min_effect in scenarios:
        r = compare_rules("normal", np.array(effects), np.array(cvs), n, k, reps, rng, min_effect=min_effect)
        out[name] = r
        for c in ("bonferroni", "holm"):
            for rule in ("each", "verdict"):
                v = r[f"{c}|{rule}"]
                found = pct(v["power"]) if any(effects) else ""
                print(f"| {name} | {n} | {k} | {min_effect:g} % | {c} | {rule} | {pct_ci(v['fwer'], v['fwer_ci'], 2)} | {found} | "
                      f"{v['mean_runs']:.1f} | {pct(v['stopped_early'])} | {pct(v['verdict_effect'])} / {pct(v['verdict_no_effect'])} | "
                      f"{pct(v['undecided_share'])} |")
        print(f"  (verdict {name} done, {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    worse = sum(r["paired"][c][key] for r in out.values() for c in ("bonferroni", "holm") for key in ("false_effect_only_verdict", "verdict_later"))
    print(f"\nExperiments in which \"verdict\" made a false effect decision that \"each\" did not, or stopped later: {worse}.\n")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10_000, help="experiments per configuration (default 10,000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="a reduced grid with 1,000 experiments per configuration")
    ap.add_argument("--json", help="write every number to this file")
    ap.add_argument("--sections", default="null,full,power,boundary,verdict,api")
    args = ap.parse_args(argv)
    reps = 1000 if args.quick else args.reps
    sections = set(args.sections.split(","))
    rng = np.random.default_rng(args.seed)
    results: dict[str, Any] = {"reps": reps, "seed": args.seed, "alpha": ALPHA}
    started = time.perf_counter()
    dists = ["normal", "lognormal", "t3", "pareto", "discrete", "poisson"]
    ms = [1, 5, 20]
    ns = [10, 20, 30, 40, 50]
    ks = [2, 3, 4, 5]
    spendings = ["obrien-fleming", "pocock"]
    corrections = ["bonferroni", "holm"]
    if args.quick:
        dists, ms, ns = ["normal", "discrete"], [1, 5], [20, 50]
    mc = 3 * math.sqrt(ALPHA * (1 - ALPHA) / reps)

    if "null" in sections:
        print(f"## 1. Family-wise error with no order effect ({reps:,} experiments per cell; efficacy decisions at every look)\n")
        grid: dict[str, Any] = {}
        for dist in dists:
            for m in ms:
                for n in ns:
                    hits = null_efficacy(dist, m, n, [k for k in ks if k <= n], reps, rng, spendings, corrections)
                    for (k, s, c), h in hits.items():
                        grid[f"{dist}|{m}|{n}|{k}|{s}|{c}"] = h / reps
            print(f"  ({dist} done, {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        results["null"] = grid
        for s in spendings:
            for c in corrections:
                print(f"### {s}, {c}: largest FWER over looks K = {ks[0]}..{ks[-1]}, by N runs per arm\n")
                print("| distribution | tests | " + " | ".join(f"N = {n}" for n in ns) + " |")
                print("|---|---|" + "---|" * len(ns))
                for dist in dists:
                    for m in ms:
                        cells = []
                        for n in ns:
                            v = max(grid[f"{dist}|{m}|{n}|{k}|{s}|{c}"] for k in ks if k <= n)
                            cells.append(pct(v, 2) + (" (!)" if v > ALPHA + mc else ""))
                        print(f"| {dist} | {m} | " + " | ".join(cells) + " |")
                print()
        # Hundreds of cells: some land above alpha + 2 MC sd by chance alone. Each such cell is
        # estimated again from 5 x reps fresh experiments.
        recheck = {}
        for key, v in grid.items():
            if v > ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps):
                dist, m, n, k, s, c = key.split("|")
                h = null_efficacy(dist, int(m), int(n), [int(k)], 5 * reps, rng, [s], [c])[(int(k), s, c)]
                recheck[key] = (v, h / (5 * reps), clopper_pearson(h, 5 * reps))
        results["null_recheck"] = recheck
        if recheck:
            print(f"Cells above alpha + 2 MC sd, estimated again from {5 * reps:,} fresh experiments:\n")
            print("| distribution | tests | N | looks | spending | correction | first estimate | again [95 % CI] |")
            print("|---|---|---|---|---|---|---|---|")
            for key, (v, again, ci) in recheck.items():
                print("| " + " | ".join(key.split("|")) + f" | {pct(v, 2)} | {pct_ci(again, ci, 2)} |")
            print()
        worst = max(grid.items(), key=lambda kv: kv[1])
        over = [key for key, v in grid.items() if v > ALPHA + mc]
        print(f"Largest of all {len(grid)} cells: {pct(worst[1], 2)} ({worst[0]}); cells above alpha + 3 MC sd ({pct(ALPHA + mc, 2)}): {len(over)}\n")
        results["null_worst"] = worst
        results["null_over"] = over
        print("### FWER by N and K, discrete values, 20 tests, O'Brien-Fleming, Bonferroni\n")
        dd = "discrete" if "discrete" in dists else dists[0]
        mm = max(ms)
        print("| N | " + " | ".join(f"K = {k}" for k in ks) + " |")
        print("|---|" + "---|" * len(ks))
        for n in ns:
            print(f"| {n} | " + " | ".join(pct(grid[f"{dd}|{mm}|{n}|{k}|obrien-fleming|bonferroni"], 2) if k <= n else "" for k in ks) + " |")
        print()

    if "full" in sections:
        print(f"## 2. The whole procedure with no order effect (no-effect decisions and stopping; min_effect 2 %, {reps:,} experiments)\n")
        print("| distribution | tests | N | looks | spending | correction | FWER [95 % CI] | mean runs per arm | stopped early | tests decided no-effect |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        full = {}
        for dist in (["normal", "t3", "discrete"] if not args.quick else ["normal"]):
            for m in ([5, 20] if not args.quick else [5]):
                for s in spendings:
                    r = full_null(dist, m, 50, 5, reps, rng, s)
                    full[f"{dist}|{m}|{s}"] = r
                    for c, v in r.items():
                        print(f"| {dist} | {m} | 50 | 5 | {s} | {c} | {pct_ci(v['fwer'], v['fwer_ci'], 2)} | {v['mean_runs']:.1f} | {pct(v['stopped_early'])} | {pct(v['no_effect_share'])} |")
            print(f"  (full {dist} done, {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        results["full"] = full
        print()

    if "power" in sections:
        print(f"## 3. Power and runs: one of 5 tests has an order effect ({reps:,} experiments per row; N = 50, 5 looks, min_effect 2 %)\n")
        print("| noise | spending | correction | effect | found, sequential | found, fixed N = 50 | mean runs per arm | stopped early | affected test decided no-effect | other tests: no-effect / any effect |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        pw = {}
        for dist, cv in ([("normal", 0.02), ("normal", 0.01), ("t3", 0.02)] if not args.quick else [("normal", 0.02)]):
            for s in spendings:
                for effect in (0.0, 1.0, 2.0, 3.0, 5.0):
                    r = power(dist, 5, 50, 5, effect, reps, rng, s, cv)
                    pw[f"{dist}|{cv}|{s}|{effect}"] = r
                    for c, v in r.items():
                        print(f"| {dist}, CV {100 * cv:g} % | {s} | {c} | {effect:g} % | {pct(v['power'])} | {pct(v['power_fixed'])} | {v['mean_runs']:.1f} | {pct(v['stopped_early'])} | {pct(v['affected_no_effect'], 2)} | {pct(v['others_no_effect'])} / {pct(v['others_effect'], 2)} |")
            print(f"  (power {dist} {cv} done, {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        results["power"] = pw
        print()

    if "boundary" in sections:
        print(f"## 4. No-effect when the order effect is exactly min_effect = 2 % ({reps:,} experiments per row)\n")
        print("| distribution | tests (family) | N | looks | decided no-effect [95 % CI] | CI within the margin at some look, efficacy ignored [95 % CI] | bound alpha / (2m) | decided effect |")
        print("|---|---|---|---|---|---|---|---|")
        bd = {}
        for dist in (["normal", "lognormal", "t3", "pareto"] if not args.quick else ["normal"]):
            for m in (1, 5):
                for n, k in ((50, 5), (50, 1), (200, 5)):
                    r = boundary(dist, m, n, k, 2.0, reps, rng)
                    bd[f"{dist}|{m}|{n}|{k}"] = r
                    print(f"| {dist} | {m} | {n} | {k} | {pct_ci(r['no_effect'], r['no_effect_ci'], 2)} | {pct_ci(r['within'], r['within_ci'], 2)} | {pct(r['bound'], 2)} | {pct(r['effect'])} |")
            print(f"  (boundary {dist} done, {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        results["boundary"] = bd
        print()
        print("Reaching no-effect when there is none: share decided no-effect at effect 0 % and 1 %\n")
        print("| distribution | N | looks | effect 0 % | effect 1 % |")
        print("|---|---|---|---|---|")
        for dist in (["normal", "lognormal", "t3", "pareto"] if not args.quick else ["normal"]):
            for n in (50, 200):
                a = boundary(dist, 1, n, 5, 0.0, reps, rng)
                b = boundary(dist, 1, n, 5, 1.0, reps, rng)
                bd[f"{dist}|1|{n}|5|reach"] = (a, b)
                print(f"| {dist} | {n} | 5 | {pct(a['no_effect'])} | {pct(b['no_effect'])} |")
        print()

    if "verdict" in sections:
        results["verdict"] = verdict_section(reps, rng, args.quick, started)

    if "api" in sections:
        n_api = 100 if args.quick else 300
        bad = check_api("normal", 4, 30, 3, n_api, rng, 3.0) + check_api("discrete", 4, 30, 3, n_api, rng, 3.0)
        bad_verdict = check_api("normal", 4, 30, 3, n_api, rng, 3.0, "verdict")
        print(f"SequentialDesign.decide, run experiment by experiment, disagrees with the vectorised simulation in {bad} of {4 * n_api} "
              f"experiments, and with decide = \"verdict\" in {bad_verdict} of {2 * n_api}.\n")
        results["api_disagreements"] = bad + bad_verdict

    elapsed = time.perf_counter() - started
    print(f"({elapsed:.0f} s)")
    results["seconds"] = elapsed
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
    return 0


if __name__ == "__main__":
    sys.exit(main())
