"""The package's layout: no import loop between its modules, and few modules at its top.

The graph is read from the sources with ``ast`` (every import statement, lazy ones inside
functions too), so a loop is caught even where Python would survive it at run time.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "bnnsweep"
MOST_TOP_LEVEL_MODULES = 12


def _name(path: Path, root: Path = PACKAGE) -> str:
    parts = ["bnnsweep", *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(path: Path, root: Path) -> list[str]:
    """Dotted parts of the package that ``path`` (a module or an ``__init__``) is in."""
    return (
        _name(path, root).split(".")
        if path.name == "__init__.py"
        else _name(path, root).split(".")[:-1]
    )


def module_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module name -> the modules of the package it imports (a package's ``__init__`` is the
    package's name; ``from pkg import sub`` names the submodule when it is one)."""
    files = {_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = _package(path, root)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    targets.append(sub if sub in files else module)
            for target in targets:
                while target and target not in files:  # import a.b.c of a package a.b
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


@cache
def package_graph() -> dict[str, set[str]]:
    return module_graph()


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import loop of ``graph`` as a list of modules (the first repeated at the end), or
    None when the graph is acyclic (depth-first search, white/grey/black)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_loop_between_the_package_modules():
    graph = package_graph()
    assert len(graph) > 100  # the whole package was read
    cycle = find_cycle(graph)
    assert cycle is None, "import loop: " + " -> ".join(cycle)


def test_the_loop_finder_finds_a_loop(tmp_path):
    pkg = tmp_path / "bnnsweep"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("from ..c import x\n")
    (pkg / "c.py").write_text("import bnnsweep.a\nx = 1\n")
    graph = module_graph(pkg)
    assert graph["bnnsweep.a"] == {"bnnsweep.sub.b"}
    assert graph["bnnsweep.sub.b"] == {"bnnsweep.c"}
    cycle = find_cycle(graph)
    assert cycle is not None and set(cycle) == {"bnnsweep.a", "bnnsweep.sub.b", "bnnsweep.c"}
    (pkg / "c.py").write_text("x = 1\n")
    assert find_cycle(module_graph(pkg)) is None


@pytest.mark.parametrize("package", ["cells", "runtime"])
def test_low_packages_import_nothing_above_them(package):
    """``cells`` (files and seals) and ``runtime`` (JAX and the user cache) sit below the
    science: they import nothing of the package outside themselves but ``cells``."""
    allowed = ("bnnsweep.cells", f"bnnsweep.{package}")
    graph = package_graph()
    for module, targets in graph.items():
        if module.startswith(f"bnnsweep.{package}"):
            outside = {t for t in targets if not t.startswith(allowed)}
            assert not outside, f"{module} imports {sorted(outside)}"


def test_few_modules_at_the_top_of_the_package():
    modules = [p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert len(modules) <= MOST_TOP_LEVEL_MODULES, sorted(modules)
