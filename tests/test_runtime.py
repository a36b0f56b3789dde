"""The settings of a short-lived analysing process (benchsage._runtime), each in a child process."""

from __future__ import annotations

import os
import subprocess
import sys


def _child(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    environ.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environ).stdout.strip()


HUGEPAGE = (
    "import numpy\n"
    "try:\n    from numpy._core.multiarray import _get_madvise_hugepage\n"
    "except ImportError:\n    from numpy.core.multiarray import _get_madvise_hugepage\n"
    "from benchsage._runtime import no_hugepage_advice\n"
    "print(no_hugepage_advice(), _get_madvise_hugepage())"
)


def test_hugepage_advice_is_turned_off() -> None:
    assert _child(HUGEPAGE) == "True False"


def test_hugepage_setting_of_the_user_is_left_alone() -> None:
    # numpy reads the variable at import; benchsage must not override the user's choice.
    assert _child(HUGEPAGE, NUMPY_MADVISE_HUGEPAGE="1") == "False True"
    assert _child(HUGEPAGE, NUMPY_MADVISE_HUGEPAGE="0") == "True False"


def test_import_in_background_imports_in_the_background_and_survives_a_missing_module() -> None:
    code = (
        "import sys\n"
        "from benchsage._runtime import import_in_background\n"
        "assert 'colorsys' not in sys.modules\n"
        "import_in_background('no_such_module_xyz', 'colorsys').result(10)\n"
        "print('colorsys' in sys.modules, 'no_such_module_xyz' in sys.modules)"
    )
    assert _child(code) == "True False"


def test_blank_run_labels_are_found_in_the_string_buffers() -> None:
    import pyarrow as pa

    from benchsage.store.importers._csv import _blank_codes

    labels = ["0", "", " ", "\t\n", "\u3000", "a b", " x ", "\u00e9", "\u00a0", "12", "\x1f"]
    expected = [i for i, s in enumerate(labels) if not s.strip()]
    assert _blank_codes(pa.array(labels)).tolist() == expected == [1, 2, 3, 4, 8, 10]
    # A slice (non-zero offset) and an all-empty dictionary (no data buffer).
    assert _blank_codes(pa.array(labels).slice(2, 5)).tolist() == [0, 1, 2]
    assert _blank_codes(pa.array(["", ""])).tolist() == [0, 1]
    assert _blank_codes(pa.array([], type=pa.string())).tolist() == []
