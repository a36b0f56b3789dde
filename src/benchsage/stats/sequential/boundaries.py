"""Group-sequential boundaries: the critical value of each look that spends exactly what the
spending function allows, under the joint distribution of the looks' statistics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import numpy as np
from scipy import special

from benchsage.stats.sequential.spending import alpha_spending, check_alpha, check_spending

# Beyond |z| = 12 the standard normal density is below 1e-31: the numerical integration treats
# a wider continuation region as the whole line.
_Z_MAX = 12.0


@dataclass(frozen=True)
class Boundaries:
    """Two-sided efficacy boundaries of one group-sequential test at level `alpha`.

    information: the information fractions t_1 < ... < t_K (t_K <= 1).
    critical: c_k; the test rejects at look k when |Z_k| >= c_k (inf: nothing can be rejected).
    spent: cumulative alpha spent by look k, alpha(t_k) (the probability, under no effect, of
        rejecting at or before look k).
    nominal: 2 (1 - Phi(c_k)), the two-sided p-value a single look at c_k corresponds to.
    """

    alpha: float
    spending: str
    information: tuple[float, ...]
    critical: tuple[float, ...]
    spent: tuple[float, ...]
    nominal: tuple[float, ...]


def spending_boundaries(information: Sequence[float], alpha: float, spending: str = "obrien-fleming") -> Boundaries:
    """Exact two-sided boundaries for the canonical joint distribution of Z_1..Z_K.

    Under no effect, Z_k = S_k / sqrt(t_k) where S is Brownian motion at information time t:
    Z_1..Z_K are standard normal with corr(Z_j, Z_k) = sqrt(t_j / t_k) (j < k), the large-sample
    joint distribution of standardized rank statistics on accumulating data (Jennison &
    Turnbull, "Group Sequential Methods with Applications to Clinical Trials", 2000, ch. 3 and
    12). c_k solves

        P(|Z_1| < c_1, ..., |Z_{k-1}| < c_{k-1}, |Z_k| >= c_k) = alpha(t_k) - alpha(t_{k-1}),

    computed by the recursive numerical integration of Armitage, McPherson & Rowe (1969) as set
    out by Jennison & Turnbull ch. 19: the sub-density of Z_k on the continuation region,

        g_1(z) = phi(z),
        g_k(z) = int_{-c_{k-1}}^{c_{k-1}} g_{k-1}(u) sqrt(t_k / d) phi((z sqrt(t_k) - u sqrt(t_{k-1})) / sqrt(d)) du,

    with d = t_k - t_{k-1}, by Simpson's rule on a grid finer than the transition kernel, and
    c_k by root finding on the exit probability. Accurate to about 1e-6 in c_k; with K = 5 equal
    looks at alpha = 0.05 the O'Brien-Fleming-type boundaries are 4.877, 3.357, 2.680, 2.290,
    2.031 (the published values, e.g. of the ld98 program: Reboussin, DeMets, Kim & Lan,
    Controlled Clinical Trials 21, 2000), the Pocock-type ones 2.438, 2.427, 2.410, 2.397,
    2.386; tests/stats/sequential/test_boundaries.py also checks them against scipy's multivariate normal
    distribution function.
    """
    t = check_information(information)
    return _boundaries(t, float(alpha), spending)


@lru_cache(maxsize=4096)
def _boundaries(t: tuple[float, ...], alpha: float, spending: str) -> Boundaries:
    check_alpha(alpha)
    check_spending(spending)
    spent = alpha_spending(np.array(t), alpha, spending)
    k_max = len(t)
    critical: list[float] = []
    # Grid step: an eighth of the narrowest transition kernel (in units of the earlier z), at
    # most 0.05; against a grid five times finer, c_k moves by less than 5e-7.
    kernel_sd = [math.sqrt((t[k] - t[k - 1]) / t[k - 1]) for k in range(1, k_max)]
    step = min([0.05] + [s / 8.0 for s in kernel_sd])
    z = w = g = None  # grid, Simpson weights and sub-density on the previous continuation region
    previous_spent = 0.0
    for k in range(k_max):
        target = float(spent[k]) - previous_spent
        previous_spent = float(spent[k])
        if k == 0:
            c = float(-special.ndtri(target / 2.0)) if target > 0 else math.inf
        else:
            assert z is not None and w is not None and g is not None
            sd = math.sqrt(t[k] - t[k - 1])
            a, b = math.sqrt(t[k - 1]) / sd, math.sqrt(t[k]) / sd
            mass = w * g

            def exit_probability(c: float) -> float:
                # P(|Z_k| >= c and no earlier exit) = sum over u of g(u) [P(up) + P(down)]
                return float(mass @ (special.ndtr(a * z - b * c) + special.ndtr(-a * z - b * c)))

            c = _solve_critical(exit_probability, target)
        critical.append(c)
        if k + 1 < k_max:
            half = min(c, _Z_MAX)
            n_int = max(2, 2 * math.ceil(half / step))
            z_new = np.linspace(-half, half, n_int + 1)
            w_new = np.full(n_int + 1, 2.0)
            w_new[1::2] = 4.0
            w_new[0] = w_new[-1] = 1.0
            w_new *= (2.0 * half / n_int) / 3.0
            if k == 0:
                g_new = np.exp(-0.5 * z_new * z_new) / math.sqrt(2.0 * math.pi)
            else:
                assert z is not None and w is not None and g is not None
                sd = math.sqrt(t[k] - t[k - 1])
                scale = math.sqrt(t[k]) / sd
                x = (z_new[:, None] * math.sqrt(t[k]) - z[None, :] * math.sqrt(t[k - 1])) / sd
                g_new = (np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)) @ (w * g) * scale
            z, w, g = z_new, w_new, g_new
    nominal = tuple(float(2.0 * special.ndtr(-c)) if math.isfinite(c) else 0.0 for c in critical)
    return Boundaries(
        alpha=alpha,
        spending=spending,
        information=t,
        critical=tuple(critical),
        spent=tuple(float(s) for s in spent),
        nominal=nominal,
    )


def _solve_critical(exit_probability: Any, target: float) -> float:
    """The c at which exit_probability(c) (decreasing in c) equals target, on a log scale so
    that tiny targets (alpha / m with many tests, early O'Brien-Fleming looks) keep their
    relative precision."""
    if target <= 0:
        return math.inf
    log_target = math.log(target)

    def f(c: float) -> float:
        return math.log(max(exit_probability(c), 1e-300)) - log_target

    lo, hi = 0.0, 2.0
    if f(lo) <= 0:  # everything left already exits at c = 0 (cannot happen for alpha < 1/2)
        return 0.0
    while f(hi) > 0:
        lo, hi = hi, hi * 1.5
        if hi > 60:
            return math.inf
    from scipy import optimize  # here: 0.1 s of import time every analysis would pay

    return float(optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-12))


def check_information(information: Sequence[float]) -> tuple[float, ...]:
    t = tuple(float(x) for x in information)
    if not t:
        raise ValueError("need at least one look")
    if any(not 0.0 < x <= 1.0 for x in t) or any(b <= a for a, b in zip(t, t[1:])):
        raise ValueError(f"information fractions must increase strictly within (0, 1], got {list(t)}")
    return t
