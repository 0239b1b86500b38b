"""The package's import graph has no cycles, counting function-level (lazy) and ``if TYPE_CHECKING:`` imports.

A lazy or type-only import still couples the two modules both ways: neither can be understood, moved or
tested without the other. The graph is grimp's (the engine of import-linter), which records every import
statement in a module wherever it stands, and keeps TYPE_CHECKING imports unless told to drop them.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable
from pathlib import Path

import grimp
import pytest

from tests.helpers import REPO_ROOT


def extension_modules(pyproject: Path) -> set[str]:
    """The compiled submodules the project declares (pyproject's ext-modules)."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return {extension["name"] for extension in config["tool"]["setuptools"].get("ext-modules", [])}


def import_graph(package: str, extensions: Iterable[str] = ()) -> grimp.ImportGraph:
    graph = grimp.build_graph(
        package, include_external_packages=False, exclude_type_checking_imports=False, cache_dir=None
    )
    for extension in extensions:
        _point_at_extension(graph, extension)
    return graph


def _point_at_extension(graph: grimp.ImportGraph, extension: str) -> None:
    """grimp sees only .py modules, so it reads ``from pkg import _ext`` (a compiled submodule) as an import of
    ``pkg`` itself: a false cycle whenever pkg's __init__ leads back to the importer. Such an import is moved to
    the extension; one that takes anything else from pkg, or that this cannot read, stays as grimp read it."""
    package = extension.rpartition(".")[0]
    graph.add_module(extension)
    for importer in graph.find_modules_that_directly_import(package):
        details = graph.get_import_details(importer=importer, imported=package)
        if details and all(_imports_only(detail["line_contents"], extension) for detail in details):
            graph.remove_import(importer=importer, imported=package)
            graph.add_import(importer=importer, imported=extension)


def _imports_only(line: str, module: str) -> bool:
    """Is this one-line statement an absolute import of ``module`` and nothing else?"""
    try:
        (statement,) = ast.parse(line.strip()).body
    except (SyntaxError, ValueError):  # a statement spanning lines, or not one statement
        return False
    package, _, name = module.rpartition(".")
    if isinstance(statement, ast.ImportFrom):
        return statement.level == 0 and statement.module == package and all(a.name == name for a in statement.names)
    return isinstance(statement, ast.Import) and all(a.name == module for a in statement.names)


def cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """Every distinct cycle through some import A -> B: A, then grimp's shortest chain from B back to A.
    Each is rotated to start at its smallest module name, so one cycle found from several imports counts once."""
    found: set[tuple[str, ...]] = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(importer=imported, imported=importer) if imported != importer else None
            if back is not None:
                cycle = (importer, *back[:-1])
                start = cycle.index(min(cycle))
                found.add(cycle[start:] + cycle[:start])
    return sorted(found)


def _show(cycle: tuple[str, ...]) -> str:
    return " -> ".join((*cycle, cycle[0]))


def test_promptops_has_no_import_cycles() -> None:
    graph = import_graph("promptops", extension_modules(REPO_ROOT / "pyproject.toml"))
    found = [_show(cycle) for cycle in cycles(graph)]
    assert not found, "import cycles (function-level and TYPE_CHECKING imports count):\n" + "\n".join(found)


def test_lazy_and_type_checking_imports_make_cycles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself, on a package made here: a cycle through a function-level import and one through a
    TYPE_CHECKING import are found; an import of a compiled submodule is not one of its package."""
    type_checking = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
    files = {
        "__init__.py": "",
        "lazy_a.py": "def f() -> None:\n    from cyclefixture import lazy_b\n",
        "lazy_b.py": "import cyclefixture.lazy_a\n",
        "typed_a.py": type_checking + "    from cyclefixture.typed_b import B\n",
        "typed_b.py": "from cyclefixture import typed_a\nclass B: ...\n",
        "native/__init__.py": type_checking + "    from cyclefixture.native import c\n",
        "native/c.py": "try:\n    from cyclefixture.native import _ext\nexcept ImportError:\n    _ext = None\n",
    }
    for name, text in files.items():
        path = tmp_path / "cyclefixture" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(tmp_path)
    lazy = ("cyclefixture.lazy_a", "cyclefixture.lazy_b")
    typed = ("cyclefixture.typed_a", "cyclefixture.typed_b")
    assert cycles(import_graph("cyclefixture", ["cyclefixture.native._ext"])) == [lazy, typed]
    assert _show(lazy) == "cyclefixture.lazy_a -> cyclefixture.lazy_b -> cyclefixture.lazy_a"
    # Without knowing _ext is compiled, grimp's reading of it makes a cycle with the package.
    assert ("cyclefixture.native", "cyclefixture.native.c") in cycles(import_graph("cyclefixture"))
