"""The C helpers against their pure-Python twins, and the parser's paths against each other on the benchmark
corpus (clean, defect and malformed responses alike)."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from promptops import ChangedFiles, Parser, load_contract
from promptops.parsing import scan
from promptops.parsing.typed import UNSET, TypedShape
from tests.parsing.invariants import _summary

ROOT = Path(__file__).resolve().parents[2]


def _typed() -> TypedShape:
    parser = Parser(load_contract(ROOT, "review-result"))
    fast = parser._fast["1.0"]
    assert fast is not None
    return fast.typed


@pytest.mark.skipif(scan.native_placed is None, reason="the C helpers are not built")
def test_native_placed_and_marks_match_their_twins() -> None:
    native_placed, native_marks = scan.native_placed, scan.native_marks
    assert native_placed is not None and native_marks is not None
    typed = _typed()
    names = tuple(getattr(field, "__name__", field) for field in typed.place_fields)
    assert all(name is None or type(name) is str for name in names)
    rng = random.Random(3)
    files = ["a.py", "b/c.py", "d.go", "e\\f.py"]
    many = [f"x/{n}.py" for n in range(40)] + files[:2]
    variants = [
        files[:2],
        ["./a.py", "b/./c.py"],
        many,
        [_Str("a.py"), "b/c.py"],
        ["b/c.py", "a.py", "a.py"],
        ["a.py", "b/c.py", "e\\f.py"],
    ]
    for _ in range(3000):
        changed = ChangedFiles(rng.choice(variants))
        items: list[Any] = []
        for index in range(rng.choice([0, 1, 2, 3, 6, 12, 17, 20])):
            line = rng.randint(1, 9)
            item: dict[str, Any] = {
                "id": rng.choice([f"F{index}", "F0", "X"]),
                "severity": "low",
                "category": "test",
                "title": "t",
                "file": rng.choice(files if rng.random() < 0.3 else files[:2]),
                "line": line,
                "message": "m",
            }
            if rng.random() < 0.5:
                item["end_line"] = line + rng.randint(-2, 3) if line > 2 else line
            if rng.random() < 0.3:
                item["id"] = rng.choice(["", "F1"])
            items.append(msgspec.convert(item, typed.item_type) if item["id"] else item)
        structs = [item for item in items if type(item) is typed.item_type]
        expected = typed.placed(structs, changed)
        listed = typed.listed(changed)
        assert native_placed(structs, *typed.place_fields, listed, UNSET) == expected, items
        assert native_placed(structs, *names, listed, UNSET) == expected, items  # fields by name
        assert native_marks(items, typed.item_type, *typed.place_fields, listed, UNSET) == typed.marks(items, changed)


class _Str(str):
    """A str subclass among the changed files: the C lookup must fall back to the set."""


def _corpus_module() -> Any:
    spec = importlib.util.spec_from_file_location("_bench_corpus", ROOT / "benchmarks" / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_paths_agree_on_the_benchmark_corpus() -> None:
    corpus = _corpus_module()
    contract = load_contract(ROOT, "review-result")
    fast, fast_python, slow = Parser(contract), Parser(contract, speedups=False), Parser(contract, fast_path=False)
    records = corpus.build(4000, seed=11)
    assert {r.kind for r in records} == {"clean", "defect", "malformed"}
    for record in records:
        changed = ChangedFiles(record.changed_files)
        # Defects inside a wrapper too: extracted spans go through the same typed readers.
        wrapped = b"Review:\n```json\n" + record.raw + b"\n```" if record.kind == "defect" else record.raw
        for raw in {record.raw, wrapped}:
            expected = _summary(slow.parse(raw, changed))
            assert _summary(fast.parse(raw, changed)) == expected, raw
            assert _summary(fast_python.parse(raw, changed)) == expected, raw


def test_changed_files_quick_check_is_exact() -> None:
    """The join-and-search shortcut gives the same normal paths as normalizing one by one."""
    from promptops.parsing.reconcile import normalize_repo_path

    rng = random.Random(5)
    parts = ["a", "b.py", ".", "..", "", ".git", "x.", "/", "c\\d"]
    for _ in range(5000):
        paths = ["/".join(rng.choice(parts) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(0, 4))]
        changed = ChangedFiles(paths)
        expected = frozenset(p for p in map(normalize_repo_path, paths) if p is not None)
        assert changed.normal == expected, paths
        assert set(changed.listed) == expected, paths
        plain = frozenset(p for p in expected if "\\" not in p)
        assert changed.normal_plain == set(changed.listed_plain) == plain, paths


@pytest.mark.parametrize(
    ("changed", "path"),
    [
        (["a\\b.py"], "a\\b.py"),  # a changed file whose name holds a backslash (legal on POSIX)
        (["a/b.py"], "a\\b.py"),
        (["a\\b.py", "c.py"], "c.py"),
        (["a\\b.py", "a/b.py"], "a\\b.py"),
    ],
)
def test_paths_agree_on_backslashes(changed: list[str], path: str) -> None:
    """The diagnostic path turns a finding path's backslashes into '/' before reconciling it; the fast path
    must reach the same outcome, even when a changed file's name holds the very same backslash."""
    from tests.helpers import finding, response, text

    contract = load_contract(ROOT, "review-result")
    parsers = Parser(contract), Parser(contract, speedups=False), Parser(contract, fast_path=False)
    raw = text(response([finding(1, file=path), finding(2, file="c.py")]))
    changed_files = ChangedFiles(changed)
    summaries = [_summary(parser.parse(raw, changed_files)) for parser in parsers]
    assert summaries[0] == summaries[2] and summaries[1] == summaries[2]
