"""The pipeline imports one way (DESIGN.md "Pipeline and layout"): spec -> design -> execute ->
store -> analyze -> report -> cli; stats depends on nothing of ours; nothing imports the
package root for more than __version__."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "benchsage"

# What each room may import from benchsage (besides itself and the package root's __version__).
ALLOWED = {
    "stats": set(),
    "design": {"spec", "treatments", "errors", "store", "stats"},  # planning reads earlier experiments (durations, pilots)
    "execute": {"spec", "treatments", "design", "store", "stats", "errors"},
    "store": {"stats", "errors", "spec", "design"},
    "analyze": {"stats", "store", "errors", "design", "_runtime"},  # _runtime: a leaf (stdlib only), like errors
    "report": {"analyze", "stats", "store", "errors", "execute", "spec", "treatments", "design"},
}


# The one import against the flow, on purpose: `benchsage.analyze(...)` (the notebook API) calls
# benchsage.api when the subpackage itself is called; nothing of analyze's own work uses it.
EXCEPTIONS = {("analyze/__init__.py", "benchsage.api")}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every `import benchsage...` / `from benchsage... import ...`."""
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names if a.name.split(".")[0] == "benchsage"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "benchsage":
            out.append((node.lineno, node.module or "", [a.name for a in node.names]))
    return out


def _room(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


@pytest.mark.parametrize("room", sorted(ALLOWED))
def test_a_room_imports_only_the_rooms_before_it(room: str) -> None:
    wrong = []
    for path in _modules():
        if _room(path) != room:
            continue
        for line, module, _ in _imports(path):
            parts = module.split(".")
            if len(parts) < 2:
                continue  # the package root: see the next test
            if (str(path.relative_to(PACKAGE)), module) in EXCEPTIONS:
                continue
            if parts[1] != room and parts[1] not in ALLOWED[room]:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports {module}")
    assert not wrong, wrong


def test_nothing_imports_the_package_root_for_more_than_its_version() -> None:
    wrong = []
    for path in _modules():
        if path.parent == PACKAGE and path.name in ("__init__.py", "__main__.py"):
            continue
        for line, module, names in _imports(path):
            if module == "benchsage" and names and names != ["__version__"]:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports {names} from benchsage")
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            # `import benchsage` then benchsage.X: only X == __version__ (subpackages are imported by name)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "benchsage":
                if node.attr != "__version__" and any(m == "benchsage" for _, m, n in _imports(path) if not n):
                    wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} uses benchsage.{node.attr}")
    assert not wrong, wrong


def test_the_snapshot_comparison_words_are_the_noise_sources_titles() -> None:
    from benchsage.analyze.snapshots import _TRANSIENT
    from benchsage.execute.noise import SOURCES

    titles = {source.name: source.title.lower() for source in SOURCES}
    assert {name: titles.get(name) for name in _TRANSIENT} == _TRANSIENT
