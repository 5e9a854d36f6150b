"""The import layers (issue 35): analysis (pure) < reports < assets < pipelines, no module importing a higher
layer, no cycle between modules, and analysis/*.py (sql, warehouse, the source registry, ...) the base of the
analysis layer, importing none of its subpackages. Every import counts, one inside a function or under
TYPE_CHECKING included: a deferred import still ties the two modules together."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

LAYERS = ("analysis", "reports", "assets", "pipelines")  # low to high


def modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the layers (a package by its __init__.py)."""
    out = {}
    for layer in LAYERS:
        for path in sorted((REPO / layer).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _known(name: str, mods: dict[str, Path]) -> str | None:
    """The module of ours ``name`` is, or is in (a name imported from a module), or None."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The modules of ours that ``name`` imports, wherever the import statement is."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(_known(a.name, mods) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name if path.name == "__init__.py" else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            out.update(f"{base}.{a.name}" if f"{base}.{a.name}" in mods else _known(base, mods) for a in node.names)
    out.discard(None)
    out.discard(name)
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports(name, path, mods) for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def test_no_module_imports_a_higher_layer():
    upward = sorted(f"{m} -> {t}" for m, targets in graph().items() for t in targets if _layer(t) > _layer(m))
    assert upward == [], "a lower layer imports a higher one (analysis < reports < assets < pipelines)"


def test_no_import_cycles():
    assert cycles(graph()) == [], "modules that import each other, directly or through others: restructure"


def test_the_analysis_base_imports_no_analysis_subpackage():
    """analysis/sql.py, warehouse.py, sources.py (the registry), ... are below every analysis subpackage."""
    mods = modules()
    base = {m for m, p in mods.items() if m.count(".") == 1 and p.parent == REPO / "analysis"}
    upward = sorted(f"{m} -> {t}" for m, targets in graph().items() if m in base
                    for t in targets if t.startswith("analysis.") and t not in base)
    assert upward == []


def test_the_walker_sees_deferred_and_relative_imports(tmp_path):
    mods = {"analysis": tmp_path, "analysis.a": tmp_path / "a.py", "analysis.b": tmp_path / "b.py",
            "analysis.c": tmp_path / "c.py"}
    mods["analysis.a"].write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from analysis.b import x\n"
                                  "def f():\n    from . import c\n    import analysis.c.d\n")
    assert imports("analysis.a", mods["analysis.a"], mods) == {"analysis.b", "analysis.c"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
