"""A pytest plugin that records every spec the suite loads, for the writer's round trip
(test_write.py reads the corpus it makes, data/specs_from_tests.jsonl). Run it again when the
suite's specs change:

    BENCHSAGE_HARVEST=/tmp/harvest PYTHONPATH=src:tests/spec python -m pytest -p harvest_specs tests/spec tests/design ...
    python tests/spec/harvest_specs.py /tmp/harvest > tests/spec/data/specs_from_tests.jsonl

Each spec is kept once, with the generator's commands (a generator is not run again) and its
folder written as {folder}, which the round trip puts back as a folder of its own.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

FOLDER = "{folder}"


def pytest_configure(config: pytest.Config) -> None:
    prefix = os.environ.get("BENCHSAGE_HARVEST")
    if not prefix:
        return
    from benchsage.spec import load, model

    out = open(f"{prefix}.{os.getpid()}.jsonl", "a", encoding="utf-8")  # one file per xdist worker

    def recorded(**kwargs: Any) -> model.Spec:
        spec = model.Spec(**kwargs)
        folder = os.path.dirname(spec.path)
        out.write(json.dumps({"text": spec.text.replace(folder, FOLDER), "generated": list(spec.generated)}) + "\n")
        out.flush()
        return spec

    load.Spec = recorded  # type: ignore[misc, assignment]  # load_spec builds its Spec by this name


def main(prefix: str) -> None:
    """The recorded specs, each once, in a stable order."""
    folder = os.path.dirname(prefix) or "."
    seen: dict[str, str] = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith(os.path.basename(prefix) + ".") and name.endswith(".jsonl"):
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                for line in fh:
                    record = json.loads(line)
                    seen.setdefault(json.dumps(record, sort_keys=True), line)
    for key in sorted(seen):
        sys.stdout.write(json.dumps(json.loads(key), sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
