"""A pytest plugin that records every spec the suite loads, in its own process and in the
`python -m benchsage` processes its tests start, for the writer's round trip (test_write.py
reads the corpus it makes, data/specs_from_tests.jsonl). Run it again when the suite's specs
change:

    BENCHSAGE_HARVEST=/tmp/harvest PYTHONPATH=$PWD/src:$PWD/tests/spec python -m pytest -p harvest_specs tests/spec ...
    python tests/spec/harvest_specs.py /tmp/harvest > tests/spec/data/specs_from_tests.jsonl

Each spec is kept once, with the generator's commands (a generator is not run again) and its
folder written as {folder}, which the round trip puts back as a folder of its own.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from typing import Any

import pytest

FOLDER = "{folder}"
_PYTEST_TMP = re.compile(r"/tmp/pytest-of-[^/]+/pytest-[0-9]+/")  # one run's temporary folders, another's the next time
# Started by a test, `python -m benchsage ...` records too: Python imports this at start-up.
_SITECUSTOMIZE = """import sys
if "benchsage" in getattr(sys, "orig_argv", ()):
    import harvest_specs
    harvest_specs.install()
"""


def install() -> None:
    """Record each Spec load_spec makes into BENCHSAGE_HARVEST.<pid>.jsonl."""
    prefix = os.environ.get("BENCHSAGE_HARVEST")
    if not prefix:
        return
    from benchsage.spec import load, model

    out = open(f"{prefix}.{os.getpid()}.jsonl", "a", encoding="utf-8")

    def recorded(**kwargs: Any) -> model.Spec:
        spec = model.Spec(**kwargs)
        folder = os.path.dirname(spec.path)
        out.write(json.dumps({"text": spec.text.replace(folder, FOLDER), "generated": list(spec.generated)}) + "\n")
        out.flush()
        return spec

    load.Spec = recorded  # type: ignore[misc, assignment]  # load_spec builds its Spec by this name


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get("BENCHSAGE_HARVEST"):
        return
    install()
    if "BENCHSAGE_HARVEST_SITE" not in os.environ:  # once, in xdist's controlling process; its workers inherit it
        site = tempfile.mkdtemp(prefix="harvest-site-")
        with open(os.path.join(site, "sitecustomize.py"), "w", encoding="utf-8") as fh:
            fh.write(_SITECUSTOMIZE)
        os.environ["BENCHSAGE_HARVEST_SITE"] = site
        here = os.path.dirname(os.path.abspath(__file__))
        os.environ["PYTHONPATH"] = os.pathsep.join([site, here, os.environ.get("PYTHONPATH", "")])


def main(prefix: str) -> None:
    """The recorded specs, each once, in a stable order."""
    folder = os.path.dirname(prefix) or "."
    seen: set[str] = set()
    for name in sorted(os.listdir(folder)):
        if name.startswith(os.path.basename(prefix) + ".") and name.endswith(".jsonl"):
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                seen |= {_PYTEST_TMP.sub("/tmp/pytest/", json.dumps(json.loads(line), sort_keys=True))
                         for line in fh}
    sys.stdout.writelines(line + "\n" for line in sorted(seen))


if __name__ == "__main__":
    main(sys.argv[1])
