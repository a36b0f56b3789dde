"""Treatments: the spec's contexts, observer levels and factor levels crossed into cells, each run
carrying one, drawn from the seed.

Contexts are drawn as Mytkowicz et al. generate measurement contexts, but stratified so that
few of them still span each dimension: a byte range is cut into `variants` equal strata with one
value drawn in each, a list of choices (CPU lists, ASLR on/off) is repeated to `variants` and
shuffled, a link order is a fresh permutation of the objects; each dimension is permuted on its
own, so dimensions are crossed at random rather than moving together.

Runs are assigned to cells in randomized complete blocks: pairs of runs (one per order arm,
interleaved as Algorithm 1 does) go through the cells in a fresh random order per block, so
every cell is measured in both arms equally often (when runs per arm is a multiple of the
cells) and no cell's runs all come first. Everything uses its own random stream derived from
the seed: a spec without treatments plans exactly what it planned before.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchsage.spec import ContextSpec, Treatments
from benchsage.vocabulary import CONTEXT, FACTOR_PREFIX, OBSERVER


@dataclass(frozen=True)
class Context:
    """One generated measurement context; None for a dimension the spec does not vary."""

    index: int
    env_bytes: int | None = None
    cwd_bytes: int | None = None
    cpus: tuple[int, ...] | None = None
    aslr: bool | None = None
    link_order: tuple[str, ...] | None = None

    @property
    def label(self) -> str:
        return f"c{self.index + 1}"

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"context": self.label}
        for key in ("env_bytes", "cwd_bytes", "aslr"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.cpus is not None:
            out["cpus"] = ",".join(str(c) for c in self.cpus)
        if self.link_order is not None:
            out["link_order"] = list(self.link_order)
        return out


@dataclass(frozen=True)
class Treatment:
    """What a run carries besides its arm and order."""

    index: int
    context: Context | None = None
    observer: str | None = None  # the instrumentation level's name
    factors: tuple[tuple[str, str], ...] = ()  # (factor, level) in declared order

    def labels(self) -> dict[str, str]:
        """The cell's level of each dimension it varies: "context", "observer", "factor:NAME"."""
        out: dict[str, str] = {}
        if self.context is not None:
            out[CONTEXT] = self.context.label
        if self.observer is not None:
            out[OBSERVER] = self.observer
        for name, level in self.factors:
            out[FACTOR_PREFIX + name] = level
        return out

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.context is not None:
            out.update(self.context.describe())
        if self.observer is not None:
            out["observer"] = self.observer
        if self.factors:
            out["factors"] = dict(self.factors)
        return out

    @classmethod
    def from_record(cls, index: int, described: dict[str, Any]) -> "Treatment":
        """The cell a journal recorded (its describe()), as it was drawn."""
        context = None
        if "context" in described:
            cpus = described.get("cpus")
            link_order = described.get("link_order")
            context = Context(
                index=int(str(described["context"]).removeprefix("c")) - 1,
                env_bytes=described.get("env_bytes"),
                cwd_bytes=described.get("cwd_bytes"),
                cpus=None if cpus is None else tuple(int(c) for c in str(cpus).split(",")),
                aslr=described.get("aslr"),
                link_order=None if link_order is None else tuple(link_order),
            )
        factors = tuple((str(k), str(v)) for k, v in (described.get("factors") or {}).items())
        return cls(index=index, context=context, observer=described.get("observer"), factors=factors)


def _rng(seed: int, what: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}\0treatments\0{what}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:8], "big")))


def _stratified(rng: np.random.Generator, low: int, high: int, n: int) -> list[int]:
    """n integers in [low, high], one drawn in each of n equal strata, in random order."""
    edges = np.linspace(low, high + 1, n + 1)
    values = [int(min(high, np.floor(rng.uniform(edges[i], edges[i + 1])))) for i in range(n)]
    return [values[i] for i in rng.permutation(n)]


def _balanced(rng: np.random.Generator, choices: tuple[Any, ...], n: int) -> list[Any]:
    tiled = [choices[i % len(choices)] for i in range(n)]
    return [tiled[i] for i in rng.permutation(n)]


def draw_contexts(spec: ContextSpec, seed: int) -> tuple[Context, ...]:
    n = spec.variants
    columns: dict[str, list[Any]] = {}
    if spec.env_bytes is not None:
        columns["env_bytes"] = _stratified(_rng(seed, "env_bytes"), *spec.env_bytes, n)
    if spec.cwd_bytes is not None:
        columns["cwd_bytes"] = _stratified(_rng(seed, "cwd_bytes"), *spec.cwd_bytes, n)
    if spec.cpus is not None:
        columns["cpus"] = _balanced(_rng(seed, "cpus"), spec.cpus, n)
    if spec.aslr is not None:
        columns["aslr"] = _balanced(_rng(seed, "aslr"), spec.aslr, n)
    if spec.link_order is not None:
        rng = _rng(seed, "link_order")
        objects = spec.link_order.objects
        columns["link_order"] = [tuple(objects[i] for i in rng.permutation(len(objects))) for _ in range(n)]
    return tuple(Context(index=i, **{k: v[i] for k, v in columns.items()}) for i in range(n))


def treatment_cells(treatments: Treatments, seed: int) -> tuple[Treatment, ...]:
    """Every combination of context, observer level and factor levels, in a fixed order
    (contexts outermost, factors innermost, the first level of each factor first)."""
    contexts: tuple[Context | None, ...] = draw_contexts(treatments.context, seed) if treatments.context else (None,)
    levels: tuple[str | None, ...] = tuple(name for name, _ in treatments.observer.levels) if treatments.observer else (None,)
    factor_cells = list(itertools.product(*[[(f.name, level) for level in f.levels] for f in treatments.factors]))
    cells = []
    for context, level, factors in itertools.product(contexts, levels, factor_cells):
        cells.append(Treatment(index=len(cells), context=context, observer=level, factors=tuple(factors)))
    return tuple(cells)


def assign_cells(cells: int, pairs: int, seed: int) -> list[int]:
    """The cell of each pair of runs: randomized complete blocks of the cells."""
    if cells <= 1:
        return [0] * pairs
    rng = _rng(seed, "blocks")
    out: list[int] = []
    while len(out) < pairs:
        out.extend(int(i) for i in rng.permutation(cells))
    return out[:pairs]
