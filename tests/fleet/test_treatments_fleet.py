"""Treatments on a fleet: every ssh worker applies its runs' contexts, observer levels and
factor levels on its own host (the agent pads the environment and the working directory, sets
ASLR, and the build runs there), recorded per run."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

PROBE = r"""import json, os
host = os.environ.get("BENCHSAGE_FAKE_HOST")
print(json.dumps({"host": host, "pad": len(os.environ["BENCHSAGE_ENV_PAD"]), "cwd": os.getcwd(),
                  "persona": open("/proc/self/personality").read().strip(), "level": os.environ.get("LEVEL"),
                  "built": open("built-%s.txt" % host).read().strip()}))
"""


def test_each_worker_applies_its_runs_treatments_on_its_host(fake_fleet, tmp_path: Path) -> None:
    fleet = fake_fleet(2)
    (tmp_path / "probe.py").write_text(PROBE)
    workers = "".join(
        f'[[worker]]\nkind = "ssh"\nhost = "{h}"\nssh_config = "{fleet.ssh_config}"\nboot_id = \'{fleet.boot_id_command}\'\n'
        for h in ("node1", "node2")
    )
    spec = tmp_path / "experiment.toml"
    spec.write_text(
        f'[experiment]\nname = "fleet-treatments"\nruns = 4\nseed = 8\n{workers}'
        f'[[test]]\nname = "probe"\ncommand = "python3 {tmp_path}/probe.py"\n'
        '[[test]]\nname = "idle"\ncommand = "true"\n'
        '[context]\nvariants = 2\nenv_bytes = [10, 2000]\ncwd_bytes = [5, 100]\naslr = [false, true]\n'
        'link_order = {objects = ["x.o", "y.o"], build = "echo {objects} > built-$BENCHSAGE_FAKE_HOST.txt"}\n'
        '[[factor]]\nname = "mode"\nlevels = ["a", "b"]\nenv = "LEVEL"\n'
    )
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    conn = sqlite3.connect(tmp_path / "out" / "journal.sqlite")
    try:
        cells = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'treatments'").fetchone()[0])
        runs = {i: (w, t) for i, w, t in conn.execute("SELECT id, worker, treatment FROM runs")}
        trials = conn.execute("SELECT t.run_id, t.stdout_tail FROM trials t JOIN tests s ON s.id = t.test_id "
                              "WHERE s.name = 'probe' AND t.status = 'ok'").fetchall()
        builds = conn.execute("SELECT a.worker, u.what FROM setups u JOIN attempts a ON a.id = u.attempt_id").fetchall()
    finally:
        conn.close()
    assert len(trials) == len(runs) == 2 * 2 * 4
    for run_id, out in trials:
        worker, t = runs[run_id]
        cell, got = cells[t], json.loads(bytes(out).decode())
        assert got["host"] == worker
        assert got["pad"] == cell["env_bytes"] and len(got["cwd"]) == len(str(tmp_path)) + cell["cwd_bytes"]
        assert (int(got["persona"], 16) & 0x0040000 != 0) == (not cell["aslr"])
        assert got["built"] == " ".join(cell["link_order"]) and got["level"] == cell["factors"]["mode"]
    assert set(Counter(w for w, _ in builds)) == {"node1", "node2"}  # each host built for itself
