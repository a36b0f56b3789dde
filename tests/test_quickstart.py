"""The README's main job: the quickstart experiment, run as the README says, shows the order
effect its README promises (a real page-cache carry-over, not a simulated one)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timing  # decisions taken from measured times

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quickstart_finds_the_page_cache_order_effect(tmp_path: Path) -> None:
    spec = ROOT / "examples" / "quickstart" / "experiment.toml"
    readme = (ROOT / "README.md").read_text()
    assert "benchsage run examples/quickstart/experiment.toml" in readme
    done = subprocess.run(
        [sys.executable, "-m", "benchsage", "run", str(spec), "-o", str(tmp_path / "out"), "--json"],
        cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    tests = {t["test"]: t for t in doc["tests"] if t["primary"]}
    assert set(tests) == {"read-1m", "compress", "read-64k", "sort"}
    assert all(t["n_fixed"] == 30 and t["n_random"] == 30 for t in tests.values())
    assert doc["order_matters"] is True
    # The fixed order makes read-1m always cold (slower than in random orders) and read-64k
    # always warm (faster): both differences are significant after correction.
    assert tests["read-1m"]["significant"] and tests["read-1m"]["median_fixed"] > tests["read-1m"]["median_random"]
    assert tests["read-64k"]["significant"] and tests["read-64k"]["median_fixed"] < tests["read-64k"]["median_random"]
    assert tests["read-64k"]["median_fixed"] * 2 < tests["read-1m"]["median_fixed"]  # the fixed arm's false conclusion
