"""The package's import graph has no cycles, function-local imports included (issue 41).

A cycle hidden behind an import inside a function still ties the two modules together: each
can only be read, tested or moved with the other. So every `import` and `from ... import`
anywhere in a module counts, and `from gemmpad.x import y` counts as an edge to `gemmpad.x.y`
when that is a module. The modules under `if TYPE_CHECKING:` count too: they are still a
dependency a reader follows.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "app" / "gemmpad"
NATIVE = {"_cpu", "_cuda"}  # the compiled modules: `from gemmpad import _cpu` depends on them, not on gemmpad/__init__


def module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the gemmpad modules it imports anywhere in its text."""
    modules = {module_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names if a.name not in NATIVE]
            else:
                continue
            edges.update(t for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_function_local_imports(tmp_path: Path) -> None:
    """The check itself: a cycle closed by an import inside a function is found."""
    pkg = tmp_path / "gemmpad"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from gemmpad import b\n")
    (pkg / "b.py").write_text("def f():\n    from gemmpad.a import x\n")
    assert cycles(import_graph(pkg)) == [["gemmpad.a", "gemmpad.b"]]


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles in app/gemmpad (move the shared piece down a layer):\n" + "\n".join(
        " <-> ".join(c) for c in found)
