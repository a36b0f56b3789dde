"""The shape of the package: data flows one way, spec -> design -> execute -> store -> analyze ->
report, through rooms small enough to know.

Every import counts, those inside functions too (an import inside a function is a dependency
that only shows up at run time); only `if TYPE_CHECKING:` imports are left out. The rules:

- no import circles between files;
- each top-level room imports only the rooms its rule names (vocabulary, errors and threads are
  leaves every layer may use; stats uses nothing of ours, and the agent, which travels to every
  host on its own, nothing but the vocabulary that travels with it);
- no source file over 800 lines, no function over 100.

`KNOWN_*` below list what the package still owes these rules; each entry must still be true
(the lists only shrink), and anything new fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "benchsage"
LEAVES = {"vocabulary", "errors", "threads"}
ENTRY = None  # cli, api and the package root may import everything

# What each top-level room may import besides itself.
RULES: dict[str, set[str] | None] = {
    "vocabulary": set(),
    "errors": set(),
    "threads": set(),  # waits for threads that still hear Ctrl-C (stdlib only)
    "stats": set(),
    "agent": {"vocabulary"},  # the bundle sent to every host is the agent's folder and vocabulary.py
    "spec": LEAVES | {"parsers"},  # spec learns a parser's metrics; execute reads trials with it
    "parsers": LEAVES,
    "design": LEAVES | {"spec", "stats"},
    "store": LEAVES,
    "execute": LEAVES | {"spec", "design", "store", "agent", "stats", "parsers"},
    "analyze": LEAVES | {"store", "stats", "design"},
    "report": LEAVES | {"analyze", "store", "design", "parsers"},  # parsers: the one table of units (report/quantity.py)
    "_runtime": {"threads"},  # process settings of the command line (stdlib and threads only)
    "cli": ENTRY,
    "api": ENTRY,
    "__init__": ENTRY,
    "__main__": ENTRY,
}

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 100

# What the package still owes the rules, as "file -> module" (imports against the flow),
# a sorted tuple of files (circles), "file" (files too long) and "file:function" (functions).
KNOWN_AGAINST_FLOW: set[str] = set()
KNOWN_CIRCLES: set[tuple[str, ...]] = set()
KNOWN_LONG_FILES: set[str] = set()
KNOWN_LONG_FUNCTIONS: set[str] = set()


class Package:
    """The import graph of a package's files, read from their source."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules = {self._name(p): p for p in sorted(root.rglob("*.py"))}
        self.graph = {module: self._imports(module) for module in self.modules}

    def _name(self, path: Path) -> str:
        parts = list(path.relative_to(self.root.parent).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def rel(self, module: str) -> str:
        return str(self.modules[module].relative_to(self.root))

    def _resolve(self, name: str) -> str | None:
        """The module of ours that `name` (a module, or a module's attribute) is in."""
        parts = name.split(".")
        while parts:
            if ".".join(parts) in self.modules:
                return ".".join(parts)
            parts.pop()
        return None

    def _imports(self, module: str) -> list[tuple[int, str]]:
        """(line, module of ours) of every import in `module`, inside functions too."""
        path = self.modules[module]
        tree = ast.parse(path.read_text(), str(path))
        skipped = _type_checking_only(tree)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        top = self.root.name
        found: list[tuple[int, str | None]] = []
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                found += [(node.lineno, self._resolve(a.name)) for a in node.names if a.name.split(".")[0] == top]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] != top:
                    continue
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    found.append((node.lineno, self._resolve(full) if full in self.modules else self._resolve(source)))
        return sorted({(line, target) for line, target in found if target and target != module})

    def against_flow(self, rules: dict[str, set[str] | None]) -> set[str]:
        out = set()
        for module, edges in self.graph.items():
            allowed = rules[room(module)]
            if allowed is None:
                continue
            for _, target in edges:
                if room(target) != room(module) and room(target) not in allowed:
                    out.add(f"{self.rel(module)} -> {target}")
        return out

    def circles(self) -> set[tuple[str, ...]]:
        """The strongly connected components of more than one file (Tarjan's algorithm)."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        found: set[tuple[str, ...]] = set()

        def visit(v: str) -> None:
            index[v] = low[v] = len(index)
            stack.append(v)
            on_stack.add(v)
            for _, w in self.graph[v]:
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.add(tuple(sorted(self.rel(m) for m in component)))

        for v in self.graph:
            if v not in index:
                visit(v)
        return found

    def long_files(self) -> set[str]:
        return {self.rel(m) for m, p in self.modules.items() if len(p.read_text().splitlines()) > MAX_FILE_LINES}

    def long_functions(self) -> set[str]:
        out = set()
        for module, path in self.modules.items():
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                        out.add(f"{self.rel(module)}:{node.name}")
        return out


def _type_checking_only(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else None
            if name == "TYPE_CHECKING":
                for child in node.body:
                    skipped.update(id(n) for n in ast.walk(child))
    return skipped


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@pytest.fixture(scope="module")
def benchsage() -> Package:
    """benchsage's own graph, read when a test asks (not at collection, on every worker)."""
    return Package(PACKAGE)


def test_every_top_level_room_has_a_rule(benchsage: Package) -> None:
    assert sorted({room(m) for m in benchsage.modules} - set(RULES)) == []


@pytest.mark.parametrize(
    ("measure", "known"),
    [(lambda p: p.against_flow(RULES), KNOWN_AGAINST_FLOW), (Package.circles, KNOWN_CIRCLES),
     (Package.long_files, KNOWN_LONG_FILES), (Package.long_functions, KNOWN_LONG_FUNCTIONS)],
    ids=["imports against the flow", "import circles", "files over 800 lines", "functions over 100 lines"],
)
def test_the_package_keeps_its_shape(benchsage: Package, measure, known) -> None:
    found = measure(benchsage)
    assert sorted(found - known) == [], "new"
    assert sorted(known - found) == [], "mended: take them off the KNOWN list"


def test_the_measure_sees_imports_inside_functions_and_skips_type_checking_ones(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "low").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "low" / "__init__.py").write_text("")
    (root / "low" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import H\n"
        "def f():\n    from pkg.low.b import g\n    return g\n"
    )
    (root / "low" / "b.py").write_text("from . import a\ndef g():\n    import pkg.high\n")
    (root / "high.py").write_text("from pkg.low import a\n" + "def long():\n" + "    x = 1\n" * 101)
    package = Package(root)
    assert package.graph["pkg.low.a"] == [(5, "pkg.low.b")]  # inside a function: counted; TYPE_CHECKING: not
    assert package.graph["pkg.low.b"] == [(1, "pkg.low.a"), (3, "pkg.high")]  # relative, and a module imported
    assert package.circles() == {("high.py", "low/a.py", "low/b.py")}
    assert package.against_flow({"low": set(), "high": {"low"}, "__init__": None}) == {"low/b.py -> pkg.high"}
    assert package.long_functions() == {"high.py:long"}
