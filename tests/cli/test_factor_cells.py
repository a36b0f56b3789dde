"""Factors and contexts stratify the order analysis, end to end: `benchsage run` of a spec whose
factor makes a test 5x slower at one level gives each test row its cells (levels, n, medians),
names the cells in the method, and presents one worker as one worker; contexts are cells too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SERVERS = """
[experiment]
name = "servers"
runs = 10
seed = 33
alpha = 0.001

[[factor]]
name = "server"
levels = ["python", "nginx"]
env = "SERVER"

[[test]]
name = "request"
command = 'if [ "$SERVER" = python ]; then sleep 0.1; else sleep 0.02; fi'

[[test]]
name = "draw"
command = 'n=$(od -An -N2 -tu2 /dev/urandom); if [ "$SERVER" = python ]; then s=5; else s=1; fi; echo $(( (1000 + n % 1000) * s ))'
[[test.metric]]
name = "drawn"
regex = '([0-9]+)'
"""

CONTEXTS = """
[experiment]
name = "contexts"
runs = 6
seed = 4

[context]
variants = 2
env_bytes = [0, 4096]

[[test]]
name = "draw"
command = 'echo $(( 1000 + $(od -An -N2 -tu2 /dev/urandom) % 1000 ))'
[[test.metric]]
name = "drawn"
regex = '([0-9]+)'
"""


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsage", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


def run(tmp_path: Path, spec: str) -> dict:
    (tmp_path / "experiment.toml").write_text(spec)
    done = bench("run", "experiment.toml", "-o", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_a_factor_5x_apart_gives_each_row_its_cells(tmp_path: Path) -> None:
    doc = run(tmp_path, SERVERS)
    combined = doc["combined"]
    assert (combined["workers"], combined["cells"]) == (1, 2) and combined["method"].startswith("stratified by treatment cell: van Elteren")
    assert "workers" not in doc and "fleet" not in doc["diagnostics"] and "identity" not in doc["diagnostics"]
    rows = {(r["test"], r["metric"]): r for r in doc["tests"]}
    for row in rows.values():  # every metric of every test: 10 runs per arm, 5 in each cell
        assert [c["cell"] for c in row["cells"]] == [{"server": "python"}, {"server": "nginx"}]
        assert [(c["n_fixed"], c["n_random"]) for c in row["cells"]] == [(5, 5), (5, 5)] and row["n_fixed"] == 10
    python, nginx = rows[("request", "wall_time")]["cells"]
    # A trial lasts at least its sleep: 0.1 s for python, 0.02 s for nginx.
    assert min(python["median_fixed"], python["median_random"]) >= 0.1
    assert 0.02 <= nginx["median_fixed"] < python["median_fixed"] and 0.02 <= nginx["median_random"] < python["median_random"]
    # What `draw` prints: 5000-9995 at python, 1000-1999 at nginx, whatever the order.
    python, nginx = rows[("draw", "drawn")]["cells"]
    assert all(5000 <= python[k] < 10000 and 1000 <= nginx[k] < 2000 for k in ("median_fixed", "median_random"))
    assert all(python[k][0] >= 5000 and nginx[k][1] < 2000 for k in ("ci_fixed", "ci_random") if python[k] and nginx[k])
    # Its values do not depend on the order (and the level is 0.001): no order effect, as pooled.
    draw = rows[("draw", "drawn")]
    assert draw["primary"] and draw["significant"] is False and draw["kw_p"] is not None
    shown = bench("analyze", "out", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "van Elteren's test stratified by 2 treatment cells" in shown.stdout
    assert "Workers:" not in shown.stdout and "Identity" not in shown.stdout


@pytest.mark.slow
def test_contexts_are_cells(tmp_path: Path) -> None:
    doc = run(tmp_path, CONTEXTS)
    assert (doc["combined"]["workers"], doc["combined"]["cells"]) == (1, 2) and "workers" not in doc
    (row,) = [r for r in doc["tests"] if r["primary"]]
    # The context alone makes the cell: its env_bytes is one of its settings, not a cell of its own.
    contexts = [c["cell"] for c in row["cells"]]
    assert [list(c) for c in contexts] == [["context"], ["context"]] and len({c["context"] for c in contexts}) == 2
    assert [(c["n_fixed"], c["n_random"]) for c in row["cells"]] == [(3, 3), (3, 3)]
    assert all(1000 <= c[k] < 2000 for c in row["cells"] for k in ("median_fixed", "median_random"))
