"""Tables with known treatment effects for the tests of the treatment analyses: runs alternating
between the arms, each in one cell (context x observer level x factor levels)."""

from __future__ import annotations

import itertools

import numpy as np

from benchsage.analyze.treatments import CompareRequest, TreatmentOptions
from benchsage.store.table import TrialTable

ENV = [0, 1400, 2800, 4200, 5600, 7000, 8400, 9800]  # env_bytes of contexts c1..c8
CPUS = ["0", "1", "0", "1", "1", "0", "1", "0"]


def build(values: dict[str, object], *, contexts: int = 8, runs: int = 24, observer: tuple[str, ...] = (), factors: int = 0,
          seed: int = 1, cv: float = 0.01, **meta: object) -> TrialTable:
    """Runs alternating between the arms, each in one cell (context x observer level x factor
    levels), every test once per run; values[test](context, level, factors, rng) is the median.
    Factors are "A", "B", ... with levels "lo", "hi"."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "metric")}
    names = [chr(ord("A") + j) for j in range(factors)]
    dims: dict[str, list] = {}
    cells = list(itertools.product(range(contexts) if contexts else [None], observer or [None], itertools.product(("lo", "hi"), repeat=factors)))
    for run in range(runs * 2):
        context, level, levels = cells[(run // 2) % len(cells)]
        arm = ("fixed", "random")[run % 2]
        order = list(values) if arm == "fixed" else list(rng.permutation(list(values)))
        for position, test in enumerate(order):
            median = values[test](context, level, dict(zip(names, levels)))  # type: ignore[operator]
            cols["test"].append(test)
            cols["arm"].append(arm)
            cols["value"].append(median * (1 + cv * rng.standard_normal()))
            cols["run"].append(run)
            cols["position"].append(position)
            cols["metric"].append("wall_time")
            row: dict[str, str] = {}
            if context is not None:
                row.update({"context": f"c{context + 1}", "context:env_bytes": str(ENV[context % 8] + context // 8),
                            "context:cpus": CPUS[context % 8]})
            if level is not None:
                row["observer"] = level
            row.update({f"factor:{n}": lv for n, lv in zip(names, levels)})
            for k, v in row.items():
                dims.setdefault(k, []).append(v)
    return TrialTable.from_columns(**cols, treatments=dims or None, **meta)


def const(x: float):
    return lambda c, o, f: x


def env_time(c, o, f):  # 10 ms plus 1 ms per 1000 bytes of environment
    return 0.010 + ENV[c % 8] / 1e6


def claims(*pairs: tuple[str, ...]) -> TreatmentOptions:
    return TreatmentOptions(compare=tuple(CompareRequest(*p) for p in pairs))


def columns_of(table: TrialTable) -> dict[str, object]:
    """from_columns arguments that rebuild `table` (test, arm, metric, value, run, position, treatments)."""
    frame = table.to_pandas()
    treatments = {d: [None if v != v else str(v) for v in frame[d].astype(object)] for d in table.dims}
    return {"test": frame.test.astype(str).tolist(), "arm": frame.arm.astype(str).tolist(), "metric": frame.metric.astype(str).tolist(),
            "value": table.value, "run": table.run, "position": table.position, "treatments": treatments}


def fleet_table(medians: dict[str, dict[str, float]], runs: int = 20, seed: int = 3) -> TrialTable:
    """Each worker runs every test once per run, the arms alternating; medians[worker][test]."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "metric", "worker")}
    for w, (worker, tests) in enumerate(medians.items()):
        for run in range(2 * runs):
            arm = ("fixed", "random")[run % 2]
            order = list(tests) if arm == "fixed" else list(rng.permutation(list(tests)))
            for position, test in enumerate(order):
                cols["test"].append(test)
                cols["arm"].append(arm)
                cols["value"].append(tests[test] * (1 + 0.01 * rng.standard_normal()))
                cols["run"].append(w * 1000 + run)
                cols["position"].append(position)
                cols["metric"].append("wall_time")
                cols["worker"].append(worker)
    return TrialTable.from_columns(**cols)
