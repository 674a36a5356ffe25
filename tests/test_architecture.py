"""The package's layering: no import circles between npukit's modules and
no imports up into the deploy layer (lazy imports inside functions count)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "compiler_plugin" / "npukit"

# Packages that may use deploy/ (they sit above it).
ABOVE_DEPLOY = ("npukit.deploy", "npukit.cli", "npukit.tuning")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """npukit modules imported anywhere in ``path`` (a package import counts
    as its __init__ unless it names a submodule)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        found.update(n for n in names if n in modules)
    return found


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(files)
    return {name: _imports(path, modules) - {name} for name, path in files.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
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


def test_no_import_circles():
    assert _cycles(_graph()) == []


def test_nothing_below_deploy_imports_it():
    offenders = sorted(f"{m} -> {d}" for m, deps in _graph().items() for d in deps
                       if d.startswith("npukit.deploy") and not m.startswith(ABOVE_DEPLOY))
    assert offenders == []
