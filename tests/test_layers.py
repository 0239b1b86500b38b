"""The package's layers (docs/design.md, "Layers"), enforced on grimp's import graph.

- The foundation (``promptops.core``, and the packaged data in ``promptops.defaults``) imports nothing above it.
- Each feature imports the foundation and only the features it declares in ``FEATURES``; the declarations form
  no cycle, so neither do the features.
- ``promptops`` itself (the public API) may import the foundation and the features; ``promptops.cli`` and
  ``__main__`` sit on top, and nothing imports them.

Function-level and ``if TYPE_CHECKING:`` imports count, as in test_import_graph: they couple modules all the same.
A crossing fails naming the importing module, its line and the statement.
"""

from __future__ import annotations

import graphlib
import re
from collections.abc import Mapping, Set
from pathlib import Path

import grimp
import pytest

from tests.helpers import REPO_ROOT
from tests.test_import_graph import import_graph

FOUNDATION = frozenset({"core", "defaults"})
# Each feature -> the other features it may import. A new package or top-level module must be placed here.
FEATURES: Mapping[str, Set[str]] = {
    "changes": set(),
    "feedback": set(),
    "compat": set(),
    "parsing": set(),
    "render": set(),
    "scaffold": {"parsing", "render"},
    "lint": {"merge", "parsing", "render", "scaffold"},
    "merge": {"parsing"},
    "review_gate": {"merge", "parsing"},
    "reask": {"parsing", "render"},
    "store": {"parsing", "reask"},
    "rollout": {"compat", "store"},
    "release": {"compat", "render", "rollout"},
    "serving": {"parsing", "rollout"},
    "simulate": {"rollout"},
    "report": {"release", "rollout", "store"},
    "spark": {"rollout", "store"},
    "demo": {"compat", "lint", "release", "report", "rollout", "simulate", "store"},
}
API = ""  # the package's own __init__: the public names (promptops.Contract, ...)
TOP = frozenset({"cli", "__main__"})


def unit(package: str, module: str) -> str:
    """The layer unit a module belongs to: its top-level package or module under ``package`` ('' for the root)."""
    return module.removeprefix(package).lstrip(".").split(".", 1)[0]


def may_import(importer: str, imported: str, features: Mapping[str, Set[str]]) -> bool:
    if importer == imported or importer in TOP:
        return True
    if imported in TOP:
        return False
    if importer in FOUNDATION:
        return imported in FOUNDATION
    if importer == API:
        return imported in FOUNDATION or imported in features
    return imported in FOUNDATION or imported in features.get(importer, ())


def crossings(graph: grimp.ImportGraph, package: str, features: Mapping[str, Set[str]]) -> list[str]:
    """Every import that crosses the layers, as ``module:line imports module (statement): why``."""
    found = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            source, target = unit(package, importer), unit(package, imported)
            if may_import(source, target, features):
                continue
            allowed = sorted(FOUNDATION | set(features.get(source, ()))) if source not in FOUNDATION else FOUNDATION
            why = f"{source or package} may import only {', '.join(sorted(allowed))}"
            details = graph.get_import_details(importer=importer, imported=imported)
            lines = [(str(d["line_number"]), d["line_contents"].strip()) for d in details] or [("?", "")]
            found += [f"{importer}:{line} imports {imported} ({text}): {why}" for line, text in lines]
    return found


def undeclared(graph: grimp.ImportGraph, package: str, features: Mapping[str, Set[str]]) -> set[str]:
    units = {unit(package, module) for module in graph.modules}
    return units - FOUNDATION - TOP - set(features) - {API}


def test_layers_hold() -> None:
    graph = import_graph("promptops")
    assert not undeclared(graph, "promptops", FEATURES), "place these in tests/test_layers.py FEATURES"
    found = crossings(graph, "promptops", FEATURES)
    assert not found, "imports crossing the layers (docs/design.md, Layers):\n" + "\n".join(found)


def test_declared_features_form_no_cycle() -> None:
    assert set().union(*FEATURES.values()) <= set(FEATURES)
    graphlib.TopologicalSorter(FEATURES).prepare()  # raises CycleError naming the cycle


def drawn_features(design: str) -> dict[str, set[str]]:
    """The features docs/design.md draws under **Layers.**: ``name -> a b`` entries and the ``(core only)`` row."""
    drawing = design.split("**Layers.**", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    drawn: dict[str, set[str]] = {}
    for line in drawing.splitlines():
        for name, imports in re.findall(r"(\w+) +-> ((?:\w+ ?)+?)(?= {2,}|$)", line):
            drawn[name] = set(imports.split())
        if line.rstrip().endswith("(core only)"):
            drawn |= {name.strip(): set() for name in line.rsplit("(", 1)[0].split(",")}
    return drawn


def test_the_design_page_draws_these_layers() -> None:
    design = (REPO_ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert drawn_features(design) == {name: set(imports) for name, imports in FEATURES.items()}


def test_a_crossing_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself, on a package made here: a foundation module reaching up, a feature importing an
    undeclared feature (at function level) and anything importing the CLI are each named with their line."""
    files = {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/base.py": "from layerfixture.lint import model\n",
        "lint/__init__.py": "",
        "lint/model.py": "from layerfixture.core import base\n",
        "release/__init__.py": "",
        "release/cut.py": "def f() -> None:\n    from layerfixture.lint import model\n    import layerfixture.cli\n",
        "cli/__init__.py": "import layerfixture.release.cut\n",
    }
    for name, text in files.items():
        path = tmp_path / "layerfixture" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(tmp_path)
    graph = import_graph("layerfixture")
    found = crossings(graph, "layerfixture", {"lint": set(), "release": set()})
    assert found == [
        "layerfixture.core.base:1 imports layerfixture.lint.model (from layerfixture.lint import model): "
        "core may import only core, defaults",
        "layerfixture.release.cut:3 imports layerfixture.cli (import layerfixture.cli): "
        "release may import only core, defaults",
        "layerfixture.release.cut:2 imports layerfixture.lint.model (from layerfixture.lint import model): "
        "release may import only core, defaults",
    ]
    relaxed = crossings(graph, "layerfixture", {"lint": set(), "release": {"lint"}})
    assert [line.split(" (")[0] for line in relaxed] == [line.split(" (")[0] for line in found[:2]]
    assert undeclared(graph, "layerfixture", {"lint": set()}) == {"release"}
